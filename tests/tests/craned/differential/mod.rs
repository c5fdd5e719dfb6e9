//! ferrocrane's craned beside Crane's own craned (github.com/gocrane/crane v0.11.0, built by
//! hack/originals.sh) on the same history and the same RecommendationRules, on a control plane
//! of the test's own where Crane's CRDs are installed as Crane's chart installs them (no
//! status subresource). Crane runs first; its Recommendations and OOM records are recorded
//! and deleted; then ours runs on the very same CRDs (which it must detect and work with) and
//! its Recommendations are compared target by target, every recommender: what a user would
//! adopt or act on (recommendedValue, action, description, recommendedInfo, currentInfo), or
//! both failing. A difference fails the test unless docs/migration-crane.md lists it (see
//! [`DOCUMENTED`]; judged by `ferrocrane_e2e::differential`). Last, the way back the guide
//! documents: ferrocrane's CRDs applied, then Crane's re-applied, and Crane's craned takes over the Recommendations ours wrote.

mod cluster;
mod targets;
mod workloads;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};
use cluster::*;
use ferrocrane_e2e::craned::CranedLaunch;
use ferrocrane_e2e::differential::{Documented, Verdict};
use ferrocrane_e2e::{HistoryPrometheus, PrivateCluster, ServiceProcess, repo_root, wait_until};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;
use targets::STORAGE_NS;
use workloads::{MINUTE, NS, deployment, fresh, history, oom_kill, workloads};

/// Where the workload created moments before each run lives, under a rule of its own.
const FRESH_NS: &str = "fresh";
/// Which outcome a guide entry covers: the `target`'s `recommender` outcome may differ.
struct Outcome {
    target: &'static str,
    recommender: &'static str,
}

const DOCUMENTED: &[Documented<Outcome>] = &[
    Documented {
        covers: Outcome {
            target: "duplicated",
            recommender: "Replicas",
        },
        doc: "A container scraped by two jobs (the kubelet's cAdvisor and a standalone cAdvisor) counts once",
    },
    // Crane feeds its CPU series into the memory check, so memory never raises its replicas.
    Documented {
        covers: Outcome {
            target: "memory-heavy",
            recommender: "Replicas",
        },
        doc: "the Replicas recommender's memory path reads memory, not CPU",
    },
    // Usage exactly at a replica boundary; Crane adds the pause containers' to it.
    Documented {
        covers: Outcome {
            target: "app",
            recommender: "Replicas",
        },
        doc: "Pause containers (`container=\"POD\"`) are left out of the Replicas recommender's workload usage",
    },
    Documented {
        covers: Outcome {
            target: "app-gateway",
            recommender: "Replicas",
        },
        doc: "Pause containers (`container=\"POD\"`) are left out of the Replicas recommender's workload usage",
    },
    Documented {
        covers: Outcome {
            target: "leak",
            recommender: "Replicas",
        },
        doc: "the Replicas recommender's memory path reads memory, not CPU",
    },
    Documented {
        covers: Outcome {
            target: "oom-killed",
            recommender: "Replicas",
        },
        doc: "the Replicas recommender's memory path reads memory, not CPU",
    },
    // Crane's HPA recommender fails on every target of a 1.26+ cluster; these are the ones
    // where ferrocrane's passes its checks (usage above 1 core, enough daily fluctuation).
    Documented {
        covers: Outcome {
            target: "daily",
            recommender: "HPA",
        },
        doc: "Crane v0.11 lists HorizontalPodAutoscalers as `autoscaling/v2beta2`",
    },
    Documented {
        covers: Outcome {
            target: "two-containers",
            recommender: "HPA",
        },
        doc: "Crane v0.11 lists HorizontalPodAutoscalers as `autoscaling/v2beta2`",
    },
    // app-gateway's OOM kill: Crane matches OOM records to a workload by pod-name prefix.
    Documented {
        covers: Outcome {
            target: "app",
            recommender: "Resource",
        },
        doc: "OOM records match containers exactly (`app` no longer matches `app-gateway`)",
    },
];

#[tokio::test(flavor = "multi_thread")]
async fn craned_recommends_like_crane() -> Result<()> {
    let mut verdict = Verdict::new("Crane v0.11.0", "docs/migration-crane.md", DOCUMENTED);
    verdict.check_guide()?;
    let private = PrivateCluster::start("crane-diff")?;
    let cluster = &private.cluster;
    let crane_bin = cluster.original("crane-craned")?;
    let crane_crds = crane_bin.with_file_name("crane-crds");
    if !crane_crds.is_dir() {
        bail!(
            "{} is missing: hack/originals.sh crane-craned copies Crane's CRDs there",
            crane_crds.display()
        );
    }
    let client = cluster.client().await?;
    crds(cluster, &["apply", "--server-side"], &crane_crds).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in [NS, FRESH_NS, STORAGE_NS, "crane-system"] {
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await?;
    }
    targets::create(&client).await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let toleration = cluster.kwok_toleration()?;
    for case in workloads() {
        deployments
            .create(
                &PostParams::default(),
                &serde_json::from_value(deployment(NS, &case.workload, &toleration))?,
            )
            .await?;
    }
    wait_until(
        "every workload's pods available",
        Duration::from_secs(120),
        || {
            let deployments = deployments.clone();
            async move {
                let list = deployments.list(&ListParams::default()).await?;
                Ok(list
                    .items
                    .iter()
                    .all(|d| d.status.as_ref().and_then(|s| s.available_replicas) == Some(2))
                    .then_some(()))
            }
        },
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end_minute = now / MINUTE - 1;
    let prometheus = HistoryPrometheus::start(&history(end_minute)).await?;

    let dir = std::env::temp_dir().join(format!("ferrocrane-crane-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = config_file(&dir)?;
    let kubeconfig = cluster.kubeconfig()?.display().to_string();

    let rule_ar = crane_resource("RecommendationRule", "recommendationrules");
    let rec_ar = crane_resource("Recommendation", "recommendations");
    let rules: Api<DynamicObject> = Api::all_with(client.clone(), &rule_ar);
    let recs: Api<DynamicObject> = Api::all_with(client.clone(), &rec_ar);
    let workload_recommenders = ["Resource", "Replicas", "HPA"];
    // Crane skips targets created in the last 3 minutes; these were just created.
    // Replicas counts pods available for pod-min-ready-seconds (30 s by default); the test
    // waits until every pod is available instead of 30 s more.
    let now_config = json!({"creation-cooldown": "0s", "pod-min-ready-seconds": "0"});
    let deployment_kind = [("Deployment", "apps/v1")];
    let every_namespace = json!({"any": true});
    let all_rules = [
        rule(
            "shop",
            json!({"matchNames": [NS]}),
            &deployment_kind,
            &workload_recommenders,
            now_config.clone(),
        ),
        // A workload created moments before, under Crane's cooldown (1h here, 3m by
        // default): both skip it.
        rule(
            "fresh",
            json!({"matchNames": [FRESH_NS]}),
            &deployment_kind,
            &["Resource"],
            json!({"creation-cooldown": "1h"}),
        ),
        rule(
            "nodes",
            every_namespace.clone(),
            &[("Node", "v1")],
            &["IdleNode"],
            now_config.clone(),
        ),
        rule(
            "volumes",
            every_namespace,
            &[("PersistentVolume", "v1")],
            &["Volume"],
            now_config.clone(),
        ),
        rule(
            "services",
            json!({"matchNames": [NS]}),
            &[("Service", "v1")],
            &["Service"],
            now_config,
        ),
    ];
    Api::<Deployment>::namespaced(client.clone(), FRESH_NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(deployment(FRESH_NS, &fresh(), &toleration))?,
        )
        .await?;
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .len();
    let expected = workloads().len() * workload_recommenders.len()
        + 1
        + nodes
        + targets::VOLUMES.len()
        + targets::SERVICES.len();
    let create_rules = || async {
        for r in &all_rules {
            rules
                .create(&PostParams::default(), &serde_json::from_value(r.clone())?)
                .await?;
        }
        anyhow::Ok(())
    };

    // Crane's craned.
    let ports: Vec<u16> = (0..3)
        .map(|_| ferrocrane_e2e::free_port())
        .collect::<Result<_>>()?;
    let crane_args: Vec<String> = vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--prometheus-address={}", prometheus.handle.url),
        format!("--recommendation-configuration-file={}", config.display()),
        "--leader-elect=false".into(),
        "--webhook-enabled=false".into(),
        format!("--metrics-bind-address=127.0.0.1:{}", ports[0]),
        format!("--health-probe-bind-address=127.0.0.1:{}", ports[1]),
        "--server-bind-address=127.0.0.1".into(),
        format!("--server-bind-port={}", ports[2]),
    ];
    let mut crane = ServiceProcess::start_program("crane-craned", &crane_bin, &crane_args, &[])?;
    // The recommenders read the OOM records when they run: recorded first. One kill at a
    // time: with two reported together, Crane's recorder did not hold both within a minute (its
    // ConfigMap create probably races its own informer cache).
    let mut killed = Vec::new();
    for w in workloads()
        .iter()
        .filter(|c| c.oom_killed)
        .map(|c| &c.workload)
    {
        killed.push((oom_kill(&pods, w).await?, w.containers[0].name.to_owned()));
        wait_for_oom_records(&client, &killed, &mut crane, "Crane's craned").await?;
    }
    create_rules().await?;
    let theirs = outcomes_of(&recs, &mut crane, "Crane's craned", expected).await?;
    drop(crane);
    clean(&client, &rules, &recs, &rec_ar).await?;

    // Ours, on Crane's CRDs.
    let mut ours = CranedLaunch::new(cluster, &prometheus.handle.url, &config, "crane-system")?
        .start()
        .await?;
    // Both kills are in the pods' statuses already, as after a restart.
    wait_for_oom_records(&client, &killed, &mut ours, "ferrocrane's craned").await?;
    create_rules().await?;
    let mine = outcomes_of(&recs, &mut ours, "ferrocrane's craned", expected).await?;
    if !ours.logs().contains("declare no status subresource") {
        bail!(
            "craned did not say it found Crane's CRDs; log:\n{}",
            ours.logs()
        );
    }
    drop(ours);

    let keys: std::collections::BTreeSet<_> = theirs.keys().chain(mine.keys()).cloned().collect();
    for key in &keys {
        let (a, b) = (theirs.get(key), mine.get(key));
        // Both failing is the same outcome; the messages are each project's own.
        let failed = |o: Option<&String>| o.is_some_and(|o| o.starts_with("failed: "));
        if a == b || (failed(a) && failed(b)) {
            continue;
        }
        let show = |o: Option<&String>| {
            o.map_or("(none)".into(), |s| {
                s.trim_end().replace('\n', "\n              ")
            })
        };
        verdict.differ(
            |k| k.target == key.0 && k.recommender == key.1,
            || {
                format!(
                    "{}/{}:\n  crane:      {}\n  ferrocrane: {}",
                    key.0,
                    key.1,
                    show(a),
                    show(b)
                )
            },
        );
    }
    // The HPA entries are allowed for one reason only: Crane cannot read HPAs on this cluster.
    for target in ["daily", "two-containers"] {
        let key = (target.to_owned(), "HPA".to_owned());
        let (a, b) = (theirs.get(&key), mine.get(&key));
        if !a.is_some_and(|a| a.contains("autoscaling/v2beta2"))
            || !b.is_some_and(|b| b.starts_with("recommendedValue: "))
        {
            bail!(
                "{target}/HPA: expected Crane to fail on autoscaling/v2beta2 and ferrocrane to propose; crane: {a:?}, ferrocrane: {b:?}"
            );
        }
    }
    verdict.judge(&format!("craned ({} recommendations compared)", keys.len()))?;

    // The way back, as the guide says it: a user who applied ferrocrane's CRDs re-applies
    // Crane's, and Crane's craned updates the Recommendations ferrocrane wrote.
    crds(
        cluster,
        &["apply", "--server-side"],
        &repo_root().join("deploy/crds"),
    )
    .await?;
    if !declares_status(&client).await? {
        bail!("deploy/crds did not declare the status subresource");
    }
    crds(cluster, &["replace"], &crane_crds).await?;
    if declares_status(&client).await? {
        bail!(
            "Crane's CRDs re-applied with `kubectl replace` still declare the status subresource"
        );
    }
    let uid = |r: &DynamicObject| r.metadata.uid.clone().unwrap_or_default();
    let written_by_ours: std::collections::BTreeSet<String> = recs
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(uid)
        .collect();
    // Due again within a minute rather than in 24h: Crane starts a round once the first
    // target's last start is older than runInterval.
    for r in rules.list(&ListParams::default()).await? {
        let name = r.metadata.name.clone().unwrap_or_default();
        rules
            .patch(
                &name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"runInterval": "1m"}})),
            )
            .await?;
    }
    let back = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let updated_since_back = |r: &DynamicObject| {
        r.data["status"]["lastUpdateTime"]
            .as_str()
            .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .is_some_and(|t| t.as_second() >= back - 1)
    };
    // Every Recommendation ferrocrane wrote, updated in place (Crane matches them to its
    // targets; one it did not match it would replace with a new object and delete). Crane
    // v0.11 exits two minutes after it starts on a 1.26+ cluster (its HPA informer watches
    // autoscaling/v2beta2 and never syncs); it is restarted, as its Deployment would be.
    let mut crane = ServiceProcess::start_program("crane-craned", &crane_bin, &crane_args, &[])?;
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let mut restarts = 0;
    let updated = loop {
        if crane.ensure_running().is_err() {
            restarts += 1;
            if restarts > 3 {
                bail!("Crane's craned kept exiting; log:\n{}", crane.logs());
            }
            crane = ServiceProcess::start_program("crane-craned", &crane_bin, &crane_args, &[])?;
        }
        let list = recs.list(&ListParams::default()).await?.items;
        let replaced = written_by_ours
            .iter()
            .filter(|u| !list.iter().any(|r| &uid(r) == *u))
            .count();
        if replaced > 0 {
            bail!(
                "Crane's craned replaced {replaced} of the Recommendations ferrocrane wrote instead of updating them; log:\n{}",
                crane.logs()
            );
        }
        let waiting: Vec<String> = list
            .iter()
            .filter(|r| written_by_ours.contains(&uid(r)) && !updated_since_back(r))
            .map(|r| r.metadata.name.clone().unwrap_or_default())
            .collect();
        if waiting.is_empty() {
            break list;
        }
        if std::time::Instant::now() > deadline {
            bail!(
                "Crane's craned did not update {waiting:?} (of the Recommendations ferrocrane wrote); log:\n{}",
                crane.logs()
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    if updated.len() != written_by_ours.len() {
        bail!(
            "Crane's craned made {} Recommendations beside the {} ferrocrane wrote",
            updated.len() - written_by_ours.len(),
            written_by_ours.len()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
