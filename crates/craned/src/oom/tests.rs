use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::json;

use super::*;

fn rec(ns: &str, pod: &str, container: &str, memory: &str, oom_at: i64) -> Record {
    Record {
        namespace: ns.into(),
        pod: pod.into(),
        container: container.into(),
        memory: memory.into(),
        memory_bytes: ferrocrane_core::quantity::Quantity::parse(memory)
            .unwrap()
            .value(),
        oom_at,
        workload: None,
    }
}

fn deployment(name: &str) -> WorkloadRef {
    WorkloadRef {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: name.into(),
    }
}

fn owner(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller: Some(controller),
        block_owner_deletion: None,
    }
}

// 2024-05-01T10:00:00Z
const T0: i64 = 1_714_557_600;

#[test]
fn time_format_is_gos_rfc3339() {
    assert_eq!(format_time(T0), "2024-05-01T10:00:00Z");
    assert_eq!(parse_time("2024-05-01T10:00:00Z"), Some(T0));
    // Go writes the zone the time was in and nanoseconds when present.
    assert_eq!(parse_time("2024-05-01T12:00:00.123456789+02:00"), Some(T0));
    assert_eq!(parse_time("0001-01-01T00:00:00Z"), Some(-62_135_596_800));
    assert_eq!(parse_time("yesterday"), None);
}

#[test]
fn decodes_what_crane_writes() {
    // Crane's json.Marshal of []OOMRecord: no tags, so Go's field names; Quantity as a string.
    let text = r#"[{"Namespace":"shop","Pod":"web-7d4b9c-x2x5q","Container":"app","Memory":"512Mi","OOMAt":"2024-05-01T10:00:00Z"},
                  {"Pod":"old-crane","Container":"c","Memory":"1G","OOMAt":"2024-05-01T10:00:00.5+00:00"}]"#;
    let (records, bad) = decode(text).unwrap();
    assert!(bad.is_empty());
    assert_eq!(
        records,
        vec![
            rec("shop", "web-7d4b9c-x2x5q", "app", "512Mi", T0),
            // Crane before namespaces were recorded.
            rec("", "old-crane", "c", "1G", T0),
        ]
    );
    assert_eq!(records[0].memory_bytes, 512 << 20);
    assert_eq!(records[1].memory_bytes, 1_000_000_000);
}

#[test]
fn encode_round_trips_in_cranes_shape() {
    let mut r = rec("shop", "web-1", "app", "512Mi", T0);
    r.workload = Some(deployment("web"));
    let plain = rec("shop", "bare", "app", "1Gi", T0 + 60);
    let text = encode(&[r.clone(), plain.clone()]);
    assert_eq!(
        text,
        r#"[{"Namespace":"shop","Pod":"web-1","Container":"app","Memory":"512Mi","OOMAt":"2024-05-01T10:00:00Z","Workload":{"APIVersion":"apps/v1","Kind":"Deployment","Name":"web"}},{"Namespace":"shop","Pod":"bare","Container":"app","Memory":"1Gi","OOMAt":"2024-05-01T10:01:00Z"}]"#
    );
    assert_eq!(decode(&text).unwrap().0, vec![r, plain]);
    assert_eq!(encode(&[]), "[]");
}

#[test]
fn bad_entries_are_skipped_and_named() {
    let text = r#"[{"Namespace":"a","Pod":"p","Container":"c","Memory":"lots","OOMAt":"2024-05-01T10:00:00Z"},
                  {"Namespace":"a","Pod":"p","Container":"c","Memory":"1Gi","OOMAt":"noon"},
                  {"Namespace":"a","Pod":"","Container":"c","Memory":"1Gi","OOMAt":"2024-05-01T10:00:00Z"},
                  {"Namespace":"a","Pod":"p","Container":"c","Memory":1073741824,"OOMAt":"2024-05-01T10:00:00Z"},
                  "nonsense"]"#;
    let (records, bad) = decode(text).unwrap();
    assert_eq!(records, vec![rec("a", "p", "c", "1073741824", T0)]);
    let msgs: Vec<String> = bad.iter().map(|e| e.to_string()).collect();
    assert_eq!(msgs.len(), 4, "{msgs:?}");
    assert!(
        msgs[0].starts_with("OOM record 0: Memory: invalid quantity \"lots\""),
        "{msgs:?}"
    );
    assert!(
        msgs[1].starts_with("OOM record 1: OOMAt: \"noon\""),
        "{msgs:?}"
    );
    assert_eq!(msgs[2], "OOM record 2: Pod: must not be empty");
    assert!(msgs[3].starts_with("OOM record 4: record:"), "{msgs:?}");
    // The document itself.
    assert!(decode("").unwrap().0.is_empty());
    assert!(decode("null").unwrap().0.is_empty());
    let e = decode(r#"{"Pod":"p"}"#).unwrap_err().to_string();
    assert_eq!(
        e,
        "ConfigMap oom-record key data: expected a JSON array of records, found an object"
    );
    assert!(decode("[{").is_err());
}

#[test]
fn merge_keeps_one_record_per_container() {
    let mut records = vec![rec("a", "p", "c", "256Mi", T0)];
    // The same kill seen again (a re-list): nothing to write.
    assert!(!merge(&mut records, rec("a", "p", "c", "256Mi", T0)));
    // A later kill of the same container: the time moves on.
    assert!(merge(&mut records, rec("a", "p", "c", "256Mi", T0 + 600)));
    assert_eq!(records, vec![rec("a", "p", "c", "256Mi", T0 + 600)]);
    // An older sighting with a larger request keeps the latest time and the larger memory.
    assert!(merge(&mut records, rec("a", "p", "c", "512Mi", T0)));
    assert_eq!(records, vec![rec("a", "p", "c", "512Mi", T0 + 600)]);
    // Same pod name in another namespace, another container: separate records.
    assert!(merge(&mut records, rec("b", "p", "c", "1Gi", T0)));
    assert!(merge(&mut records, rec("a", "p", "d", "1Gi", T0)));
    assert_eq!(records.len(), 3);
    // A workload learnt later fills the record in.
    let mut with = rec("a", "p", "c", "256Mi", T0);
    with.workload = Some(deployment("web"));
    assert!(merge(&mut records, with));
    assert_eq!(records[0].workload, Some(deployment("web")));
    assert_eq!(records[0].memory, "512Mi");
}

#[test]
fn trim_drops_the_oldest() {
    let mut records = vec![
        rec("a", "p3", "c", "1Gi", T0 + 3),
        rec("a", "p1", "c", "1Gi", T0 + 1),
        rec("a", "p4", "c", "1Gi", T0 + 4),
        rec("a", "p2", "c", "1Gi", T0 + 2),
    ];
    assert!(!trim(&mut records, 4));
    // Sorted oldest first even when nothing is dropped.
    let pods: Vec<&str> = records.iter().map(|r| r.pod.as_str()).collect();
    assert_eq!(pods, ["p1", "p2", "p3", "p4"]);
    assert!(trim(&mut records, 2));
    let pods: Vec<&str> = records.iter().map(|r| r.pod.as_str()).collect();
    assert_eq!(pods, ["p3", "p4"]);
    assert!(trim(&mut records, 0));
    assert!(records.is_empty());
}

fn pod(value: serde_json::Value) -> Pod {
    serde_json::from_value(value).unwrap()
}

fn oom_pod(owner: Option<OwnerReference>) -> Pod {
    pod(json!({
        "metadata": {"name": "web-7d4b9c-x2x5q", "namespace": "shop",
                     "ownerReferences": owner.into_iter().collect::<Vec<_>>()},
        "spec": {"containers": [
            {"name": "app", "image": "i", "resources": {"requests": {"memory": "512Mi", "cpu": "1"}}},
            {"name": "sidecar", "image": "i", "resources": {"requests": {"memory": "64Mi"}}},
            {"name": "norequest", "image": "i"},
            {"name": "fine", "image": "i", "resources": {"requests": {"memory": "1Gi"}}},
            {"name": "nofinish", "image": "i", "resources": {"requests": {"memory": "1Gi"}}}
        ]},
        "status": {"containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 2, "image": "i", "imageID": "",
             "state": {"running": {"startedAt": "2024-05-01T10:00:05Z"}},
             "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                          "finishedAt": "2024-05-01T10:00:00Z"}}},
            {"name": "sidecar", "ready": true, "restartCount": 1, "image": "i", "imageID": "",
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                          "finishedAt": "2024-05-01T10:00:00Z"}}},
            {"name": "norequest", "ready": true, "restartCount": 1, "image": "i", "imageID": "",
             "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                          "finishedAt": "2024-05-01T10:00:00Z"}}},
            {"name": "fine", "ready": true, "restartCount": 0, "image": "i", "imageID": ""},
            {"name": "nofinish", "ready": true, "restartCount": 1, "image": "i", "imageID": "",
             "state": {"running": {"startedAt": "2024-05-01T10:10:00Z"}},
             "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
        ]}
    }))
}

#[test]
fn records_come_from_oomkilled_last_states_with_a_memory_request() {
    let records = records_from_pod(&oom_pod(None));
    assert_eq!(
        records,
        vec![
            rec("shop", "web-7d4b9c-x2x5q", "app", "512Mi", T0),
            // No finishedAt: the restart's start places it.
            rec("shop", "web-7d4b9c-x2x5q", "nofinish", "1Gi", T0 + 600),
        ]
    );
    // A pod without status or spec yields nothing rather than failing.
    assert!(records_from_pod(&pod(json!({"metadata": {"name": "x"}}))).is_empty());
}

#[test]
fn workloads_follow_owner_references_not_names() {
    let rs = owner("apps/v1", "ReplicaSet", "web-7d4b9c", true);
    let deploy = owner("apps/v1", "Deployment", "web", true);
    let p = oom_pod(Some(rs.clone()));
    let pod_owner = controller_of(&p.metadata);
    assert_eq!(pod_owner, Some(&rs));
    assert!(needs_parent(&rs));
    assert_eq!(
        workload_of(pod_owner, Some(&deploy)),
        Some(deployment("web"))
    );
    // A bare ReplicaSet is its own workload.
    assert_eq!(
        workload_of(pod_owner, None).map(|w| w.kind),
        Some("ReplicaSet".to_string())
    );
    // Job → CronJob.
    let job = owner("batch/v1", "Job", "nightly-28512345", true);
    assert!(needs_parent(&job));
    let cron = owner("batch/v1", "CronJob", "nightly", true);
    assert_eq!(
        workload_of(Some(&job), Some(&cron)).map(|w| (w.kind, w.name)),
        Some(("CronJob".into(), "nightly".into()))
    );
    // StatefulSet pods belong to the StatefulSet directly; a parent is not consulted.
    let sts = owner("apps/v1", "StatefulSet", "db", true);
    assert!(!needs_parent(&sts));
    assert_eq!(
        workload_of(Some(&sts), Some(&deploy)).map(|w| w.kind),
        Some("StatefulSet".into())
    );
    // Only the controller reference counts; a pod without one belongs to no workload.
    let not_controller = oom_pod(Some(owner("v1", "Node", "n1", false)));
    assert_eq!(controller_of(&not_controller.metadata), None);
    assert_eq!(workload_of(None, None), None);
    // A ReplicaSet of another group is not a Deployment's.
    assert!(!needs_parent(&owner(
        "example.com/v1",
        "ReplicaSet",
        "x",
        true
    )));
}

#[test]
fn news_and_attribution_of_crane_records() {
    let mut records = vec![rec("shop", "web-1", "app", "512Mi", T0)];
    // Known, but without a workload: worth resolving.
    assert!(is_news(&records, &rec("shop", "web-1", "app", "512Mi", T0)));
    assert!(has_unattributed(&records, "shop", "web-1"));
    assert!(fill_workload(
        &mut records,
        "shop",
        "web-1",
        &deployment("web")
    ));
    assert!(!has_unattributed(&records, "shop", "web-1"));
    assert!(!is_news(
        &records,
        &rec("shop", "web-1", "app", "512Mi", T0)
    ));
    assert!(is_news(
        &records,
        &rec("shop", "web-1", "app", "512Mi", T0 + 1)
    ));
    assert!(is_news(
        &records,
        &rec("shop", "web-1", "other", "512Mi", T0)
    ));
    assert!(!fill_workload(
        &mut records,
        "shop",
        "web-1",
        &deployment("x")
    ));
    assert_eq!(records[0].workload, Some(deployment("web")));
}

#[test]
fn store_lookups_match_by_workload_not_prefix() {
    let mut web = rec("shop", "web-7d4b9c-aaaaa", "app", "512Mi", T0);
    web.workload = Some(deployment("web"));
    let mut web_later = rec("shop", "web-7d4b9c-bbbbb", "app", "256Mi", T0 + 3600);
    web_later.workload = Some(deployment("web"));
    // `web-canary-…` starts with `web-`: Crane would count it for `web` (#823).
    let mut canary = rec("shop", "web-canary-5f6d7-ccccc", "app", "4Gi", T0 + 7200);
    canary.workload = Some(deployment("web-canary"));
    let mut other_ns = rec("test", "web-7d4b9c-ddddd", "app", "8Gi", T0);
    other_ns.workload = Some(deployment("web"));
    let unattributed = rec("shop", "web-7d4b9c-eeeee", "app", "16Gi", T0);
    let store = OomStore::new(vec![web, web_later, canary, other_ns, unattributed]);

    assert_eq!(
        store.max_oom_memory("shop", "Deployment", "web", "app", T0),
        Some((512 << 20, T0))
    );
    // The window excludes the larger, older kill.
    assert_eq!(
        store.max_oom_memory("shop", "Deployment", "web", "app", T0 + 1),
        Some((256 << 20, T0 + 3600))
    );
    assert_eq!(
        store.max_oom_memory("shop", "Deployment", "web", "app", T0 + 3601),
        None
    );
    assert_eq!(
        store.max_oom_memory("shop", "Deployment", "web", "sidecar", 0),
        None
    );
    assert_eq!(
        store.max_oom_memory("shop", "StatefulSet", "web", "app", 0),
        None
    );
    assert_eq!(
        store.max_oom_memory("shop", "Deployment", "web-canary", "app", 0),
        Some((4 << 30, T0 + 7200))
    );
    let mut for_web = store.records_for_workload("shop", "Deployment", "web", 0);
    for_web.sort_by_key(|r| r.oom_at);
    assert_eq!(
        for_web,
        vec![
            crate::recommender::resource::OomRecord {
                container: "app".into(),
                memory_bytes: 512 << 20,
                oom_at: T0
            },
            crate::recommender::resource::OomRecord {
                container: "app".into(),
                memory_bytes: 256 << 20,
                oom_at: T0 + 3600
            },
        ]
    );
    assert_eq!(store.len(), 5);
    store.replace(Vec::new());
    assert!(store.is_empty());
    assert_eq!(
        store.max_oom_memory("shop", "Deployment", "web", "app", 0),
        None
    );
}
