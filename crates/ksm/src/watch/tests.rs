use std::sync::atomic::{AtomicUsize, Ordering};

use ferrocrane_core::exposition::{Format, MetricType};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

use super::*;
use crate::families::{FamilySpec, ResourceFamilies, Stability, bare};
use crate::sharding::Sharding;

/// One gauge per object, so the store shows which objects it holds.
struct OnePerObject;

impl RenderObject<ConfigMap> for OnePerObject {
    fn render(&self, obj: &ConfigMap) -> Result<Vec<Vec<u8>>, String> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        if name == "unrenderable" {
            return Err("refused".into());
        }
        Ok(vec![format!("x{{name=\"{name}\"}} 1\n").into_bytes()])
    }
}

fn store() -> Arc<MetricsStore> {
    let families = ResourceFamilies::<ConfigMap> {
        resource: "configmaps",
        identity_keys: &[],
        identity: |_| Vec::new(),
        families: vec![FamilySpec {
            name: "x",
            help: "x",
            kind: MetricType::Gauge,
            stability: Stability::Alpha,
            deprecated_since: None,
            opt_in: false,
            generate: |_, _| vec![bare(1.0)],
        }],
    };
    Arc::new(MetricsStore::new(&families, &[0]))
}

fn cm(name: &str, uid: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// A complete (re)list of `objects`, as the watcher reports one.
fn listed(objects: Vec<ConfigMap>) -> Vec<watcher::Result<Event<ConfigMap>>> {
    let mut events = vec![Ok(Event::Init)];
    events.extend(objects.into_iter().map(|o| Ok(Event::InitApply(o))));
    events.push(Ok(Event::InitDone));
    events
}

fn scrape(store: &MetricsStore) -> String {
    let mut out = Vec::new();
    store.write_all(&mut out, Format::Text004);
    String::from_utf8(out).expect("utf8")
}

struct Run {
    store: Arc<MetricsStore>,
    telemetry: Telemetry,
    synced: Arc<AtomicUsize>,
}

async fn run(
    events: Vec<watcher::Result<Event<ConfigMap>>>,
    ownership: impl ObjectOwnership + 'static,
    list: ListSettings,
) -> Run {
    let store = store();
    let telemetry = Telemetry::new().expect("telemetry");
    let synced = Arc::new(AtomicUsize::new(0));
    let counter = synced.clone();
    let wc = WatchContext {
        render: Arc::new(OnePerObject),
        store: store.clone(),
        telemetry_label: "configmaps".into(),
        ownership: Arc::new(ownership),
        telemetry: telemetry.clone(),
        list,
        on_synced: Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }),
    };
    apply_events(futures::stream::iter(events), wc).await;
    Run {
        store,
        telemetry,
        synced,
    }
}

const ALL: Sharding = Sharding { shard: 0, total: 1 };

#[tokio::test]
async fn a_relist_drops_what_the_api_server_no_longer_has() {
    let mut events = listed(vec![cm("a", "1"), cm("b", "2")]);
    events.extend([
        Ok(Event::Apply(cm("c", "3"))),
        Ok(Event::Delete(cm("a", "1"))),
        Err(watcher::Error::NoResourceVersion),
    ]);
    events.extend(listed(vec![cm("c", "3")]));
    let r = run(events, ALL, ListSettings::default()).await;
    let text = scrape(&r.store);
    assert!(text.contains("x{name=\"c\"} 1"), "{text}");
    assert!(
        !text.contains("name=\"a\"") && !text.contains("name=\"b\""),
        "{text}"
    );
    assert_eq!(r.synced.load(Ordering::SeqCst), 1, "on_synced runs once");
    let t = r.telemetry.exposition();
    for line in [
        "kube_state_metrics_list_total{resource=\"configmaps\",result=\"success\"} 2",
        "kube_state_metrics_watch_total{resource=\"configmaps\",result=\"success\"} 2",
        "kube_state_metrics_watch_total{resource=\"configmaps\",result=\"error\"} 1",
        "kube_state_metrics_list_objects{resource=\"configmaps\"} 1",
    ] {
        assert!(t.contains(line), "missing {line} in\n{t}");
    }
}

#[tokio::test]
async fn the_object_limit_counts_each_list_and_sharding_skips_foreign_uids() {
    let mut events = listed(vec![cm("a", "1"), cm("b", "2")]);
    events.push(Ok(Event::Apply(cm("c", "3"))));
    let limited = run(
        events,
        ALL,
        ListSettings {
            use_apiserver_cache: false,
            object_limit: Some(1),
        },
    )
    .await;
    assert_eq!(limited.store.len(), 2, "{}", scrape(&limited.store));

    let shard = Sharding { shard: 0, total: 2 };
    let uids: Vec<String> = (0..20).map(|i| format!("uid-{i}")).collect();
    let events = listed(uids.iter().map(|u| cm(u, u)).collect());
    let sharded = run(events, shard, ListSettings::default()).await;
    let owned = uids.iter().filter(|u| shard.owns(u)).count();
    assert!(owned > 0 && owned < uids.len());
    assert_eq!(sharded.store.len(), owned);
    let t = sharded.telemetry.exposition();
    for line in [
        format!(
            "kube_state_metrics_shard_objects_received_total{{owned=\"true\",resource=\"configmaps\"}} {owned}"
        ),
        format!(
            "kube_state_metrics_shard_objects_received_total{{owned=\"false\",resource=\"configmaps\"}} {}",
            uids.len() - owned
        ),
    ] {
        assert!(t.contains(&line), "missing {line} in\n{t}");
    }
}

#[tokio::test]
async fn server_side_ranges_filter_here_too_when_the_api_server_does_not() {
    // An API server without the gate sends everything: the range still decides.
    let range = crate::server_sharding::UidRange::of(Sharding { shard: 1, total: 2 });
    let uids: Vec<String> = (0..40)
        .map(|i| format!("{i:08x}-0000-4000-8000-{:012x}", i * 7919))
        .collect();
    let events = listed(uids.iter().map(|u| cm(u, u)).collect());
    let r = run(events, range, ListSettings::default()).await;
    let owned = uids.iter().filter(|u| range.contains(u)).count();
    assert!(owned > 0 && owned < uids.len(), "{owned}");
    assert_eq!(r.store.len(), owned);
}

#[tokio::test]
async fn an_object_that_cannot_be_rendered_is_dropped_and_counted_not_kept_stale() {
    let mut events = listed(vec![cm("a", "1"), cm("b", "2"), cm("unrenderable", "3")]);
    // "a" comes back in a form the renderer refuses: its old lines must go.
    events.push(Ok(Event::Apply(cm("unrenderable", "1"))));
    let r = run(events, ALL, ListSettings::default()).await;
    let text = scrape(&r.store);
    assert!(text.contains("x{name=\"b\"} 1"), "{text}");
    assert!(!text.contains("name=\"a\""), "{text}");
    assert_eq!(r.store.len(), 1, "{text}");
    let t = r.telemetry.exposition();
    let line = "kube_state_metrics_dropped_objects_total{resource=\"configmaps\"} 2";
    assert!(t.contains(line), "missing {line} in\n{t}");
}
