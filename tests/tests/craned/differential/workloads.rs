//! The workloads the craned differential runs both cranes on: their usage shapes, the
//! cAdvisor history Prometheus holds for them, and their Deployments.

use std::f64::consts::PI;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ferrocrane_e2e::{History, patch_pod_status};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

pub const MINUTE: i64 = 60;
const WEEK_MINUTES: i64 = 7 * 24 * 60;
pub const MIB: f64 = 1024.0 * 1024.0;
/// The namespace of the workloads.
pub const NS: &str = "shop";
/// Usage of one container at minute `m` (Unix minutes).
pub type Usage = fn(i64) -> f64;

pub struct Container {
    pub name: &'static str,
    pub cpu: Usage,
    pub mem: Usage,
}

pub struct Workload {
    pub name: &'static str,
    /// Pod names, each with the half-open range of minutes before the end it ran in.
    pub pods: Vec<(&'static str, i64, i64)>,
    pub containers: Vec<Container>,
    /// Every series also scraped by a second job (kubelet and a standalone cAdvisor).
    pub duplicated: bool,
    /// Series in Prometheus at all.
    pub history: bool,
    /// One of its running pods reports its first container OOM-killed ten minutes ago.
    pub oom_killed: bool,
}

pub fn daily(m: i64) -> f64 {
    (2.0 * PI * (m.rem_euclid(1440)) as f64 / 1440.0).sin()
}

pub fn whole_week(pods: &[&'static str]) -> Vec<(&'static str, i64, i64)> {
    pods.iter().map(|p| (*p, WEEK_MINUTES + 10, 0)).collect()
}

pub fn workloads() -> Vec<Workload> {
    let c = |name, cpu: Usage, mem: Usage| Container { name, cpu, mem };
    let w = |name, pods, containers| Workload {
        name,
        pods,
        containers,
        duplicated: false,
        history: true,
        oom_killed: false,
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
        // Its OOM kill is app-gateway's, not app's, though "app" prefixes its pod names.
        Workload {
            oom_killed: true,
            ..w(
                "app-gateway",
                whole_week(&["app-gateway-4e5f6a7b8-q9r0s"]),
                vec![c("app", |_| 1.25, |_| 1024.0 * MIB)],
            )
        },
        // Usage well under its 512Mi request, but OOM-killed at the request: the memory
        // recommendation is bumped above the request.
        Workload {
            oom_killed: true,
            ..w(
                "oom-killed",
                whole_week(&["oom-killed-5f6a7b8c9-t1u2v"]),
                vec![c("app", |_| 0.2, |_| 300.0 * MIB)],
            )
        },
    ]
}

/// The workloads' cAdvisor history over a week up to `end_minute`.
pub fn history(end_minute: i64) -> History {
    let mut history = History::new();
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
                    let first = end_minute - from;
                    let last = (end_minute - to).max(first + 1) - 1;
                    history.cadvisor(&labels, first..=last, c.cpu, |m| (c.mem)(m).round());
                }
            }
        }
    }
    history
}

/// A Deployment of two pods on kwok's nodes (they run, as the Replicas recommender expects).
pub fn deployment(namespace: &str, w: &Workload, toleration: &Value) -> Value {
    let mut d = ferrocrane_e2e::Workload::deployment(w.name)
        .replicas(2)
        .with_kwok_toleration(toleration.clone());
    for c in &w.containers {
        d = d.container(c.name, "500m", "512Mi");
    }
    d.json(Some(namespace))
}

/// Makes the first (by name) running pod of `w` report its first container OOM-killed ten
/// minutes ago, at its memory request, as a kubelet does after restarting it. Returns the pod.
pub async fn oom_kill(pods: &Api<Pod>, w: &Workload) -> Result<String> {
    let list = pods
        .list(&ListParams::default().labels(&format!("app={}", w.name)))
        .await?;
    let pod = list
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .min()
        .with_context(|| format!("no pod of {}", w.name))?;
    let current = pods.get_status(&pod).await?;
    let mut statuses = serde_json::to_value(
        current
            .status
            .and_then(|s| s.container_statuses)
            .unwrap_or_default(),
    )?;
    let at = SystemTime::now() - Duration::from_secs(600);
    let at =
        k8s_openapi::jiff::Timestamp::from_second(at.duration_since(UNIX_EPOCH)?.as_secs() as i64)?
            .to_string();
    let killed = statuses
        .as_array_mut()
        .and_then(|s| s.iter_mut().find(|c| c["name"] == w.containers[0].name))
        .with_context(|| format!("{pod} reports no status for {}", w.containers[0].name))?;
    killed["restartCount"] = json!(1);
    killed["lastState"] = json!({"terminated": {
        "exitCode": 137, "reason": "OOMKilled", "startedAt": at, "finishedAt": at,
    }});
    patch_pod_status(pods, &pod, json!({"containerStatuses": statuses})).await?;
    Ok(pod)
}
