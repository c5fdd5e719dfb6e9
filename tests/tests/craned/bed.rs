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
    two_ports, wait_until,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

pub struct Bed {
    pub cluster: &'static Cluster,
    pub client: kube::Client,
    pub ns: TestNamespace,
    /// The history's last minute (Unix minutes).
    pub end_minute: i64,
    pub proxy: FaultProxy,
    pub config_path: PathBuf,
    /// craned's flags; [`Bed::replica_args`] gives another replica's.
    pub args: Vec<String>,
    pub craned: ServiceProcess,
    pub metrics_addr: String,
    pub readyz: String,
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
        let (metrics_port, health_port) = two_ports()?;
        let metrics_addr = format!("127.0.0.1:{metrics_port}");
        // craned reads Prometheus through a fault proxy, so a scenario can fail it.
        let proxy = FaultProxy::start(&prometheus.handle.url).await?;
        let args = craned_args(
            cluster,
            &proxy.url(),
            &config_path,
            &metrics_addr,
            health_port,
            &ns.name,
        )?;
        let readyz = format!("http://127.0.0.1:{health_port}/readyz");
        let mut craned = ServiceProcess::start("craned", &args)?;
        craned.wait_ready(&readyz, Duration::from_secs(60)).await?;
        let rule_name = format!("e2e-{}", ns.name);
        let rule = create_rule(cluster, &client, &rule_name, resource_rule_spec(&ns.name)).await?;
        let recs = recommendation_api(&client, &ns.name);
        Ok(Bed {
            cluster,
            rules: rule_api(&client),
            client,
            ns,
            end_minute,
            proxy,
            config_path,
            args,
            craned,
            metrics_addr,
            readyz,
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
        let mut craned = ServiceProcess::start("craned", &self.args)?;
        craned
            .wait_ready(&self.readyz, Duration::from_secs(60))
            .await?;
        self.craned = craned;
        Ok(())
    }

    /// The targets web's `app` container gets with `margin`.
    pub fn web_app_targets(&self, margin: f64) -> (i64, i64) {
        expected(&workloads()[0].containers[0].1, self.end_minute, margin)
    }

    /// Another replica's flags: the same but its own metrics and health ports; and the
    /// metrics address and health port.
    pub fn replica_args(&self) -> Result<(Vec<String>, String, u16)> {
        let (metrics, health) = two_ports()?;
        let metrics_addr = format!("127.0.0.1:{metrics}");
        let args = craned_args(
            self.cluster,
            &self.proxy.url(),
            &self.config_path,
            &metrics_addr,
            health,
            &self.ns.name,
        )?;
        Ok((args, metrics_addr, health))
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
