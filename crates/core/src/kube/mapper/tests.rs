use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use std::sync::{
    Arc, Mutex,
    atomic::{AtomicUsize, Ordering},
};
use std::time::Duration;

fn res(name: &str, singular: &str, kind: &str, namespaced: bool, short: &[&str]) -> APIResource {
    APIResource {
        name: name.into(),
        singular_name: singular.into(),
        kind: kind.into(),
        namespaced,
        short_names: (!short.is_empty()).then(|| short.iter().map(|s| s.to_string()).collect()),
        verbs: vec!["get".into(), "list".into(), "watch".into()],
        ..Default::default()
    }
}

fn sub(name: &str, kind: &str) -> APIResource {
    APIResource {
        name: name.into(),
        kind: kind.into(),
        namespaced: true,
        verbs: vec!["get".into(), "update".into()],
        ..Default::default()
    }
}

fn list(gv: &str, resources: Vec<APIResource>) -> APIResourceList {
    APIResourceList {
        group_version: gv.into(),
        resources,
    }
}

fn cluster() -> Vec<DiscoveredGroup> {
    vec![
        DiscoveredGroup {
            name: "apps".into(),
            preferred_version: Some("v1".into()),
            resource_lists: vec![list(
                "apps/v1",
                vec![
                    res("deployments", "deployment", "Deployment", true, &["deploy"]),
                    sub("deployments/scale", "Scale"),
                    sub("deployments/status", "Deployment"),
                    res("statefulsets", "statefulset", "StatefulSet", true, &["sts"]),
                    sub("statefulsets/scale", "Scale"),
                    res("daemonsets", "daemonset", "DaemonSet", true, &["ds"]),
                ],
            )],
        },
        DiscoveredGroup {
            name: "events.k8s.io".into(),
            preferred_version: Some("v1".into()),
            resource_lists: vec![list(
                "events.k8s.io/v1",
                vec![res("events", "event", "Event", true, &["ev"])],
            )],
        },
        DiscoveredGroup {
            name: "autoscaling".into(),
            preferred_version: Some("v2".into()),
            resource_lists: vec![
                list(
                    "autoscaling/v2",
                    vec![res(
                        "horizontalpodautoscalers",
                        "horizontalpodautoscaler",
                        "HorizontalPodAutoscaler",
                        true,
                        &["hpa"],
                    )],
                ),
                list(
                    "autoscaling/v1",
                    vec![res(
                        "horizontalpodautoscalers",
                        "horizontalpodautoscaler",
                        "HorizontalPodAutoscaler",
                        true,
                        &["hpa"],
                    )],
                ),
            ],
        },
        DiscoveredGroup {
            name: "example.com".into(),
            preferred_version: Some("v1".into()),
            resource_lists: vec![
                list(
                    "example.com/v1",
                    vec![res("widgets", "", "Widget", false, &[])],
                ),
                list(
                    "example.com/v1alpha1",
                    vec![
                        res("widgets", "", "Widget", false, &[]),
                        res("gadgets", "gadget", "Gadget", true, &["deploy"]),
                    ],
                ),
            ],
        },
        // Core last on purpose: it must still take priority.
        DiscoveredGroup {
            name: String::new(),
            preferred_version: Some("v1".into()),
            resource_lists: vec![list(
                "v1",
                vec![
                    res("pods", "pod", "Pod", true, &["po"]),
                    sub("pods/log", "Pod"),
                    res("namespaces", "namespace", "Namespace", false, &["ns"]),
                    res("nodes", "node", "Node", false, &["no"]),
                    res("events", "event", "Event", true, &["ev"]),
                    res(
                        "replicationcontrollers",
                        "replicationcontroller",
                        "ReplicationController",
                        true,
                        &["rc"],
                    ),
                    sub("replicationcontrollers/scale", "Scale"),
                ],
            )],
        },
    ]
}

#[test]
fn resource_lookup_by_any_name_case_insensitive() {
    let m = ResourceMapper::from_discovery(&cluster());
    for name in ["pods", "pod", "po", "Pod", "PODS"] {
        let r = m.by_resource("", name).unwrap();
        assert_eq!(r.group_resource(), "pods", "{name}");
    }
    let d = m.by_resource("", "deployment").unwrap();
    assert_eq!(d.group_resource(), "deployments.apps");
    assert_eq!(d.api_version(), "apps/v1");
    assert!(d.namespaced);
    assert!(d.has_scale);
    assert_eq!(
        m.by_resource("apps", "deploy").unwrap().plural,
        "deployments"
    );
    assert_eq!(
        m.by_resource("APPS", "Deployments").unwrap().plural,
        "deployments"
    );
    assert!(m.by_resource("apps", "pods").is_none());
    assert!(m.by_resource("", "nothing").is_none());

    let ns = m.by_resource("", "namespace").unwrap();
    assert!(!ns.namespaced);
    assert!(!ns.has_scale);
    assert!(!m.by_resource("", "daemonsets").unwrap().has_scale);
    assert!(m.by_resource("", "rc").unwrap().has_scale);
}

#[test]
fn core_group_wins_without_group() {
    let m = ResourceMapper::from_discovery(&cluster());
    assert_eq!(m.by_resource("", "events").unwrap().group, "");
    assert_eq!(
        m.by_resource("events.k8s.io", "events").unwrap().group,
        "events.k8s.io"
    );
    assert_eq!(m.all()[0].group, "");
    assert_eq!(m.by_kind("", "Event").unwrap().group, "");
}

#[test]
fn plural_beats_other_resources_short_name() {
    // example.com's gadgets claims short name "deploy"; within apps it is still deployments,
    // and across groups the first group in priority order (apps) keeps it.
    let m = ResourceMapper::from_discovery(&cluster());
    assert_eq!(m.by_resource("", "deploy").unwrap().plural, "deployments");
    assert_eq!(
        m.by_resource("example.com", "deploy").unwrap().plural,
        "gadgets"
    );
}

#[test]
fn preferred_version_and_fallback() {
    let m = ResourceMapper::from_discovery(&cluster());
    let hpa = m.by_resource("autoscaling", "hpa").unwrap();
    assert_eq!(hpa.version, "v2");
    assert_eq!(hpa.versions, vec!["v2", "v1"]);

    let w = m.by_resource("example.com", "widget").unwrap();
    assert_eq!(w.version, "v1");
    assert_eq!(
        w.singular, "widget",
        "empty singular falls back to lower-case kind"
    );
    // Only served by a non-preferred version.
    let g = m.by_kind("example.com", "gadget").unwrap();
    assert_eq!(g.version, "v1alpha1");
    assert_eq!(
        g.gvk(),
        GroupVersionKind::gvk("example.com", "v1alpha1", "Gadget")
    );
}

#[test]
fn kind_lookup() {
    let m = ResourceMapper::from_discovery(&cluster());
    let d = m.by_kind("apps", "Deployment").unwrap();
    assert_eq!(d.plural, "deployments");
    assert_eq!(m.by_kind("", "deployment").unwrap().group, "apps");
    assert!(m.by_kind("apps", "Pod").is_none());
    let ar = d.api_resource();
    assert_eq!(ar.api_version, "apps/v1");
    assert_eq!(ar.plural, "deployments");
}

#[test]
fn group_resource_strings() {
    let m = ResourceMapper::from_discovery(&cluster());
    assert_eq!(m.by_group_resource("pods").unwrap().kind, "Pod");
    assert_eq!(
        m.by_group_resource("deployments.apps").unwrap().kind,
        "Deployment"
    );
    assert_eq!(
        m.by_group_resource("deployment.apps").unwrap().kind,
        "Deployment"
    );
    assert_eq!(
        m.by_group_resource("hpa.v1.autoscaling").unwrap().plural,
        "horizontalpodautoscalers"
    );
    assert!(m.by_group_resource("hpa.v3.autoscaling").is_none());
    assert_eq!(
        m.by_group_resource("widgets.example.com").unwrap().kind,
        "Widget"
    );
    assert!(m.by_group_resource("pods.apps").is_none());
}

#[test]
fn subresources_are_not_resources() {
    let m = ResourceMapper::from_discovery(&cluster());
    assert!(m.all().iter().all(|r| !r.plural.contains('/')));
    assert_eq!(m.all().len(), 12);
}

/// One scripted discovery outcome.
type Script = Result<Vec<DiscoveredGroup>, ()>;

#[tokio::test(start_paused = true)]
async fn refresh_keeps_last_good_and_picks_up_new_resources() {
    let calls = Arc::new(AtomicUsize::new(0));
    let script: Arc<Mutex<Vec<Script>>> = Arc::new(Mutex::new(vec![
        Err(()),
        Ok(cluster()),
        Err(()),
        Ok({
            let mut c = cluster();
            c.push(DiscoveredGroup {
                name: "analysis.crane.io".into(),
                preferred_version: Some("v1alpha1".into()),
                resource_lists: vec![list(
                    "analysis.crane.io/v1alpha1",
                    vec![res(
                        "recommendations",
                        "recommendation",
                        "Recommendation",
                        true,
                        &[],
                    )],
                )],
            });
            c
        }),
    ]));
    let (mut shared, handle) = spawn_refresh_with(Duration::from_secs(60), {
        let calls = calls.clone();
        let script = script.clone();
        move || {
            calls.fetch_add(1, Ordering::SeqCst);
            let next = {
                let mut s = script.lock().unwrap();
                if s.is_empty() { Err(()) } else { s.remove(0) }
            };
            async move {
                next.map(|g| ResourceMapper::from_discovery(&g))
                    .map_err(|()| KubeError::Discovery("boom".into()))
            }
        }
    });

    assert!(shared.current().is_empty());
    let first = shared.ready().await.unwrap();
    assert!(first.by_resource("", "pods").is_some());
    assert!(first.by_resource("", "recommendation").is_none());

    // Third run fails: the snapshot stays.
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(shared.current().by_resource("", "pods").is_some());

    // Fourth run sees the CRD.
    loop {
        let updated = shared.changed().await.unwrap();
        if updated.by_resource("", "recommendation").is_some() {
            break;
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    // Dropping every handle stops the task.
    drop(shared);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(handle.is_finished());
}

#[tokio::test]
async fn fixed_mapper() {
    let shared = SharedMapper::fixed(ResourceMapper::from_discovery(&cluster()));
    assert!(shared.ready().await.unwrap().by_kind("", "Pod").is_some());
}
