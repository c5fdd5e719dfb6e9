//! `kube_job_*`.

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec, JobStatus};

use super::util::{
    annotations_family, bool_f64, condition_status_samples, created, labels_family, owner_family,
    unix_seconds,
};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

/// Failure reasons `kube_job_status_failed` reports one sample each for.
const FAILURE_REASONS: [&str; 3] = ["BackoffLimitExceeded", "DeadlineExceeded", "Evicted"];

fn spec(j: &Job) -> Option<&JobSpec> {
    j.spec.as_ref()
}

/// Upstream's status is a value: a missing one reads as all zeros.
fn status(j: &Job) -> Option<&JobStatus> {
    j.status.as_ref()
}

fn conditions(j: &Job) -> impl Iterator<Item = &JobCondition> {
    status(j)
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
}

fn count(v: Option<i32>) -> f64 {
    f64::from(v.unwrap_or(0))
}

/// One `condition` sample per possible status, for each condition of type `kind`.
fn condition_family(j: &Job, kind: &str) -> Vec<Metric> {
    conditions(j)
        .filter(|c| c.type_ == kind)
        .flat_map(|c| condition_status_samples(&c.status))
        .collect()
}

fn status_failed(j: &Job) -> Vec<Metric> {
    let failed = count(status(j).and_then(|s| s.failed));
    if failed == 0.0 {
        return vec![bare(failed)];
    }
    let mut ms = Vec::new();
    let mut reason_known = false;
    for c in conditions(j).filter(|c| c.type_ == "Failed") {
        for reason in FAILURE_REASONS {
            let matches = c.reason.as_deref() == Some(reason);
            reason_known |= matches;
            ms.push(sample(
                &["reason"],
                vec![reason.to_string()],
                bool_f64(matches),
            ));
        }
    }
    if !reason_known {
        ms.push(sample(&["reason"], vec![String::new()], failed));
    }
    ms
}

fn optional(v: Option<f64>) -> Vec<Metric> {
    v.map(|v| vec![bare(v)]).unwrap_or_default()
}

pub fn families() -> ResourceFamilies<Job> {
    ResourceFamilies {
        resource: "jobs",
        identity_keys: &["namespace", "job_name"],
        identity: |j| {
            vec![
                j.metadata.namespace.clone().unwrap_or_default(),
                j.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_job_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |j, ctx| annotations_family(&j.metadata, ctx),
            },
            FamilySpec {
                name: "kube_job_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, ctx| labels_family(&j.metadata, ctx),
            },
            FamilySpec {
                name: "kube_job_info",
                help: "Information about job.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |_, _| vec![bare(1.0)],
            },
            FamilySpec {
                name: "kube_job_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| created(&j.metadata),
            },
            FamilySpec {
                name: "kube_job_spec_parallelism",
                help: "The maximum desired number of pods the job should run at any given time.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| optional(spec(j).and_then(|s| s.parallelism).map(f64::from)),
            },
            FamilySpec {
                name: "kube_job_spec_completions",
                help: "The desired number of successfully finished pods the job should be run with.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| optional(spec(j).and_then(|s| s.completions).map(f64::from)),
            },
            FamilySpec {
                name: "kube_job_spec_active_deadline_seconds",
                help: "The duration in seconds relative to the startTime that the job may be active before the system tries to terminate it.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| {
                    optional(
                        spec(j)
                            .and_then(|s| s.active_deadline_seconds)
                            .map(|v| v as f64),
                    )
                },
            },
            FamilySpec {
                name: "kube_job_status_succeeded",
                help: "The number of pods which reached Phase Succeeded.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| vec![bare(count(status(j).and_then(|s| s.succeeded)))],
            },
            FamilySpec {
                name: "kube_job_status_failed",
                help: "The number of pods which reached Phase Failed and the reason for failure.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| status_failed(j),
            },
            FamilySpec {
                name: "kube_job_status_active",
                help: "The number of actively running pods.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| vec![bare(count(status(j).and_then(|s| s.active)))],
            },
            FamilySpec {
                name: "kube_job_status_ready",
                help: "The number of ready pods that belong to this Job.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| vec![bare(count(status(j).and_then(|s| s.ready)))],
            },
            FamilySpec {
                name: "kube_job_complete",
                help: "The job has completed its execution.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| condition_family(j, "Complete"),
            },
            FamilySpec {
                name: "kube_job_failed",
                help: "The job has failed its execution.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| condition_family(j, "Failed"),
            },
            FamilySpec {
                name: "kube_job_status_start_time",
                help: "StartTime represents time when the job was acknowledged by the Job Manager.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| {
                    optional(
                        status(j)
                            .and_then(|s| s.start_time.as_ref())
                            .map(unix_seconds),
                    )
                },
            },
            FamilySpec {
                name: "kube_job_status_completion_time",
                help: "CompletionTime represents time when the job was completed.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| {
                    optional(
                        status(j)
                            .and_then(|s| s.completion_time.as_ref())
                            .map(unix_seconds),
                    )
                },
            },
            FamilySpec {
                name: "kube_job_status_suspended",
                help: "The number of pods which reached Phase Suspended.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| {
                    conditions(j)
                        .filter(|c| c.type_ == "Suspended")
                        .map(|c| bare(bool_f64(c.status == "True")))
                        .collect()
                },
            },
            FamilySpec {
                name: "kube_job_owner",
                help: "Information about the Job's owner.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |j, _| owner_family(&j.metadata),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn job(v: serde_json::Value) -> Job {
        serde_json::from_value(v).expect("valid job")
    }

    /// The sample lines of the default families, without headers.
    fn samples(j: &Job) -> String {
        families()
            .render_document(j, &FamilyContext::default())
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    fn running_job() -> Job {
        job(serde_json::json!({
            "metadata": {
                "name": "RunningJob1", "namespace": "ns1", "generation": 1,
                "creationTimestamp": "2017-07-14T02:40:00Z",
                "labels": { "app": "example-running-1" },
                "ownerReferences": [{ "apiVersion": "batch/v1", "kind": "CronJob", "name": "cronjob-name", "uid": "u1", "controller": true }]
            },
            "spec": { "activeDeadlineSeconds": 900, "parallelism": 1, "completions": 1, "template": {} },
            "status": { "active": 1, "failed": 0, "succeeded": 0, "startTime": "2017-05-26T12:00:07Z" }
        }))
    }

    #[test]
    fn golden_running() {
        let want = r#"# HELP kube_job_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_job_annotations gauge
# HELP kube_job_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_job_labels gauge
# HELP kube_job_info [STABLE] Information about job.
# TYPE kube_job_info gauge
kube_job_info{namespace="ns1",job_name="RunningJob1"} 1
# HELP kube_job_created [STABLE] Unix creation timestamp
# TYPE kube_job_created gauge
kube_job_created{namespace="ns1",job_name="RunningJob1"} 1.5e+09
# HELP kube_job_spec_parallelism [STABLE] The maximum desired number of pods the job should run at any given time.
# TYPE kube_job_spec_parallelism gauge
kube_job_spec_parallelism{namespace="ns1",job_name="RunningJob1"} 1
# HELP kube_job_spec_completions [STABLE] The desired number of successfully finished pods the job should be run with.
# TYPE kube_job_spec_completions gauge
kube_job_spec_completions{namespace="ns1",job_name="RunningJob1"} 1
# HELP kube_job_spec_active_deadline_seconds [STABLE] The duration in seconds relative to the startTime that the job may be active before the system tries to terminate it.
# TYPE kube_job_spec_active_deadline_seconds gauge
kube_job_spec_active_deadline_seconds{namespace="ns1",job_name="RunningJob1"} 900
# HELP kube_job_status_succeeded [STABLE] The number of pods which reached Phase Succeeded.
# TYPE kube_job_status_succeeded gauge
kube_job_status_succeeded{namespace="ns1",job_name="RunningJob1"} 0
# HELP kube_job_status_failed [STABLE] The number of pods which reached Phase Failed and the reason for failure.
# TYPE kube_job_status_failed gauge
kube_job_status_failed{namespace="ns1",job_name="RunningJob1"} 0
# HELP kube_job_status_active [STABLE] The number of actively running pods.
# TYPE kube_job_status_active gauge
kube_job_status_active{namespace="ns1",job_name="RunningJob1"} 1
# HELP kube_job_status_ready The number of ready pods that belong to this Job.
# TYPE kube_job_status_ready gauge
kube_job_status_ready{namespace="ns1",job_name="RunningJob1"} 0
# HELP kube_job_complete [STABLE] The job has completed its execution.
# TYPE kube_job_complete gauge
# HELP kube_job_failed [STABLE] The job has failed its execution.
# TYPE kube_job_failed gauge
# HELP kube_job_status_start_time [STABLE] StartTime represents time when the job was acknowledged by the Job Manager.
# TYPE kube_job_status_start_time gauge
kube_job_status_start_time{namespace="ns1",job_name="RunningJob1"} 1.495800007e+09
# HELP kube_job_status_completion_time [STABLE] CompletionTime represents time when the job was completed.
# TYPE kube_job_status_completion_time gauge
# HELP kube_job_status_suspended The number of pods which reached Phase Suspended.
# TYPE kube_job_status_suspended gauge
# HELP kube_job_owner [STABLE] Information about the Job's owner.
# TYPE kube_job_owner gauge
kube_job_owner{namespace="ns1",job_name="RunningJob1",owner_kind="CronJob",owner_name="cronjob-name",owner_is_controller="true"} 1
"#;
        assert_eq!(
            families().render_document(&running_job(), &FamilyContext::default()),
            want
        );
    }

    #[test]
    fn golden_successful() {
        let j = job(serde_json::json!({
            "metadata": { "name": "SuccessfulJob1", "namespace": "ns1" },
            "spec": { "activeDeadlineSeconds": 900, "parallelism": 1, "completions": 1, "template": {} },
            "status": {
                "succeeded": 1, "startTime": "2017-05-26T12:00:07Z", "completionTime": "2017-05-26T13:00:07Z",
                "conditions": [{ "type": "Complete", "status": "True" }]
            }
        }));
        let want = r#"kube_job_info{namespace="ns1",job_name="SuccessfulJob1"} 1
kube_job_spec_parallelism{namespace="ns1",job_name="SuccessfulJob1"} 1
kube_job_spec_completions{namespace="ns1",job_name="SuccessfulJob1"} 1
kube_job_spec_active_deadline_seconds{namespace="ns1",job_name="SuccessfulJob1"} 900
kube_job_status_succeeded{namespace="ns1",job_name="SuccessfulJob1"} 1
kube_job_status_failed{namespace="ns1",job_name="SuccessfulJob1"} 0
kube_job_status_active{namespace="ns1",job_name="SuccessfulJob1"} 0
kube_job_status_ready{namespace="ns1",job_name="SuccessfulJob1"} 0
kube_job_complete{namespace="ns1",job_name="SuccessfulJob1",condition="true"} 1
kube_job_complete{namespace="ns1",job_name="SuccessfulJob1",condition="false"} 0
kube_job_complete{namespace="ns1",job_name="SuccessfulJob1",condition="unknown"} 0
kube_job_status_start_time{namespace="ns1",job_name="SuccessfulJob1"} 1.495800007e+09
kube_job_status_completion_time{namespace="ns1",job_name="SuccessfulJob1"} 1.495803607e+09
kube_job_owner{namespace="ns1",job_name="SuccessfulJob1",owner_kind="",owner_name="",owner_is_controller=""} 1
"#;
        assert_eq!(samples(&j), want);
    }

    #[test]
    fn golden_failed_with_known_reason() {
        let j = job(serde_json::json!({
            "metadata": { "name": "FailedJob1", "namespace": "ns1" },
            "spec": { "template": {} },
            "status": {
                "failed": 1, "startTime": "2017-05-26T14:00:07Z", "completionTime": "2017-05-26T15:00:07Z",
                "conditions": [{ "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded" }]
            }
        }));
        let want = r#"kube_job_info{namespace="ns1",job_name="FailedJob1"} 1
kube_job_status_succeeded{namespace="ns1",job_name="FailedJob1"} 0
kube_job_status_failed{namespace="ns1",job_name="FailedJob1",reason="BackoffLimitExceeded"} 1
kube_job_status_failed{namespace="ns1",job_name="FailedJob1",reason="DeadlineExceeded"} 0
kube_job_status_failed{namespace="ns1",job_name="FailedJob1",reason="Evicted"} 0
kube_job_status_active{namespace="ns1",job_name="FailedJob1"} 0
kube_job_status_ready{namespace="ns1",job_name="FailedJob1"} 0
kube_job_failed{namespace="ns1",job_name="FailedJob1",condition="true"} 1
kube_job_failed{namespace="ns1",job_name="FailedJob1",condition="false"} 0
kube_job_failed{namespace="ns1",job_name="FailedJob1",condition="unknown"} 0
kube_job_status_start_time{namespace="ns1",job_name="FailedJob1"} 1.495807207e+09
kube_job_status_completion_time{namespace="ns1",job_name="FailedJob1"} 1.495810807e+09
kube_job_owner{namespace="ns1",job_name="FailedJob1",owner_kind="",owner_name="",owner_is_controller=""} 1
"#;
        assert_eq!(samples(&j), want);
    }

    #[test]
    fn golden_failed_unknown_reason_and_no_conditions() {
        let no_conditions = job(serde_json::json!({
            "metadata": { "name": "FailedJobWithNoConditions", "namespace": "ns1" },
            "spec": { "activeDeadlineSeconds": 900, "template": {} },
            "status": { "failed": 1 }
        }));
        let doc = samples(&no_conditions);
        assert!(doc.contains("kube_job_status_failed{namespace=\"ns1\",job_name=\"FailedJobWithNoConditions\",reason=\"\"} 1\n"), "{doc}");
        assert_eq!(doc.matches("kube_job_status_failed").count(), 1, "{doc}");

        let unknown = job(serde_json::json!({
            "metadata": { "name": "j", "namespace": "ns1" },
            "status": { "failed": 3, "conditions": [{ "type": "Failed", "status": "True", "reason": "PodFailurePolicy" }] }
        }));
        let want = r#"kube_job_status_failed{namespace="ns1",job_name="j",reason="BackoffLimitExceeded"} 0
kube_job_status_failed{namespace="ns1",job_name="j",reason="DeadlineExceeded"} 0
kube_job_status_failed{namespace="ns1",job_name="j",reason="Evicted"} 0
kube_job_status_failed{namespace="ns1",job_name="j",reason=""} 3
"#;
        let doc = samples(&unknown);
        let failed: String = doc
            .lines()
            .filter(|l| l.starts_with("kube_job_status_failed"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(failed, want);
    }

    #[test]
    fn golden_suspended_and_ready() {
        let j = job(serde_json::json!({
            "metadata": { "name": "SuspendedJob", "namespace": "ns1" },
            "spec": { "suspend": true, "parallelism": 1, "completions": 1, "template": {} },
            "status": { "ready": 1, "active": 2, "conditions": [{ "type": "Suspended", "status": "True" }] }
        }));
        let want = r#"kube_job_info{namespace="ns1",job_name="SuspendedJob"} 1
kube_job_spec_parallelism{namespace="ns1",job_name="SuspendedJob"} 1
kube_job_spec_completions{namespace="ns1",job_name="SuspendedJob"} 1
kube_job_status_succeeded{namespace="ns1",job_name="SuspendedJob"} 0
kube_job_status_failed{namespace="ns1",job_name="SuspendedJob"} 0
kube_job_status_active{namespace="ns1",job_name="SuspendedJob"} 2
kube_job_status_ready{namespace="ns1",job_name="SuspendedJob"} 1
kube_job_status_suspended{namespace="ns1",job_name="SuspendedJob"} 1
kube_job_owner{namespace="ns1",job_name="SuspendedJob",owner_kind="",owner_name="",owner_is_controller=""} 1
"#;
        assert_eq!(samples(&j), want);
    }

    #[test]
    fn empty_job_does_not_panic() {
        let j = job(serde_json::json!({ "metadata": {} }));
        let want = r#"kube_job_info{namespace="",job_name=""} 1
kube_job_status_succeeded{namespace="",job_name=""} 0
kube_job_status_failed{namespace="",job_name=""} 0
kube_job_status_active{namespace="",job_name=""} 0
kube_job_status_ready{namespace="",job_name=""} 0
kube_job_owner{namespace="",job_name="",owner_kind="",owner_name="",owner_is_controller=""} 1
"#;
        assert_eq!(samples(&j), want);
    }

    #[test]
    fn golden_allowlisted_labels() {
        let ctx = FamilyContext {
            labels: KeyAllowlist::All,
            annotations: KeyAllowlist::None,
        };
        let doc = families().render_document(&running_job(), &ctx);
        assert!(doc.contains("kube_job_labels{namespace=\"ns1\",job_name=\"RunningJob1\",label_app=\"example-running-1\"} 1\n"), "{doc}");
    }
}
