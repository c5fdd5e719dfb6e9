//! Render and scrape costs of ksm.
//!
//! - `render/pod`: one realistic Pod (three containers, one init container, labels,
//!   conditions, resources) through every default pod family: the work done per
//!   watch event.
//! - `scrape/1000x3`: `MetricsStore::write_all` over stores holding 1000 pods, 1000
//!   configmaps and 1000 services: the workload of upstream's
//!   `BenchmarkKubeStateMetrics`, scrape side only (rendering happens on change).
//! - `populate/1000x3`: rendering those 3000 objects into fresh stores, i.e. the cost
//!   of an initial list.
//! - `scrape/100000-pods`: a streamed scrape (`write_chunked`, 256 KiB pieces, as
//!   `/metrics` does) of one store of 100,000 pods: a document far larger than the CPU
//!   caches, so what it measures is memory traffic, not the copy loop.
//! - `scrape/100000-pods-served-x4`: four clients at once, each on its own connection,
//!   reading the whole `/metrics` document of that store over loopback HTTP from the real
//!   router and server: the bench's 4-scraper scrape with the network stack, the response
//!   pieces and hyper included (time per round of four scrapes).
//! - `watch-event/pod-into-200` and `watch-event/pod-into-100000`: one MODIFIED event's
//!   bytes decoded as the watcher does, rendered and upserted into a store already holding
//!   200 or 100,000 pods (a different pod each time): what a watch event costs, and whether
//!   that grows with the store.
//!
//! Run: `cargo bench -p ferrocrane-ksm --bench render -- --warm-up-time 1 --measurement-time 5`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark whose setup fails is itself broken"
)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferrocrane_core::exposition::Format;
use ferrocrane_ksm::families::{FamilyContext, ResourceFamilies, configmap, pod, service};
use ferrocrane_ksm::store::MetricsStore;
use ferrocrane_ksm::watch::Decoded;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::WatchEvent;
use serde_json::json;

const N: usize = 1000;

fn pod_object(i: usize) -> Pod {
    let container = |name: &str, image: &str, port: i32| {
        json!({
            "name": name, "image": image,
            "ports": [{ "containerPort": port, "protocol": "TCP" }],
            "resources": {
                "requests": { "cpu": "250m", "memory": "256Mi", "ephemeral-storage": "1Gi" },
                "limits": { "cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1" }
            }
        })
    };
    let running = |name: &str, image: &str, restarts: i32| {
        json!({
            "name": name, "image": image, "imageID": format!("docker-pullable://{image}@sha256:0123"),
            "containerID": format!("containerd://{name}-{i}"),
            "ready": true, "started": true, "restartCount": restarts,
            "state": { "running": { "startedAt": "2024-05-01T10:00:10Z" } },
            "lastState": { "terminated": {
                "exitCode": 137, "reason": "OOMKilled",
                "startedAt": "2024-05-01T09:00:00Z", "finishedAt": "2024-05-01T10:00:00Z"
            } }
        })
    };
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("web-{i}"), "namespace": "default", "uid": format!("pod-uid-{i}"),
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": { "app": "web", "tier": "frontend", "pod-template-hash": "7d9c8b", "release": "stable" },
            "annotations": { "prometheus.io/scrape": "true" },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9c8b",
                "uid": "rs-uid", "controller": true
            }]
        },
        "spec": {
            "nodeName": "node-1", "priorityClassName": "high", "serviceAccountName": "web",
            "schedulerName": "default-scheduler", "restartPolicy": "Always",
            "initContainers": [container("init-db", "busybox:1.36", 9000)],
            "containers": [
                container("app", "registry.example/web:1.2.3", 8080),
                container("sidecar", "envoyproxy/envoy:v1.30", 9901),
                container("log-shipper", "fluent/fluent-bit:3.0", 2020)
            ],
            "volumes": [
                { "name": "data", "persistentVolumeClaim": { "claimName": format!("data-{i}") } },
                { "name": "config", "configMap": { "name": "web-config" } }
            ],
            "tolerations": [
                { "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 }
            ]
        },
        "status": {
            "phase": "Running", "qosClass": "Burstable",
            "hostIP": "10.0.0.1", "podIP": format!("10.1.{}.{}", i / 250, i % 250),
            "podIPs": [{ "ip": format!("10.1.{}.{}", i / 250, i % 250) }],
            "startTime": "2024-05-01T10:00:01Z",
            "conditions": [
                { "type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:01Z" },
                { "type": "Initialized", "status": "True", "lastTransitionTime": "2024-05-01T10:00:05Z" },
                { "type": "ContainersReady", "status": "True", "lastTransitionTime": "2024-05-01T10:00:12Z" },
                { "type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:12Z" }
            ],
            "initContainerStatuses": [{
                "name": "init-db", "image": "busybox:1.36", "imageID": "docker-pullable://busybox@sha256:1",
                "containerID": format!("containerd://init-{i}"), "ready": true, "restartCount": 0,
                "state": { "terminated": {
                    "exitCode": 0, "reason": "Completed",
                    "startedAt": "2024-05-01T10:00:02Z", "finishedAt": "2024-05-01T10:00:05Z"
                } }
            }],
            "containerStatuses": [
                running("app", "registry.example/web:1.2.3", 3),
                running("sidecar", "envoyproxy/envoy:v1.30", 0),
                running("log-shipper", "fluent/fluent-bit:3.0", 1)
            ]
        }
    }))
    .expect("valid pod")
}

fn configmap_object(i: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("config-{i}"), "namespace": "default", "uid": format!("cm-uid-{i}"),
            "resourceVersion": format!("{}", 100_000 + i),
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": { "app": "web" }
        },
        "data": { "key": "value" }
    }))
    .expect("valid configmap")
}

fn service_object(i: usize) -> Service {
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("svc-{i}"), "namespace": "default", "uid": format!("svc-uid-{i}"),
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": { "app": "web" }
        },
        "spec": {
            "type": "ClusterIP", "clusterIP": format!("10.96.{}.{}", i / 250, i % 250),
            "ports": [{ "name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP" }],
            "selector": { "app": "web" }
        }
    }))
    .expect("valid service")
}

/// The families a default deployment serves: every non-opt-in one.
fn default_enabled<T>(families: &ResourceFamilies<T>) -> Vec<usize> {
    (0..families.families.len())
        .filter(|&i| !families.families[i].opt_in)
        .collect()
}

/// A store of `objects`, rendered as the watcher would on each add.
fn store_of<T>(
    families: &ResourceFamilies<T>,
    objects: &[T],
    uid: fn(&T) -> String,
) -> MetricsStore {
    let enabled = default_enabled(families);
    let store = MetricsStore::new(families, &enabled);
    let ctx = FamilyContext::default();
    for obj in objects {
        store.upsert(&uid(obj), families.render(obj, &ctx, &enabled));
    }
    store
}

struct Workload {
    pods: Vec<Pod>,
    configmaps: Vec<ConfigMap>,
    services: Vec<Service>,
}

impl Workload {
    fn new() -> Self {
        Self {
            pods: (0..N).map(pod_object).collect(),
            configmaps: (0..N).map(configmap_object).collect(),
            services: (0..N).map(service_object).collect(),
        }
    }

    fn stores(&self) -> Vec<MetricsStore> {
        vec![
            store_of(&configmap::families(), &self.configmaps, |o| {
                o.metadata.uid.clone().unwrap_or_default()
            }),
            store_of(&pod::families(), &self.pods, |o| {
                o.metadata.uid.clone().unwrap_or_default()
            }),
            store_of(&service::families(), &self.services, |o| {
                o.metadata.uid.clone().unwrap_or_default()
            }),
        ]
    }
}

fn render_pod(c: &mut Criterion) {
    let families = pod::families();
    let enabled = default_enabled(&families);
    let ctx = FamilyContext::default();
    let p = pod_object(7);
    let lines: usize = families
        .render(&p, &ctx, &enabled)
        .iter()
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .sum();
    let mut group = c.benchmark_group("render");
    group.throughput(Throughput::Elements(lines as u64));
    group.bench_function("pod", |b| {
        b.iter(|| families.render(black_box(&p), &ctx, &enabled))
    });
    group.finish();
}

fn scrape(c: &mut Criterion) {
    let workload = Workload::new();
    let stores = workload.stores();
    let mut size = Vec::new();
    for s in &stores {
        s.write_all(&mut size, Format::Text004);
    }
    let hint: usize = stores.iter().map(MetricsStore::size_hint).sum();

    let mut group = c.benchmark_group("scrape");
    group.throughput(Throughput::Bytes(size.len() as u64));
    group.bench_function("1000x3", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(hint);
            for s in &stores {
                s.write_all(&mut out, Format::Text004);
            }
            black_box(out)
        })
    });
    group.finish();

    let mut group = c.benchmark_group("populate");
    group.sample_size(10);
    group.throughput(Throughput::Elements(3 * N as u64));
    group.bench_function("1000x3", |b| b.iter(|| black_box(workload.stores())));
    group.finish();
}

/// A store of 100,000 pods and the size of its text document.
fn store_of_100000_pods() -> (MetricsStore, usize) {
    let families = pod::families();
    let pods: Vec<Pod> = (0..100_000).map(pod_object).collect();
    let store = store_of(&families, &pods, |o| {
        o.metadata.uid.clone().unwrap_or_default()
    });
    drop(pods);
    let mut whole = Vec::new();
    store.write_all(&mut whole, Format::Text004);
    (store, whole.len())
}

fn scrape_at_scale(c: &mut Criterion) {
    let (store, document) = store_of_100000_pods();
    let mut group = c.benchmark_group("scrape");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(document as u64));
    let chunk = 256 * 1024;
    group.bench_function("100000-pods", |b| {
        let mut buf = Vec::with_capacity(chunk + chunk / 4);
        b.iter(|| {
            let mut pieces = 0usize;
            store.write_chunked(&mut buf, Format::Text004, chunk, &mut |b| {
                pieces += 1;
                b.clear();
                true
            });
            black_box(pieces)
        })
    });
    group.finish();
}

fn watch_event(c: &mut Criterion) {
    let families = pod::families();
    let enabled = default_enabled(&families);
    let ctx = FamilyContext::default();
    let mut group = c.benchmark_group("watch-event");
    for pods in [200usize, 100_000] {
        let objects: Vec<Pod> = (0..pods).map(pod_object).collect();
        let store = store_of(&families, &objects, |o| {
            o.metadata.uid.clone().unwrap_or_default()
        });
        let events: Vec<Vec<u8>> = objects
            .iter()
            // `type` first, as the API server writes it: `json!` would sort it after
            // `object`, and then serde buffers the object and `Decoded` cannot borrow it.
            .map(|p| {
                format!(
                    r#"{{"type":"MODIFIED","object":{}}}"#,
                    serde_json::to_string(p).unwrap()
                )
                .into_bytes()
            })
            .collect();
        drop(objects);
        let mut next = 0usize;
        group.bench_function(format!("pod-into-{pods}"), |b| {
            b.iter(|| {
                // A stride through the pods, so consecutive events touch unrelated memory,
                // as a status churn over many pods does.
                next = (next + 7919) % pods;
                let event: WatchEvent<Decoded<Pod>> =
                    serde_json::from_slice(&events[next]).unwrap();
                let WatchEvent::Modified(Decoded::Object(pod)) = event else {
                    panic!("not a decodable MODIFIED event");
                };
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                store.upsert(&uid, families.render(&pod, &ctx, &enabled));
            })
        });
    }
    group.finish();
}

/// Reads one whole `/metrics` response from `addr` (the server closes the connection after
/// it); returns the bytes received.
fn fetch_metrics(addr: std::net::SocketAddr) -> usize {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        match conn.read(&mut buf).unwrap() {
            0 => return total,
            n => total += n,
        }
    }
}

fn scrape_served(c: &mut Criterion) {
    use ferrocrane_ksm::http::{MetricsState, router};
    use ferrocrane_ksm::store::Serving;
    use std::sync::{Arc, RwLock};
    const SCRAPERS: usize = 4;
    let (store, document) = store_of_100000_pods();
    let state = MetricsState {
        serving: Arc::new(RwLock::new(Arc::new(Serving {
            stores: vec![Arc::new(store)],
            custom: None,
            gzip: true,
        }))),
        telemetry: ferrocrane_ksm::telemetry::Telemetry::new().unwrap(),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(ferrocrane_core::server::serve(
        listener,
        None,
        router(state),
        std::future::pending(),
    ));
    let mut group = c.benchmark_group("scrape");
    group.sample_size(10);
    group.throughput(Throughput::Bytes((SCRAPERS * document) as u64));
    group.bench_function("100000-pods-served-x4", |b| {
        b.iter(|| {
            std::thread::scope(|s| {
                let clients: Vec<_> = (0..SCRAPERS)
                    .map(|_| s.spawn(|| fetch_metrics(addr)))
                    .collect();
                for client in clients {
                    // Headers and chunk framing on top of the document.
                    assert!(client.join().unwrap() > document);
                }
            })
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    render_pod,
    scrape,
    scrape_at_scale,
    scrape_served,
    watch_event
);
criterion_main!(benches);
