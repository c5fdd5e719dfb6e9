//! The custom-metrics object cache (`objects::index::ObjectIndex`) at 100,000 pods.
//!
//! Prints, before the timings, the heap it holds per pod: bytes asked of the allocator (a
//! counting global allocator) and glibc's chunk size for them (each allocation rounded up to
//! 16 bytes plus its 8-byte header, 32 at least). The cluster: 100 namespaces × 20 Deployments ×
//! 50 pods, each pod carrying its Deployment's four labels plus its ReplicaSet's
//! `pod-template-hash`, names as the ReplicaSet controller writes them.
//!
//! - `select/namespace_1000`: one `pods/*` request's lookup, a namespace of 1,000 pods and a
//!   selector choosing 50 of them (`app=<deployment>,tier in (a,b)`).
//! - `apply/100k`: filling an index from an initial list of 100,000 pods.
//!
//! Run: `cargo bench -p ferrocrane-adapter --bench object_cache -- --warm-up-time 1 --measurement-time 5`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "a benchmark whose setup fails is itself broken"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use ferrocrane_adapter::object_selector::label_selector;
use ferrocrane_adapter::objects::index::ObjectIndex;

/// Live bytes requested, and live bytes as glibc chunks.
struct Counting;
static REQUESTED: AtomicUsize = AtomicUsize::new(0);
static CHUNKS: AtomicUsize = AtomicUsize::new(0);

fn chunk(size: usize) -> usize {
    (size + 8).div_ceil(16).max(2) * 16
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        REQUESTED.fetch_add(layout.size(), Ordering::Relaxed);
        CHUNKS.fetch_add(chunk(layout.size()), Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        REQUESTED.fetch_sub(layout.size(), Ordering::Relaxed);
        CHUNKS.fetch_sub(chunk(layout.size()), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const NAMESPACES: usize = 100;
const DEPLOYMENTS: usize = 20;
const PODS_PER_DEPLOYMENT: usize = 50;

/// (namespace, name, labels) of every pod.
fn cluster() -> Vec<(String, String, BTreeMap<String, String>)> {
    let mut pods = Vec::new();
    for ns in 0..NAMESPACES {
        for d in 0..DEPLOYMENTS {
            let hash = format!("{:010x}", (ns * 7919 + d * 104_729) % 0xff_ffff_ffff);
            let labels: BTreeMap<String, String> = [
                ("app.kubernetes.io/name", format!("service-{d}")),
                ("app.kubernetes.io/part-of", format!("team-{ns}")),
                ("app.kubernetes.io/version", "1.24.3".to_owned()),
                ("tier", ["a", "b", "c", "d"][d % 4].to_owned()),
                ("pod-template-hash", hash.clone()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            for p in 0..PODS_PER_DEPLOYMENT {
                let mut x = p * 7919 + d * 13 + 104_729;
                let suffix: String = (0..5)
                    .map(|_| {
                        let c = char::from(b'a' + (x % 26) as u8);
                        x /= 26;
                        c
                    })
                    .collect();
                pods.push((
                    format!("team-{ns}"),
                    format!("service-{d}-{hash}-{suffix}"),
                    labels.clone(),
                ));
            }
        }
    }
    pods
}

fn fill(pods: &[(String, String, BTreeMap<String, String>)]) -> ObjectIndex {
    let mut index = ObjectIndex::default();
    for (ns, name, labels) in pods {
        index.apply(ns, name, labels);
    }
    index
}

fn benches(c: &mut Criterion) {
    let pods = cluster();
    let (requested, chunks) = (
        REQUESTED.load(Ordering::Relaxed),
        CHUNKS.load(Ordering::Relaxed),
    );
    let index = fill(&pods);
    let held = (
        REQUESTED.load(Ordering::Relaxed) - requested,
        CHUNKS.load(Ordering::Relaxed) - chunks,
    );
    let n = pods.len();
    println!(
        "object cache: {n} pods, {} label sets: {} B requested ({:.1} B/pod), {} B as glibc chunks ({:.1} B/pod)",
        index.label_sets(),
        held.0,
        held.0 as f64 / n as f64,
        held.1,
        held.1 as f64 / n as f64,
    );

    let selector = label_selector("app.kubernetes.io/name=service-3,tier in (a,b,d)").unwrap();
    assert_eq!(
        index.select(Some("team-7"), &selector).len(),
        PODS_PER_DEPLOYMENT
    );
    c.bench_function("select/namespace_1000", |b| {
        b.iter(|| black_box(index.select(Some(black_box("team-7")), &selector)));
    });
    c.bench_function("apply/100k", |b| b.iter(|| black_box(fill(&pods))));
}

criterion_group!(object_cache, benches);
criterion_main!(object_cache);
