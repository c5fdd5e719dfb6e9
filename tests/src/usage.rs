//! Synthetic workloads for the tests that need usage history (craned's recommendations, its
//! differential beside Crane, the Prometheus-compatible backends): each container's usage as
//! a function of time, the pods that ran it, the cAdvisor history that usage leaves in
//! Prometheus, and the Deployment that stands for the workload in the cluster.

use std::f64::consts::PI;
use std::sync::Arc;

use serde_json::Value;

use crate::history::{History, WEEK_MINUTES};
use crate::workload::Workload;

pub const MIB: f64 = 1024.0 * 1024.0;

/// One container's usage at each Unix minute: cores and bytes.
#[derive(Clone)]
pub struct Usage {
    cpu: Arc<dyn Fn(i64) -> f64 + Send + Sync>,
    mem: Arc<dyn Fn(i64) -> f64 + Send + Sync>,
}

impl Usage {
    pub fn new(
        cpu: impl Fn(i64) -> f64 + Send + Sync + 'static,
        mem: impl Fn(i64) -> f64 + Send + Sync + 'static,
    ) -> Usage {
        Usage {
            cpu: Arc::new(cpu),
            mem: Arc::new(mem),
        }
    }

    /// The same cores and bytes all the time.
    pub fn flat(cpu: f64, mem: f64) -> Usage {
        Usage::new(move |_| cpu, move |_| mem)
    }

    /// `high` (cores, bytes) for the last `high_every_hundred` minutes of every hundred,
    /// `low` otherwise.
    pub fn bursts(low: (f64, f64), high: (f64, f64), high_every_hundred: i64) -> Usage {
        let is_high = move |m: i64| m.rem_euclid(100) >= 100 - high_every_hundred;
        Usage::new(
            move |m| if is_high(m) { high.0 } else { low.0 },
            move |m| if is_high(m) { high.1 } else { low.1 },
        )
    }

    pub fn cpu(&self, minute: i64) -> f64 {
        (self.cpu)(minute)
    }

    pub fn mem(&self, minute: i64) -> f64 {
        (self.mem)(minute)
    }
}

/// A daily cycle in [-1, 1]: 0 at midnight UTC, 1 at six in the morning.
pub fn daily(minute: i64) -> f64 {
    (2.0 * PI * (minute.rem_euclid(1440)) as f64 / 1440.0).sin()
}

/// A container of a synthetic workload: its name, usage and requests.
#[derive(Clone)]
pub struct SyntheticContainer {
    pub name: &'static str,
    pub usage: Usage,
    pub cpu_request: &'static str,
    pub memory_request: &'static str,
}

/// A pod of a synthetic workload and when it ran: from `from` minutes before the history's
/// end up to, not including, `to` minutes before it.
#[derive(Clone)]
pub struct SyntheticPod {
    pub name: &'static str,
    pub from: i64,
    pub to: i64,
}

/// A workload whose usage history the tests write and whose recommendations they expect.
#[derive(Clone)]
pub struct SyntheticWorkload {
    pub name: &'static str,
    pub pods: Vec<SyntheticPod>,
    pub containers: Vec<SyntheticContainer>,
}

impl SyntheticWorkload {
    /// `pods`, each running for the whole week (and ten minutes) up to the history's end.
    pub fn week_long(name: &'static str, pods: &[&'static str]) -> SyntheticWorkload {
        SyntheticWorkload {
            name,
            pods: pods
                .iter()
                .map(|p| SyntheticPod {
                    name: p,
                    from: WEEK_MINUTES + 10,
                    to: 0,
                })
                .collect(),
            containers: Vec::new(),
        }
    }

    /// With one more container.
    pub fn container(
        mut self,
        name: &'static str,
        usage: Usage,
        cpu_request: &'static str,
        memory_request: &'static str,
    ) -> SyntheticWorkload {
        self.containers.push(SyntheticContainer {
            name,
            usage,
            cpu_request,
            memory_request,
        });
        self
    }

    /// Writes the cAdvisor series of every pod's containers into `history`, one sample a
    /// minute for the minutes each pod ran before `end` (exclusive), labelled `namespace`,
    /// `pod`, `container` and `extra_labels` (`job="kubelet",`, say); with `pause`, each
    /// pod's pause container (`POD`) too.
    pub fn cadvisor(
        &self,
        history: &mut History,
        namespace: &str,
        extra_labels: &str,
        end: i64,
        pause: bool,
    ) {
        let pause_container = SyntheticContainer {
            name: "POD",
            usage: Usage::flat(0.0005, 0.5 * MIB),
            cpu_request: "0",
            memory_request: "0",
        };
        let pause = pause.then_some(&pause_container);
        for pod in &self.pods {
            for c in self.containers.iter().chain(pause) {
                let labels = format!(
                    "{extra_labels}namespace=\"{namespace}\",pod=\"{}\",container=\"{}\"",
                    pod.name, c.name
                );
                let first = end - pod.from;
                let last = (end - pod.to).max(first + 1) - 1;
                let usage = &c.usage;
                history.cadvisor(
                    &labels,
                    first..=last,
                    |m| usage.cpu(m),
                    |m| usage.mem(m).round(),
                );
            }
        }
    }

    /// Its Deployment: `replicas` pods of its containers with their requests.
    pub fn deployment(&self, replicas: i32) -> Workload {
        let mut d = Workload::deployment(self.name).replicas(replicas);
        for c in &self.containers {
            d = d.container(c.name, c.cpu_request, c.memory_request);
        }
        d
    }

    /// [`SyntheticWorkload::deployment`] as JSON in `namespace`.
    pub fn deployment_json(&self, namespace: &str, replicas: i32) -> Value {
        self.deployment(replicas).json(Some(namespace))
    }
}
