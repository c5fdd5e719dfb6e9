//! Hundreds of hostile clients against each listener of the three services, on the real
//! control plane (issue 13): connections that send nothing, half a request head, or a head a
//! byte every 200 ms, each reconnecting as soon as the server drops it. Meanwhile a normal
//! client's p99 must stay within 2× of its idle value (plus 5 ms, below which the
//! comparison measures the scheduler of a two-core machine, not the server), and the server
//! must be the one ending the hostile connections (its header-read or TLS handshake timeout).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::ksm::start_ksm;
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, ClusterLock, METRICS_APISERVICES_LOCK, craned::CranedLaunch,
    http_client, repo_root, wait_until,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HOSTILE_PER_KIND: usize = 100;
const REQUESTS: usize = 200;

#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// Connects and sends nothing (for TLS: no ClientHello).
    Silent,
    /// Sends half a request head, then nothing.
    HalfHead,
    /// Sends a request head one byte every 200 ms, never finishing.
    Trickle,
}

/// Runs one hostile client until `stop`, reconnecting whenever the server closes; counts the
/// closes in `dropped`, and itself in `stalling` once its first connection is open and stalled.
async fn hostile(
    addr: SocketAddr,
    kind: Hostile,
    stop: Arc<AtomicBool>,
    dropped: Arc<AtomicUsize>,
    ended_once: Arc<AtomicBool>,
    stalling: Arc<AtomicUsize>,
) {
    let mut counted = false;
    let mut stalled = || {
        if !std::mem::replace(&mut counted, true) {
            stalling.fetch_add(1, Ordering::Relaxed);
        }
    };
    const HEAD: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut conn) = TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let mut buf = [0u8; 1024];
        let closed = match kind {
            Hostile::Silent => {
                stalled();
                wait_closed(&mut conn, &mut buf, &stop).await
            }
            Hostile::HalfHead => {
                let _ = conn.write_all(&HEAD[..HEAD.len() / 2]).await;
                stalled();
                wait_closed(&mut conn, &mut buf, &stop).await
            }
            Hostile::Trickle => {
                let mut closed = false;
                for byte in HEAD.iter().cycle() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if conn.write_all(std::slice::from_ref(byte)).await.is_err() {
                        closed = true;
                        break;
                    }
                    stalled();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                closed
            }
        };
        if closed {
            dropped.fetch_add(1, Ordering::Relaxed);
            ended_once.store(true, Ordering::Relaxed);
        }
    }
}

/// Reads until the server closes (true) or the test stops (false).
async fn wait_closed(conn: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> bool {
    while !stop.load(Ordering::Relaxed) {
        match tokio::time::timeout(Duration::from_millis(200), conn.read(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) | Err(_) => {}
        }
    }
    false
}

/// p99 of `REQUESTS` sequential GETs of `url`, each required to succeed.
async fn p99(client: &reqwest::Client, url: &str) -> Result<Duration> {
    let mut took = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        let started = Instant::now();
        let resp = client
            .get(url)
            .send()
            .await
            .with_context(|| format!("GET {url}"))?;
        let status = resp.status();
        resp.bytes().await?;
        if !status.is_success() {
            bail!("GET {url}: {status}");
        }
        took.push(started.elapsed());
    }
    took.sort();
    Ok(took[REQUESTS * 99 / 100 - 1])
}

struct Figures {
    idle: Duration,
    loaded: Duration,
    /// Hostile connections the server ended, reconnections included.
    dropped: usize,
    /// Hostile clients whose connection the server ended at least once.
    ended_once: usize,
}

/// The normal client's p99 idle, then under `HOSTILE_PER_KIND` clients of each `kinds`.
async fn measure(
    client: &reqwest::Client,
    url: &str,
    addr: SocketAddr,
    kinds: &[Hostile],
) -> Result<Figures> {
    // Warm: connections, lazily built state.
    p99(client, url).await?;
    let idle = p99(client, url).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicUsize::new(0));
    let stalling = Arc::new(AtomicUsize::new(0));
    let ended: Vec<Arc<AtomicBool>> = (0..kinds.len() * HOSTILE_PER_KIND)
        .map(|_| Arc::new(AtomicBool::new(false)))
        .collect();
    let tasks: Vec<_> = kinds
        .iter()
        .flat_map(|k| std::iter::repeat_n(*k, HOSTILE_PER_KIND))
        .zip(&ended)
        .map(|(k, e)| {
            let task = hostile(
                addr,
                k,
                stop.clone(),
                dropped.clone(),
                e.clone(),
                stalling.clone(),
            );
            tokio::spawn(task)
        })
        .collect();
    // Every hostile client connected and stalled before the normal one measures.
    let hostiles = ended.len();
    wait_until(
        "every hostile client stalling",
        Duration::from_secs(30),
        || {
            let n = stalling.load(Ordering::Relaxed);
            async move { Ok((n >= hostiles).then_some(())) }
        },
    )
    .await?;
    // Then the connection burst is let to settle, as before the wait above existed: the figure
    // is the steady state beside stalled clients, not the server accepting 300 of them (one
    // run measured craned's p99 at 4.98× idle right after the burst).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let loaded = p99(client, url).await;
    // Until the server's timeouts (ksm 5 s, the others 10 s) have ended each hostile client's
    // connection at least once, or 40 s.
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline && !ended.iter().all(|e| e.load(Ordering::Relaxed)) {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let ended_once = ended.iter().filter(|e| e.load(Ordering::Relaxed)).count();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    Ok(Figures {
        idle,
        loaded: loaded?,
        dropped: dropped.load(Ordering::Relaxed),
        ended_once,
    })
}

fn judge(name: &str, kinds: &[Hostile], f: &Figures) -> Result<()> {
    println!(
        "slow clients vs {name}: {} hostile ({kinds:?}), normal client p99 idle {:.2} ms, loaded {:.2} ms ({:.2}×), hostile connections ended by the server {} ({} of the clients at least once)",
        kinds.len() * HOSTILE_PER_KIND,
        f.idle.as_secs_f64() * 1e3,
        f.loaded.as_secs_f64() * 1e3,
        f.loaded.as_secs_f64() / f.idle.as_secs_f64().max(1e-9),
        f.dropped,
        f.ended_once,
    );
    if f.loaded > f.idle * 2 + Duration::from_millis(5) {
        bail!(
            "{name}: p99 {:?} under slow clients, idle {:?}",
            f.loaded,
            f.idle
        );
    }
    // As many ends as hostile clients at least: the server's timeouts are what cut them (a
    // few clients may be caught reconnecting when the window closes, so not every single one).
    if f.dropped < kinds.len() * HOSTILE_PER_KIND {
        bail!(
            "{name}: the server ended only {} connections of {} hostile clients in 40 s",
            f.dropped,
            kinds.len() * HOSTILE_PER_KIND
        );
    }
    Ok(())
}

fn addr_of(host_port: &str) -> Result<SocketAddr> {
    Ok(host_port.parse()?)
}

const PLAIN: &[Hostile] = &[Hostile::Silent, Hostile::HalfHead, Hostile::Trickle];

async fn ksm_listeners_hold_under_slow_clients(cluster: &Cluster) -> Result<()> {
    let ksm = start_ksm(cluster, &["--resources=namespaces,nodes".to_string()]).await?;
    let client = http_client()?;
    for (name, addr) in [
        ("ksm /metrics", &ksm.metrics),
        ("ksm telemetry", &ksm.telemetry),
    ] {
        let url = format!("http://{addr}/metrics");
        let f = measure(&client, &url, addr_of(addr)?, PLAIN).await?;
        judge(name, PLAIN, &f)?;
    }
    Ok(())
}

async fn craned_listeners_hold_under_slow_clients(cluster: &Cluster) -> Result<()> {
    let ns = cluster.namespace("slow-craned").await?;
    let launch = CranedLaunch::example(cluster, &ns.name)?;
    let (metrics_port, health_port) = (launch.metrics_port(), launch.health_port());
    let mut craned = launch.start().await?;
    let client = http_client()?;
    for (name, port, path) in [
        ("craned metrics", metrics_port, "/metrics"),
        ("craned probes", health_port, "/readyz"),
    ] {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let f = measure(&client, &format!("http://{addr}{path}"), addr, PLAIN).await?;
        judge(name, PLAIN, &f)?;
    }
    craned.ensure_running()?;
    Ok(())
}

async fn adapter_listener_holds_under_slow_clients(cluster: &Cluster) -> Result<()> {
    let _lock =
        ClusterLock::acquire(cluster, METRICS_APISERVICES_LOCK, Duration::from_secs(600)).await?;
    let ns = cluster.namespace("slow-adapter").await?;
    let config = std::fs::read_to_string(repo_root().join("config/adapter/default-config.yaml"))?;
    let adapter = AdapterLaunch::new(&config)
        .behind_aggregator(cluster, &ns.name)
        .await?;
    let host = format!("metrics-adapter.{}.svc", ns.name);
    let addr = SocketAddr::from(([127, 0, 0, 1], adapter.port));
    let client = ferrocrane_e2e::adapter_https_client_resolving(
        cluster,
        &adapter.ca,
        false,
        Some((&host, addr)),
    )?;
    // TLS: a client that never sends its ClientHello is what can hold a connection; plain
    // bytes are not a TLS record and end at once.
    let kinds = &[Hostile::Silent, Hostile::Silent, Hostile::Silent];
    let f = measure(
        &client,
        &format!("https://{host}:{}/readyz", adapter.port),
        addr,
        kinds,
    )
    .await?;
    judge("metrics-adapter", kinds, &f)
}

/// One after the other: each measurement must have the machine to itself.
#[tokio::test(flavor = "multi_thread")]
async fn every_listener_holds_under_slow_clients() -> Result<()> {
    let cluster = Cluster::get()?;
    ksm_listeners_hold_under_slow_clients(cluster).await?;
    craned_listeners_hold_under_slow_clients(cluster).await?;
    adapter_listener_holds_under_slow_clients(cluster).await
}
