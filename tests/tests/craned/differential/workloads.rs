//! The workloads the craned differential runs both cranes on: their usage shapes (the
//! harness's synthetic workloads), the cAdvisor history Prometheus holds for them, and their
//! Deployments.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ferrocrane_e2e::{
    History, MIB, SyntheticPod, SyntheticWorkload, Usage, WEEK_MINUTES, daily, patch_pod_status,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

pub const MINUTE: i64 = 60;
/// The namespace of the workloads.
pub const NS: &str = "shop";

/// A workload the differential runs both cranes on, and what is special about it.
pub struct Case {
    pub workload: SyntheticWorkload,
    /// Every series also scraped by a second job (kubelet and a standalone cAdvisor).
    pub duplicated: bool,
    /// Series in Prometheus at all.
    pub history: bool,
    /// One of its running pods reports its first container OOM-killed ten minutes ago.
    pub oom_killed: bool,
}

impl Case {
    fn plain(workload: SyntheticWorkload) -> Case {
        Case {
            workload,
            duplicated: false,
            history: true,
            oom_killed: false,
        }
    }
}

/// A week-long workload with one container `app` using `usage` (every container of the
/// differential requests 500m and 512Mi).
fn app(name: &'static str, pods: &[&'static str], usage: Usage) -> SyntheticWorkload {
    SyntheticWorkload::week_long(name, pods).container("app", usage, "500m", "512Mi")
}

pub fn workloads() -> Vec<Case> {
    vec![
        Case::plain(app(
            "flat",
            &["flat-6b7c9d5f4-a1b2c", "flat-6b7c9d5f4-d3e4f"],
            Usage::flat(0.3, 200.0 * MIB),
        )),
        Case::plain(app(
            "daily",
            &["daily-5c6d7e8f9-g5h6i", "daily-5c6d7e8f9-j7k8l"],
            Usage::new(
                |m| 0.5 + 0.4 * daily(m),
                |m| 300.0 * MIB + 100.0 * MIB * daily(m),
            ),
        )),
        Case::plain(app(
            "spiky",
            &["spiky-7d8e9f0a1-m9n0o"],
            Usage::bursts((0.1, 100.0 * MIB), (1.5, 400.0 * MIB), 2),
        )),
        Case::plain(app(
            "leak",
            &["leak-8e9f0a1b2-p1q2r"],
            Usage::new(
                |_| 0.2,
                |m| {
                    100.0 * MIB
                        + 800.0 * MIB * (m.rem_euclid(WEEK_MINUTES) as f64 / WEEK_MINUTES as f64)
                },
            ),
        )),
        Case::plain(app(
            "memory-heavy",
            &["memory-heavy-9f0a1b2c3-s3t4u"],
            Usage::flat(0.05, 3072.0 * MIB),
        )),
        Case::plain(
            app(
                "two-containers",
                &[
                    "two-containers-0a1b2c3d4-v5w6x",
                    "two-containers-0a1b2c3d4-y7z8a",
                ],
                Usage::new(|m| 0.4 + 0.1 * daily(m), |_| 256.0 * MIB),
            )
            .container("sidecar", Usage::flat(0.02, 32.0 * MIB), "500m", "512Mi"),
        ),
        // Pod names change half way through the week.
        Case::plain(SyntheticWorkload {
            pods: vec![
                SyntheticPod {
                    name: "rollout-1b2c3d4e5-b9c0d",
                    from: WEEK_MINUTES + 10,
                    to: WEEK_MINUTES / 2,
                },
                SyntheticPod {
                    name: "rollout-6f7a8b9c0-e1f2g",
                    from: WEEK_MINUTES / 2,
                    to: 0,
                },
            ],
            ..app(
                "rollout",
                &[],
                Usage::new(|m| 0.6 + 0.2 * daily(m), |_| 500.0 * MIB),
            )
        }),
        Case {
            duplicated: true,
            ..Case::plain(app(
                "duplicated",
                &["duplicated-2c3d4e5f6-h3i4j", "duplicated-2c3d4e5f6-k5l6m"],
                Usage::new(|m| 0.5 + 0.1 * daily(m), |_| 400.0 * MIB),
            ))
        },
        Case {
            history: false,
            ..Case::plain(app("no-history", &[], Usage::flat(0.0, 0.0)))
        },
        // Names that are prefixes of one another.
        Case::plain(app(
            "app",
            &["app-3d4e5f6a7-n7o8p"],
            Usage::flat(0.25, 128.0 * MIB),
        )),
        // Its OOM kill is app-gateway's, not app's, though "app" prefixes its pod names.
        Case {
            oom_killed: true,
            ..Case::plain(app(
                "app-gateway",
                &["app-gateway-4e5f6a7b8-q9r0s"],
                Usage::flat(1.25, 1024.0 * MIB),
            ))
        },
        // Usage well under its 512Mi request, but OOM-killed at the request: the memory
        // recommendation is bumped above the request.
        Case {
            oom_killed: true,
            ..Case::plain(app(
                "oom-killed",
                &["oom-killed-5f6a7b8c9-t1u2v"],
                Usage::flat(0.2, 300.0 * MIB),
            ))
        },
    ]
}

/// A workload created after the history: no series, its Deployment only.
pub fn fresh() -> SyntheticWorkload {
    app("fresh", &[], Usage::flat(0.0, 0.0))
}

/// The workloads' cAdvisor history over a week up to `end_minute`, with each pod's pause
/// container as cAdvisor reports it.
pub fn history(end_minute: i64) -> History {
    let mut history = History::new();
    for case in workloads().iter().filter(|c| c.history) {
        let jobs: &[&str] = if case.duplicated {
            &["kubelet", "cadvisor"]
        } else {
            &["kubelet"]
        };
        for job in jobs {
            let job = format!("job=\"{job}\",");
            case.workload
                .cadvisor(&mut history, NS, &job, end_minute, true);
        }
    }
    history
}

/// A Deployment of two pods on kwok's nodes (they run, as the Replicas recommender expects).
pub fn deployment(namespace: &str, w: &SyntheticWorkload, toleration: &Value) -> Value {
    w.deployment(2)
        .with_kwok_toleration(toleration.clone())
        .json(Some(namespace))
}

/// Makes the first (by name) running pod of `w` report its first container OOM-killed ten
/// minutes ago, at its memory request, as a kubelet does after restarting it. Returns the pod.
pub async fn oom_kill(pods: &Api<Pod>, w: &SyntheticWorkload) -> Result<String> {
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
