//! ferrocrane's craned beside Crane's own craned (github.com/gocrane/crane v0.11.0, built by
//! hack/originals.sh) on the same history and the same RecommendationRule, on a control plane
//! of the test's own where Crane's CRDs are installed as Crane's chart installs them (no
//! status subresource). Crane runs first; its Recommendations are recorded and deleted; then
//! ours runs on the very same CRDs (which it must detect and work with) and its
//! Recommendations are compared target by target: the recommendedValue (the requests or
//! replicas a user would adopt), or both failing. A difference fails the test unless
//! docs/migration-crane.md lists it (see [`DOCUMENTED`]).

use std::collections::BTreeMap;
use std::f64::consts::PI;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::{HistoryPrometheus, PrivateCluster, ServiceProcess, repo_root, wait_until};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::{Value, json};

const MINUTE: i64 = 60;
const WEEK_MINUTES: i64 = 7 * 24 * 60;
const MIB: f64 = 1024.0 * 1024.0;
const NS: &str = "shop";
/// Where the workload created moments before each run lives, under a rule of its own.
const FRESH_NS: &str = "fresh";
const MIGRATION_GUIDE: &str = "docs/migration-crane.md";

/// A difference the migration guide documents: the `target`'s `recommender` outcome may
/// differ; `doc` is a phrase of the guide's entry.
struct Documented {
    target: &'static str,
    recommender: &'static str,
    doc: &'static str,
}

const DOCUMENTED: &[Documented] = &[
    Documented {
        target: "duplicated",
        recommender: "Replicas",
        doc: "A container scraped by two jobs (the kubelet's cAdvisor and a standalone cAdvisor) counts once",
    },
    // Crane feeds its CPU series into the memory check, so memory never raises its replicas.
    Documented {
        target: "memory-heavy",
        recommender: "Replicas",
        doc: "the Replicas recommender's memory path reads memory, not CPU",
    },
    // Usage exactly at a replica boundary; Crane adds the pause containers' to it.
    Documented {
        target: "app",
        recommender: "Replicas",
        doc: "Pause containers (`container=\"POD\"`) are left out of the Replicas recommender's workload usage",
    },
    Documented {
        target: "app-gateway",
        recommender: "Replicas",
        doc: "Pause containers (`container=\"POD\"`) are left out of the Replicas recommender's workload usage",
    },
    Documented {
        target: "leak",
        recommender: "Replicas",
        doc: "the Replicas recommender's memory path reads memory, not CPU",
    },
];

/// Usage of one container at minute `m` (Unix minutes).
type Usage = fn(i64) -> f64;

struct Container {
    name: &'static str,
    cpu: Usage,
    mem: Usage,
}

struct Workload {
    name: &'static str,
    /// Pod names, each with the half-open range of minutes before the end it ran in.
    pods: Vec<(&'static str, i64, i64)>,
    containers: Vec<Container>,
    /// Every series also scraped by a second job (kubelet and a standalone cAdvisor).
    duplicated: bool,
    /// Series in Prometheus at all.
    history: bool,
}

fn daily(m: i64) -> f64 {
    (2.0 * PI * (m.rem_euclid(1440)) as f64 / 1440.0).sin()
}

fn whole_week(pods: &[&'static str]) -> Vec<(&'static str, i64, i64)> {
    pods.iter().map(|p| (*p, WEEK_MINUTES + 10, 0)).collect()
}

fn workloads() -> Vec<Workload> {
    let c = |name, cpu: Usage, mem: Usage| Container { name, cpu, mem };
    let w = |name, pods, containers| Workload {
        name,
        pods,
        containers,
        duplicated: false,
        history: true,
    };
    vec![
        w(
            "flat",
            whole_week(&["flat-6b7c9d5f4-a1b2c", "flat-6b7c9d5f4-d3e4f"]),
            vec![c("app", |_| 0.3, |_| 200.0 * MIB)],
        ),
        w(
            "daily",
            whole_week(&["daily-5c6d7e8f9-g5h6i", "daily-5c6d7e8f9-j7k8l"]),
            vec![c(
                "app",
                |m| 0.5 + 0.4 * daily(m),
                |m| 300.0 * MIB + 100.0 * MIB * daily(m),
            )],
        ),
        w(
            "spiky",
            whole_week(&["spiky-7d8e9f0a1-m9n0o"]),
            vec![c(
                "app",
                |m| if m.rem_euclid(100) >= 98 { 1.5 } else { 0.1 },
                |m| {
                    if m.rem_euclid(100) >= 98 {
                        400.0 * MIB
                    } else {
                        100.0 * MIB
                    }
                },
            )],
        ),
        w(
            "leak",
            whole_week(&["leak-8e9f0a1b2-p1q2r"]),
            vec![c(
                "app",
                |_| 0.2,
                |m| {
                    100.0 * MIB
                        + 800.0 * MIB * (m.rem_euclid(WEEK_MINUTES) as f64 / WEEK_MINUTES as f64)
                },
            )],
        ),
        w(
            "memory-heavy",
            whole_week(&["memory-heavy-9f0a1b2c3-s3t4u"]),
            vec![c("app", |_| 0.05, |_| 3072.0 * MIB)],
        ),
        w(
            "two-containers",
            whole_week(&[
                "two-containers-0a1b2c3d4-v5w6x",
                "two-containers-0a1b2c3d4-y7z8a",
            ]),
            vec![
                c("app", |m| 0.4 + 0.1 * daily(m), |_| 256.0 * MIB),
                c("sidecar", |_| 0.02, |_| 32.0 * MIB),
            ],
        ),
        // Pod names change half way through the week.
        w(
            "rollout",
            vec![
                (
                    "rollout-1b2c3d4e5-b9c0d",
                    WEEK_MINUTES + 10,
                    WEEK_MINUTES / 2,
                ),
                ("rollout-6f7a8b9c0-e1f2g", WEEK_MINUTES / 2, 0),
            ],
            vec![c("app", |m| 0.6 + 0.2 * daily(m), |_| 500.0 * MIB)],
        ),
        Workload {
            duplicated: true,
            ..w(
                "duplicated",
                whole_week(&["duplicated-2c3d4e5f6-h3i4j", "duplicated-2c3d4e5f6-k5l6m"]),
                vec![c("app", |m| 0.5 + 0.1 * daily(m), |_| 400.0 * MIB)],
            )
        },
        Workload {
            history: false,
            ..w("no-history", vec![], vec![c("app", |_| 0.0, |_| 0.0)])
        },
        // Names that are prefixes of one another.
        w(
            "app",
            whole_week(&["app-3d4e5f6a7-n7o8p"]),
            vec![c("app", |_| 0.25, |_| 128.0 * MIB)],
        ),
        w(
            "app-gateway",
            whole_week(&["app-gateway-4e5f6a7b8-q9r0s"]),
            vec![c("app", |_| 1.25, |_| 1024.0 * MIB)],
        ),
    ]
}

/// cAdvisor-style OpenMetrics with timestamps over a week up to `end_minute`.
fn history(end_minute: i64) -> String {
    let mut cpu = String::new();
    let mut mem = String::new();
    for w in workloads().iter().filter(|w| w.history) {
        let jobs: &[&str] = if w.duplicated {
            &["kubelet", "cadvisor"]
        } else {
            &["kubelet"]
        };
        // Every pod also has its pause container, as cAdvisor reports it.
        let pause = Container {
            name: "POD",
            cpu: |_| 0.0005,
            mem: |_| 0.5 * MIB,
        };
        for (pod, from, to) in &w.pods {
            for c in w.containers.iter().chain([&pause]) {
                for job in jobs {
                    let labels = format!(
                        "job=\"{job}\",namespace=\"{NS}\",pod=\"{pod}\",container=\"{}\"",
                        c.name
                    );
                    let mut counter = 0.0;
                    for m in (end_minute - from)..(end_minute - to).max(end_minute - from + 1) {
                        counter += (c.cpu)(m) * 60.0;
                        let _ = writeln!(
                            cpu,
                            "container_cpu_usage_seconds_total{{{labels}}} {counter} {}",
                            m * MINUTE
                        );
                        let _ = writeln!(
                            mem,
                            "container_memory_working_set_bytes{{{labels}}} {} {}",
                            (c.mem)(m).round(),
                            m * MINUTE
                        );
                    }
                }
            }
        }
    }
    format!(
        "# TYPE container_cpu_usage_seconds counter\n{cpu}# TYPE container_memory_working_set_bytes gauge\n{mem}# EOF\n"
    )
}

/// A Deployment of two pods on kwok's nodes (they run, as the Replicas recommender expects).
fn deployment(namespace: &str, w: &Workload, toleration: &Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": w.name, "namespace": namespace, "labels": {"app": w.name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": w.name}},
            "template": {
                "metadata": {"labels": {"app": w.name}},
                "spec": {
                    "nodeSelector": {"type": "kwok"},
                    "tolerations": [toleration],
                    "containers": w.containers.iter().map(|c| json!({
                    "name": c.name, "image": "registry.invalid/app:1",
                    "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
                })).collect::<Vec<_>>()},
            },
        },
    })
}

fn crane_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("analysis.crane.io", "v1alpha1", kind),
        plural,
    )
}

/// (target, recommender) → the recommendedValue, or `failed: <message>`.
type Outcomes = BTreeMap<(String, String), String>;

fn outcome(rec: &DynamicObject) -> Option<((String, String), String)> {
    let labels = rec.metadata.labels.as_ref()?;
    let target = labels
        .get("analysis.crane.io/recommendation-target-name")?
        .clone();
    let recommender = labels
        .get("analysis.crane.io/recommendation-rule-recommender")?
        .clone();
    // Written once the round for it ran.
    rec.data.pointer("/status/lastUpdateTime")?;
    let value = rec.data["status"]["recommendedValue"]
        .as_str()
        .unwrap_or("");
    let message = rec
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("analysis.crane.io/message"))
        .cloned()
        .unwrap_or_default();
    let out = if value.is_empty() {
        format!("failed: {message}")
    } else {
        value.to_owned()
    };
    Some(((target, recommender), out))
}

/// Runs `process` until every (workload, recommender) has an outcome; returns them.
async fn outcomes_of(
    recs: &Api<DynamicObject>,
    process: &mut ServiceProcess,
    who: &str,
    expected: usize,
) -> Result<Outcomes> {
    let found = wait_until(
        &format!("{expected} Recommendations written by {who}"),
        Duration::from_secs(180),
        || {
            let recs = recs.clone();
            let alive = process.ensure_running();
            async move {
                alive?;
                let list = recs.list(&ListParams::default()).await?;
                let outcomes: Outcomes = list.items.iter().filter_map(outcome).collect();
                Ok((outcomes.len() >= expected).then_some(outcomes))
            }
        },
    )
    .await;
    found.with_context(|| format!("log:\n{}", process.logs()))
}

async fn apply_dir(cluster: &ferrocrane_e2e::Cluster, dir: &std::path::Path) -> Result<()> {
    let out = cluster
        .kubectl()?
        .args(["apply", "--server-side", "-f"])
        .arg(dir)
        .output()?;
    if !out.status.success() {
        bail!(
            "kubectl apply {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = cluster
        .kubectl()?
        .args(["wait", "--for=condition=Established", "--timeout=60s", "-f"])
        .arg(dir)
        .output()?;
    if !out.status.success() {
        bail!(
            "CRDs not established: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

fn config_file(dir: &std::path::Path) -> Result<std::path::PathBuf> {
    let path = dir.join("recommendation-configuration.yaml");
    std::fs::copy(
        repo_root().join("config/craned/recommendation-configuration.yaml"),
        &path,
    )?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread")]
async fn craned_recommends_like_crane() -> Result<()> {
    let guide = std::fs::read_to_string(repo_root().join(MIGRATION_GUIDE))?;
    for d in DOCUMENTED {
        if !guide.contains(d.doc) {
            bail!("{MIGRATION_GUIDE} does not contain {:?}", d.doc);
        }
    }
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
    apply_dir(cluster, &crane_crds).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in [NS, FRESH_NS, "crane-system"] {
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await?;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let toleration = cluster.kwok_toleration()?;
    for w in workloads() {
        deployments
            .create(
                &PostParams::default(),
                &serde_json::from_value(deployment(NS, &w, &toleration))?,
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
    let recs_in = |ns: &str| Api::<DynamicObject>::namespaced_with(client.clone(), ns, &rec_ar);
    let recommenders = ["Resource", "Replicas"];
    let rule = json!({
        "apiVersion": "analysis.crane.io/v1alpha1",
        "kind": "RecommendationRule",
        "metadata": {"name": "shop"},
        "spec": {
            "runInterval": "24h",
            "namespaceSelector": {"matchNames": [NS]},
            "resourceSelectors": [{"kind": "Deployment", "apiVersion": "apps/v1"}],
            // Crane skips workloads created in the last 3 minutes; these were just created.
            // Replicas counts pods available for pod-min-ready-seconds (30 s by default); the
            // test waits until every pod is available instead of 30 s more.
            "recommenders": recommenders.iter().map(|r| json!({"name": r, "config": {
                "creation-cooldown": "0s", "pod-min-ready-seconds": "0",
            }})).collect::<Vec<_>>(),
        },
    });
    // A workload created moments before, under Crane's cooldown (1h here, 3m by default):
    // both skip it.
    let fresh_rule = json!({
        "apiVersion": "analysis.crane.io/v1alpha1",
        "kind": "RecommendationRule",
        "metadata": {"name": "fresh"},
        "spec": {
            "runInterval": "24h",
            "namespaceSelector": {"matchNames": [FRESH_NS]},
            "resourceSelectors": [{"kind": "Deployment", "apiVersion": "apps/v1"}],
            "recommenders": [{"name": "Resource", "config": {"creation-cooldown": "1h"}}],
        },
    });
    let fresh = Workload {
        name: "fresh",
        pods: vec![],
        containers: vec![Container {
            name: "app",
            cpu: |_| 0.0,
            mem: |_| 0.0,
        }],
        duplicated: false,
        history: false,
    };
    Api::<Deployment>::namespaced(client.clone(), FRESH_NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(deployment(FRESH_NS, &fresh, &toleration))?,
        )
        .await?;
    let expected = workloads().len() * recommenders.len() + 1;

    // Crane's craned.
    let ports: Vec<u16> = (0..4)
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
    for r in [&rule, &fresh_rule] {
        rules
            .create(&PostParams::default(), &serde_json::from_value(r.clone())?)
            .await?;
    }
    let theirs = outcomes_of(&recs, &mut crane, "Crane's craned", expected).await?;
    drop(crane);
    for name in ["shop", "fresh"] {
        rules.delete(name, &DeleteParams::default()).await?;
    }
    for ns in [NS, FRESH_NS] {
        recs_in(ns)
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await?;
    }
    wait_until(
        "Crane's Recommendations gone",
        Duration::from_secs(30),
        || {
            let recs = recs.clone();
            let rules = rules.clone();
            async move {
                let left = recs.list(&ListParams::default()).await?.items.len()
                    + rules.list(&ListParams::default()).await?.items.len();
                Ok((left == 0).then_some(()))
            }
        },
    )
    .await?;

    // Ours, on Crane's CRDs.
    let ours_args: Vec<String> = vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--prometheus-address={}", prometheus.handle.url),
        format!("--recommendation-configuration-file={}", config.display()),
        format!("--metrics-bind-address=127.0.0.1:{}", ports[0]),
        format!("--health-probe-bind-address=127.0.0.1:{}", ports[3]),
        "--leader-elect=false".into(),
        "--pod-namespace=crane-system".into(),
    ];
    let mut ours = ServiceProcess::start("craned", &ours_args)?;
    ours.wait_ready(
        &format!("http://127.0.0.1:{}/readyz", ports[3]),
        Duration::from_secs(60),
    )
    .await?;
    for r in [rule, fresh_rule] {
        rules
            .create(&PostParams::default(), &serde_json::from_value(r)?)
            .await?;
    }
    let mine = outcomes_of(&recs, &mut ours, "ferrocrane's craned", expected).await?;
    if !ours.logs().contains("declare no status subresource") {
        bail!(
            "craned did not say it found Crane's CRDs; log:\n{}",
            ours.logs()
        );
    }

    let mut undocumented = Vec::new();
    let mut documented = 0;
    let keys: std::collections::BTreeSet<_> = theirs.keys().chain(mine.keys()).cloned().collect();
    for key in &keys {
        let (a, b) = (theirs.get(key), mine.get(key));
        // Both failing is the same outcome; the messages are each project's own.
        let failed = |o: Option<&String>| o.is_some_and(|o| o.starts_with("failed: "));
        if a == b || (failed(a) && failed(b)) {
            continue;
        }
        if DOCUMENTED
            .iter()
            .any(|d| d.target == key.0 && d.recommender == key.1)
        {
            documented += 1;
            continue;
        }
        undocumented.push(format!(
            "{}/{}:\n  crane:      {}\n  ferrocrane: {}",
            key.0,
            key.1,
            a.map_or("(none)".into(), |s| s.replace('\n', "\n              ")),
            b.map_or("(none)".into(), |s| s.replace('\n', "\n              ")),
        ));
    }
    println!(
        "craned differential: {} recommendations compared, {} differing ({documented} documented)",
        keys.len(),
        undocumented.len() + documented
    );
    let _ = std::fs::remove_dir_all(&dir);
    if !undocumented.is_empty() {
        bail!(
            "{} undocumented differences from Crane v0.11.0 (fix them or list them in {MIGRATION_GUIDE}):\n\n{}",
            undocumented.len(),
            undocumented.join("\n\n")
        );
    }
    Ok(())
}
