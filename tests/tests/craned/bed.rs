//! What each Resource-recommendation scenario starts from, in a namespace of its own: the
//! synthetic workloads, their week of cAdvisor-style history in a Prometheus craned reads
//! through a fault proxy, craned running (leader of its namespace's Lease) and a daily
//! Resource rule over the namespace. Scenarios re-run the rule on demand (`run-once`).

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{
    Cluster, FaultProxy, HistoryPrometheus, ServiceProcess, TestNamespace, install_craned_crds,
    wait_until,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

pub struct Bed {
    pub client: kube::Client,
    pub ns: TestNamespace,
    /// The history's last minute (Unix minutes).
    pub end_minute: i64,
    pub proxy: FaultProxy,
    pub config_path: PathBuf,
    /// How craned was started; [`CranedLaunch::replica`] gives another replica.
    pub launch: CranedLaunch,
    pub craned: ServiceProcess,
    pub metrics_addr: String,
    pub rule_name: String,
    pub rules: Api<DynamicObject>,
    pub recs: Api<DynamicObject>,
    _rule: RuleGuard,
    _prometheus: HistoryPrometheus,
}

impl Bed {
    /// Everything above, with the Resource recommender's `margin`, craned ready.
    pub async fn start(prefix: &str, margin: &str) -> Result<Bed> {
        let cluster = Cluster::get()?;
        let client = cluster.client().await?;
        install_craned_crds(cluster, &client).await?;
        let ns = cluster.namespace(prefix).await?;
        // History ends a minute ago, so "now - 7 days" in craned's query lies inside it.
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
        let end_minute = now / MINUTE - 1;
        let prometheus = HistoryPrometheus::start(&history(&ns.name, end_minute)).await?;
        create_workloads(&client, &ns.name).await?;
        let config_path = write_config_file(margin)?;
        // craned reads Prometheus through a fault proxy, so a scenario can fail it.
        let proxy = FaultProxy::start(&prometheus.handle.url).await?;
        let launch =
            CranedLaunch::new(cluster, &proxy.url(), &config_path, &ns.name)?.leader_elect();
        let metrics_addr = launch.metrics_addr();
        let craned = launch.start().await?;
        let rule_name = format!("e2e-{}", ns.name);
        let rule = create_rule(cluster, &client, &rule_name, resource_rule_spec(&ns.name)).await?;
        let recs = recommendation_api(&client, &ns.name);
        Ok(Bed {
            rules: rule_api(&client),
            client,
            ns,
            end_minute,
            proxy,
            config_path,
            launch,
            craned,
            metrics_addr,
            rule_name,
            recs,
            _rule: rule,
            _prometheus: prometheus,
        })
    }

    /// Stops craned (SIGTERM: it releases its Lease) and starts it again with the same flags.
    pub async fn restart_craned(&mut self) -> Result<()> {
        self.craned.signal("TERM")?;
        self.craned.wait_exit(Duration::from_secs(30)).await?;
        self.craned = self.launch.start().await?;
        Ok(())
    }

    /// The targets web's `app` container gets with `margin`.
    pub fn web_app_targets(&self, margin: f64) -> (i64, i64) {
        expected(&workloads()[0].containers[0].usage, self.end_minute, margin)
    }

    /// Asks for a round now (the `run-once` annotation, with `value`).
    pub async fn trigger(&self, value: &str) -> Result<()> {
        let patch = json!({"metadata": {"annotations": {"analysis.crane.io/run-once": value}}});
        self.rules
            .patch(
                &self.rule_name,
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await?;
        Ok(())
    }

    /// The rule's last finished round.
    pub async fn run_number(&self) -> Result<i64> {
        let rule = self.rules.get(&self.rule_name).await?;
        Ok(rule.data["status"]["runNumber"].as_i64().unwrap_or(0))
    }

    /// Re-runs the rule and waits for a round newer than the last finished one.
    pub async fn next_round(&self, value: &str, what: &str) -> Result<()> {
        let before = self.run_number().await?;
        self.trigger(value).await?;
        wait_until(what, Duration::from_secs(60), || async move {
            Ok((self.run_number().await? > before).then_some(()))
        })
        .await
    }

    /// Waits until web's Ready Recommendation gives `app` exactly `targets`.
    pub async fn wait_web_app(&self, what: &str, targets: (i64, i64)) -> Result<()> {
        wait_until(what, Duration::from_secs(60), || async move {
            let Some(rec) = ready_recommendation(&self.recs, "web").await? else {
                return Ok(None);
            };
            Ok((targets_of(&rec)?.get("app") == Some(&targets)).then_some(()))
        })
        .await
    }
}
