//! `kube_cronjob_*`.
//!
//! `kube_cronjob_next_schedule_time` and `kube_cronjob_schedule_invalid` need
//! upstream's cron parser; the private [`schedule`] module reproduces it. Differences
//! from upstream, both deliberate: a CronJob without `spec.timeZone` is scheduled
//! in UTC (Go's `time.Local`, which is UTC in kube-state-metrics' image), and named
//! zones are read from the system zoneinfo directories only (Go would fall back
//! to the tz database embedded in its binary).

mod schedule;

use ferrocrane_core::exposition::Metric;
use ferrocrane_core::exposition::MetricType::Gauge;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus};

use super::util::{
    annotations_family, bool_f64, created, labels_family, non_zero_seconds, resource_version,
    unix_seconds,
};
use super::{FamilySpec, ResourceFamilies, Stability::*, bare, sample};

fn status(c: &CronJob) -> Option<&CronJobStatus> {
    c.status.as_ref()
}

fn optional(v: Option<f64>) -> Vec<Metric> {
    v.map(|v| vec![bare(v)]).unwrap_or_default()
}

fn suspended(c: &CronJob) -> bool {
    c.spec.suspend == Some(true)
}

/// `getNextScheduledTime`: the next run after the last schedule time, or after
/// creation when the CronJob never ran.
fn next_schedule_time(c: &CronJob) -> Vec<Metric> {
    let Ok(schedule) = schedule::parse_schedule(&c.spec.schedule, c.spec.time_zone.as_deref())
    else {
        return Vec::new();
    };
    let from = non_zero_seconds(status(c).and_then(|s| s.last_schedule_time.as_ref()))
        .or_else(|| non_zero_seconds(c.metadata.creation_timestamp.as_ref()));
    match from {
        Some(t) if !suspended(c) => vec![bare(schedule.next(t) as f64)],
        _ => Vec::new(),
    }
}

pub fn families() -> ResourceFamilies<CronJob> {
    ResourceFamilies {
        resource: "cronjobs",
        identity_keys: &["namespace", "cronjob"],
        identity: |c| {
            vec![
                c.metadata.namespace.clone().unwrap_or_default(),
                c.metadata.name.clone().unwrap_or_default(),
            ]
        },
        families: vec![
            FamilySpec {
                name: "kube_cronjob_annotations",
                help: "Kubernetes annotations converted to Prometheus labels.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| annotations_family(&c.metadata, ctx),
            },
            FamilySpec {
                name: "kube_cronjob_labels",
                help: "Kubernetes labels converted to Prometheus labels.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, ctx| labels_family(&c.metadata, ctx),
            },
            FamilySpec {
                name: "kube_cronjob_info",
                help: "Info about cronjob.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| {
                    vec![sample(
                        &["schedule", "concurrency_policy", "timezone"],
                        vec![
                            c.spec.schedule.clone(),
                            c.spec.concurrency_policy.clone().unwrap_or_default(),
                            c.spec
                                .time_zone
                                .clone()
                                .unwrap_or_else(|| "local".to_string()),
                        ],
                        1.0,
                    )]
                },
            },
            FamilySpec {
                name: "kube_cronjob_created",
                help: "Unix creation timestamp",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| created(&c.metadata),
            },
            FamilySpec {
                name: "kube_cronjob_status_active",
                help: "Active holds pointers to currently running jobs.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| {
                    vec![bare(
                        status(c)
                            .and_then(|s| s.active.as_ref())
                            .map_or(0, Vec::len) as f64,
                    )]
                },
            },
            FamilySpec {
                name: "kube_cronjob_status_last_schedule_time",
                help: "LastScheduleTime keeps information of when was the last time the job was successfully scheduled.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| {
                    optional(
                        status(c)
                            .and_then(|s| s.last_schedule_time.as_ref())
                            .map(unix_seconds),
                    )
                },
            },
            FamilySpec {
                name: "kube_cronjob_status_last_successful_time",
                help: "LastSuccessfulTime keeps information of when was the last time the job was completed successfully.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| {
                    optional(
                        status(c)
                            .and_then(|s| s.last_successful_time.as_ref())
                            .map(unix_seconds),
                    )
                },
            },
            FamilySpec {
                name: "kube_cronjob_spec_suspend",
                help: "Suspend flag tells the controller to suspend subsequent executions.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| vec![bare(bool_f64(suspended(c)))],
            },
            FamilySpec {
                name: "kube_cronjob_spec_starting_deadline_seconds",
                help: "Deadline in seconds for starting the job if it misses scheduled time for any reason.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| optional(c.spec.starting_deadline_seconds.map(|v| v as f64)),
            },
            FamilySpec {
                name: "kube_cronjob_next_schedule_time",
                help: "Next time the cronjob should be scheduled. The time after lastScheduleTime, or after the cron job's creation time if it's never been scheduled. Use this to determine if the job is delayed.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| next_schedule_time(c),
            },
            FamilySpec {
                name: "kube_cronjob_schedule_invalid",
                help: "Emitted with value 1 for cronjobs whose schedule, in its configured timezone, cannot be parsed.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| match schedule::parse_schedule(
                    &c.spec.schedule,
                    c.spec.time_zone.as_deref(),
                ) {
                    Ok(_) => Vec::new(),
                    Err(()) => vec![bare(1.0)],
                },
            },
            FamilySpec {
                name: "kube_cronjob_metadata_resource_version",
                help: "Resource version representing a specific version of the cronjob.",
                kind: Gauge,
                stability: Stable,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| resource_version(&c.metadata),
            },
            FamilySpec {
                name: "kube_cronjob_spec_successful_job_history_limit",
                help: "Successful job history limit tells the controller how many completed jobs should be preserved.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| optional(c.spec.successful_jobs_history_limit.map(f64::from)),
            },
            FamilySpec {
                name: "kube_cronjob_spec_failed_job_history_limit",
                help: "Failed job history limit tells the controller how many failed jobs should be preserved.",
                kind: Gauge,
                stability: Alpha,
                deprecated_since: None,
                opt_in: false,
                generate: |c, _| optional(c.spec.failed_jobs_history_limit.map(f64::from)),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, KeyAllowlist};

    fn cronjob(v: serde_json::Value) -> CronJob {
        serde_json::from_value(v).expect("valid cronjob")
    }

    fn samples(c: &CronJob) -> String {
        families()
            .render_document(c, &FamilyContext::default())
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    fn active_running(time_zone: Option<&str>) -> CronJob {
        let mut spec = serde_json::json!({
            "startingDeadlineSeconds": 300, "concurrencyPolicy": "Forbid", "suspend": false,
            "schedule": "0 */6 * * *", "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
            "jobTemplate": {}
        });
        if let Some(tz) = time_zone {
            spec["timeZone"] = tz.into();
        }
        cronjob(serde_json::json!({
            "metadata": {
                "name": "ActiveRunningCronJob1", "namespace": "ns1", "resourceVersion": "11111",
                "labels": { "app": "example-active-running-1" },
                "annotations": { "app": "mysql-server", "app.k8s.io/owner": "@foo" }
            },
            "spec": spec,
            "status": { "active": [{ "name": "FakeJob1" }, { "name": "FakeJob2" }], "lastScheduleTime": "2018-03-11T04:34:56Z" }
        }))
    }

    #[test]
    fn golden_active_running() {
        let want = r#"# HELP kube_cronjob_annotations Kubernetes annotations converted to Prometheus labels.
# TYPE kube_cronjob_annotations gauge
kube_cronjob_annotations{namespace="ns1",cronjob="ActiveRunningCronJob1",annotation_app_k8s_io_owner="@foo"} 1
# HELP kube_cronjob_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_cronjob_labels gauge
# HELP kube_cronjob_info [STABLE] Info about cronjob.
# TYPE kube_cronjob_info gauge
kube_cronjob_info{namespace="ns1",cronjob="ActiveRunningCronJob1",schedule="0 */6 * * *",concurrency_policy="Forbid",timezone="local"} 1
# HELP kube_cronjob_created [STABLE] Unix creation timestamp
# TYPE kube_cronjob_created gauge
# HELP kube_cronjob_status_active [STABLE] Active holds pointers to currently running jobs.
# TYPE kube_cronjob_status_active gauge
kube_cronjob_status_active{namespace="ns1",cronjob="ActiveRunningCronJob1"} 2
# HELP kube_cronjob_status_last_schedule_time [STABLE] LastScheduleTime keeps information of when was the last time the job was successfully scheduled.
# TYPE kube_cronjob_status_last_schedule_time gauge
kube_cronjob_status_last_schedule_time{namespace="ns1",cronjob="ActiveRunningCronJob1"} 1.520742896e+09
# HELP kube_cronjob_status_last_successful_time [STABLE] LastSuccessfulTime keeps information of when was the last time the job was completed successfully.
# TYPE kube_cronjob_status_last_successful_time gauge
# HELP kube_cronjob_spec_suspend [STABLE] Suspend flag tells the controller to suspend subsequent executions.
# TYPE kube_cronjob_spec_suspend gauge
kube_cronjob_spec_suspend{namespace="ns1",cronjob="ActiveRunningCronJob1"} 0
# HELP kube_cronjob_spec_starting_deadline_seconds [STABLE] Deadline in seconds for starting the job if it misses scheduled time for any reason.
# TYPE kube_cronjob_spec_starting_deadline_seconds gauge
kube_cronjob_spec_starting_deadline_seconds{namespace="ns1",cronjob="ActiveRunningCronJob1"} 300
# HELP kube_cronjob_next_schedule_time [STABLE] Next time the cronjob should be scheduled. The time after lastScheduleTime, or after the cron job's creation time if it's never been scheduled. Use this to determine if the job is delayed.
# TYPE kube_cronjob_next_schedule_time gauge
kube_cronjob_next_schedule_time{namespace="ns1",cronjob="ActiveRunningCronJob1"} 1.520748e+09
# HELP kube_cronjob_schedule_invalid Emitted with value 1 for cronjobs whose schedule, in its configured timezone, cannot be parsed.
# TYPE kube_cronjob_schedule_invalid gauge
# HELP kube_cronjob_metadata_resource_version [STABLE] Resource version representing a specific version of the cronjob.
# TYPE kube_cronjob_metadata_resource_version gauge
kube_cronjob_metadata_resource_version{namespace="ns1",cronjob="ActiveRunningCronJob1"} 11111
# HELP kube_cronjob_spec_successful_job_history_limit Successful job history limit tells the controller how many completed jobs should be preserved.
# TYPE kube_cronjob_spec_successful_job_history_limit gauge
kube_cronjob_spec_successful_job_history_limit{namespace="ns1",cronjob="ActiveRunningCronJob1"} 3
# HELP kube_cronjob_spec_failed_job_history_limit Failed job history limit tells the controller how many failed jobs should be preserved.
# TYPE kube_cronjob_spec_failed_job_history_limit gauge
kube_cronjob_spec_failed_job_history_limit{namespace="ns1",cronjob="ActiveRunningCronJob1"} 1
"#;
        let ctx = FamilyContext {
            labels: KeyAllowlist::None,
            annotations: KeyAllowlist::Keys(vec!["app.k8s.io/owner".into()]),
        };
        assert_eq!(
            families().render_document(&active_running(None), &ctx),
            want
        );
    }

    #[test]
    fn golden_time_zone() {
        // Needs the system zoneinfo, as upstream's test needs Go's.
        assert!(
            schedule::parse_schedule("0 * * * *", Some("Asia/Shanghai")).is_ok(),
            "zoneinfo for Asia/Shanghai missing: install Debian's tzdata (hack/setup.sh does)"
        );
        let doc = samples(&active_running(Some("Asia/Shanghai")));
        assert!(doc.contains("kube_cronjob_info{namespace=\"ns1\",cronjob=\"ActiveRunningCronJob1\",schedule=\"0 */6 * * *\",concurrency_policy=\"Forbid\",timezone=\"Asia/Shanghai\"} 1\n"), "{doc}");
        // 12:34:56 in Shanghai, next at 18:00 Shanghai time.
        assert!(doc.contains("kube_cronjob_next_schedule_time{namespace=\"ns1\",cronjob=\"ActiveRunningCronJob1\"} 1.5207624e+09\n"), "{doc}");
    }

    #[test]
    fn golden_suspended() {
        let c = cronjob(serde_json::json!({
            "metadata": { "name": "SuspendedCronJob1", "namespace": "ns1", "resourceVersion": "22222" },
            "spec": {
                "startingDeadlineSeconds": 300, "concurrencyPolicy": "Forbid", "suspend": true,
                "schedule": "0 */3 * * *", "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1, "jobTemplate": {}
            },
            "status": { "active": [], "lastScheduleTime": "2018-03-11T10:04:56Z", "lastSuccessfulTime": "2018-03-11T10:04:56Z" }
        }));
        let want = r#"kube_cronjob_info{namespace="ns1",cronjob="SuspendedCronJob1",schedule="0 */3 * * *",concurrency_policy="Forbid",timezone="local"} 1
kube_cronjob_status_active{namespace="ns1",cronjob="SuspendedCronJob1"} 0
kube_cronjob_status_last_schedule_time{namespace="ns1",cronjob="SuspendedCronJob1"} 1.520762696e+09
kube_cronjob_status_last_successful_time{namespace="ns1",cronjob="SuspendedCronJob1"} 1.520762696e+09
kube_cronjob_spec_suspend{namespace="ns1",cronjob="SuspendedCronJob1"} 1
kube_cronjob_spec_starting_deadline_seconds{namespace="ns1",cronjob="SuspendedCronJob1"} 300
kube_cronjob_metadata_resource_version{namespace="ns1",cronjob="SuspendedCronJob1"} 22222
kube_cronjob_spec_successful_job_history_limit{namespace="ns1",cronjob="SuspendedCronJob1"} 3
kube_cronjob_spec_failed_job_history_limit{namespace="ns1",cronjob="SuspendedCronJob1"} 1
"#;
        assert_eq!(samples(&c), want);
    }

    #[test]
    fn golden_never_scheduled_uses_creation_time() {
        let c = cronjob(serde_json::json!({
            "metadata": { "name": "ActiveCronJob1NoLastScheduled", "namespace": "ns1", "creationTimestamp": "2018-03-11T11:04:56Z" },
            "spec": { "schedule": "25 * * * *", "jobTemplate": {} }
        }));
        let want = r#"kube_cronjob_info{namespace="ns1",cronjob="ActiveCronJob1NoLastScheduled",schedule="25 * * * *",concurrency_policy="",timezone="local"} 1
kube_cronjob_created{namespace="ns1",cronjob="ActiveCronJob1NoLastScheduled"} 1.520766296e+09
kube_cronjob_status_active{namespace="ns1",cronjob="ActiveCronJob1NoLastScheduled"} 0
kube_cronjob_spec_suspend{namespace="ns1",cronjob="ActiveCronJob1NoLastScheduled"} 0
kube_cronjob_next_schedule_time{namespace="ns1",cronjob="ActiveCronJob1NoLastScheduled"} 1.5207675e+09
"#;
        assert_eq!(samples(&c), want);
    }

    #[test]
    fn golden_invalid_schedule() {
        let c = cronjob(serde_json::json!({
            "metadata": { "name": "bad", "namespace": "ns1", "creationTimestamp": "2018-03-11T11:04:56Z" },
            "spec": { "schedule": "61 * * * *", "jobTemplate": {} }
        }));
        let doc = samples(&c);
        assert!(
            doc.contains("kube_cronjob_schedule_invalid{namespace=\"ns1\",cronjob=\"bad\"} 1\n"),
            "{doc}"
        );
        assert!(!doc.contains("kube_cronjob_next_schedule_time"), "{doc}");

        let unknown_zone = cronjob(serde_json::json!({
            "metadata": { "name": "tz", "namespace": "ns1", "creationTimestamp": "2018-03-11T11:04:56Z" },
            "spec": { "schedule": "0 * * * *", "timeZone": "Mars/Olympus_Mons", "jobTemplate": {} }
        }));
        assert!(
            samples(&unknown_zone)
                .contains("kube_cronjob_schedule_invalid{namespace=\"ns1\",cronjob=\"tz\"} 1\n")
        );
    }

    #[test]
    fn never_firing_schedule_reports_go_zero_time() {
        let c = cronjob(serde_json::json!({
            "metadata": { "name": "feb30", "namespace": "ns1", "creationTimestamp": "2018-03-11T11:04:56Z" },
            "spec": { "schedule": "0 0 30 2 *", "jobTemplate": {} }
        }));
        assert!(samples(&c).contains(
            "kube_cronjob_next_schedule_time{namespace=\"ns1\",cronjob=\"feb30\"} -6.21355968e+10\n"
        ));
    }
}
