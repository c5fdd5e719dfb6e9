//! ksm's `--server-side-sharding` (KEP-5866) against the real kube-apiserver: the shared
//! cluster runs with the ShardedListAndWatch gate (hack/local-up.sh), so each of three shards
//! receives only its own objects — the union of their output equals an unsharded ksm's, no
//! object is exported twice, and each shard's received-object counter is its share, where a
//! client-side shard receives everything. Then every test ConfigMap grows by 8 KiB, and the
//! bytes each shard receives for those watch events (the kernel's `bytes_received` of its TCP
//! connections) are its share of what the client-side shard receives. With the gate off, the
//! API server ignores the selector: the shard says so in its log and filters by itself, still
//! exporting exactly its range.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use ferrocrane_e2e::{Cluster, PrivateCluster, wait_until};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use ferrocrane_e2e::ksm::{Ksm, get, sample_lines, scrape, start_ksm};

const CONFIGMAPS: usize = 90;

fn configmap_lines(text: &str) -> BTreeSet<String> {
    sample_lines(text)
        .into_iter()
        .filter(|l| l.starts_with("kube_configmap_info{"))
        .collect()
}

async fn create_configmaps(client: &kube::Client, ns: &str) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    for i in 0..CONFIGMAPS {
        api.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}}))?,
        )
        .await?;
    }
    Ok(())
}

/// The configmap lines of each exporter once they hold still for a second and `settled`
/// accepts them.
async fn settled_lines(
    exporters: &[&Ksm],
    settled: impl Fn(&[BTreeSet<String>]) -> bool,
) -> Result<Vec<BTreeSet<String>>> {
    wait_until(
        "the exporters' config maps",
        Duration::from_secs(60),
        || async {
            let mut first = Vec::new();
            for e in exporters {
                first.push(configmap_lines(&scrape(&e.metrics).await?));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            let mut again = Vec::new();
            for e in exporters {
                again.push(configmap_lines(&scrape(&e.metrics).await?));
            }
            Ok((first == again && settled(&again)).then_some(again))
        },
    )
    .await
}

/// `kube_state_metrics_shard_objects_received_total{resource="*v1.ConfigMap",owned=...}`.
async fn received(ksm: &Ksm, owned: bool) -> Result<f64> {
    let text = get(&format!("http://{}/metrics", ksm.telemetry)).await?;
    let owned = format!("owned=\"{owned}\"");
    Ok(text
        .lines()
        .filter(|l| {
            l.starts_with("kube_state_metrics_shard_objects_received_total{")
                && l.contains("resource=\"*v1.ConfigMap\"")
                && l.contains(&owned)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// TCP payload bytes the process has received so far on its open connections, as the
/// kernel counts them (`bytes_received` of `ss -tinp`): for an exporter, essentially what the
/// API server sent it (its long-lived list and watch connections), plus the test's scrapes.
fn bytes_received(ksm: &Ksm) -> Result<u64> {
    let out = std::process::Command::new("ss")
        .args(["-tinpH", "state", "established"])
        .output()
        .context("running ss (iproute2; hack/setup.sh installs it)")?;
    ensure!(
        out.status.success(),
        "ss: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    let owner = format!("pid={},", ksm.process.pid());
    let mut total = 0;
    let mut ours = false;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            ours = line.contains(&owner);
        } else if ours {
            total += line
                .split_whitespace()
                .find_map(|f| f.strip_prefix("bytes_received:"))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Ok(total)
}

/// Adds `bytes` of data to every ConfigMap: one watch event each, of about that size.
async fn grow_configmaps(client: &kube::Client, ns: &str, bytes: usize) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let payload = "x".repeat(bytes);
    for i in 0..CONFIGMAPS {
        api.patch(
            &format!("cm-{i}"),
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"payload": payload}})),
        )
        .await?;
    }
    Ok(())
}

fn sharded(ns: &str, shard: usize, total: usize, server_side: bool) -> Vec<String> {
    let mut a = vec![
        "--resources=configmaps".to_string(),
        format!("--namespaces={ns}"),
        format!("--shard={shard}"),
        format!("--total-shards={total}"),
    ];
    if server_side {
        a.push("--server-side-sharding".into());
    }
    a
}

#[tokio::test(flavor = "multi_thread")]
async fn each_shard_receives_only_its_objects() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-sss").await?;
    let client = cluster.client().await?;
    create_configmaps(&client, &ns.name).await?;
    let n = ns.name.as_str();

    let whole = start_ksm(
        cluster,
        &["--resources=configmaps".into(), format!("--namespaces={n}")],
    )
    .await?;
    let mut shards = Vec::new();
    for i in 0..3 {
        shards.push(start_ksm(cluster, &sharded(n, i, 3, true)).await?);
    }
    let client_side = start_ksm(cluster, &sharded(n, 0, 3, false)).await?;

    let mut all: Vec<&Ksm> = vec![&whole];
    all.extend(shards.iter());
    let lines = settled_lines(&all, |l| l[0].len() > CONFIGMAPS).await?;
    let expected = &lines[0];
    let union: BTreeSet<String> = lines[1..].iter().flatten().cloned().collect();
    let total: usize = lines[1..].iter().map(BTreeSet::len).sum();
    ensure!(
        &union == expected,
        "the union of 3 shards differs from the whole"
    );
    ensure!(
        total == expected.len(),
        "an object was exported by two shards"
    );

    // Received objects: each server-side shard its share (never another's); the client-side
    // shard everything.
    let objects = expected.len() as f64;
    let mut shares = Vec::new();
    for s in &shards {
        let owned = received(s, true).await?;
        ensure!(
            received(s, false).await? == 0.0,
            "a server-side shard received another's object"
        );
        shares.push(owned);
    }
    let client_side_total =
        received(&client_side, true).await? + received(&client_side, false).await?;
    eprintln!(
        "{objects} configmaps: server-side shards received {shares:?}; a client-side shard received {client_side_total}"
    );
    ensure!(
        shares.iter().sum::<f64>() == objects,
        "{shares:?} of {objects}"
    );
    ensure!(
        shares.iter().all(|&s| s > 0.0 && s < objects * 0.6),
        "unbalanced: {shares:?}"
    );
    ensure!(
        client_side_total == objects,
        "{client_side_total} of {objects}"
    );

    // Watch bytes: every ConfigMap grows by 8 KiB; each exporter reads the events it is sent.
    let mut watchers: Vec<&Ksm> = shards.iter().collect();
    watchers.push(&client_side);
    let before = watchers
        .iter()
        .map(|k| bytes_received(k))
        .collect::<Result<Vec<_>>>()?;
    grow_configmaps(&client, n, 8 << 10).await?;
    let updates = CONFIGMAPS as f64;
    let events = wait_until(
        "every exporter received the updates",
        Duration::from_secs(60),
        || async {
            let mut events = Vec::new();
            for (s, share) in shards.iter().zip(&shares) {
                events.push(received(s, true).await? - share);
            }
            let client =
                received(&client_side, true).await? + received(&client_side, false).await?;
            let all_in = events.iter().sum::<f64>() == updates && client == objects + updates;
            Ok(all_in.then_some(events))
        },
    )
    .await?;
    let read: Vec<u64> = watchers
        .iter()
        .zip(&before)
        .map(|(k, b)| Ok(bytes_received(k)? - b))
        .collect::<Result<_>>()?;
    let (shard_bytes, client_bytes) = (&read[..3], read[3] as f64);
    let ratios: Vec<String> = shard_bytes
        .iter()
        .map(|&b| format!("{:.2}", b as f64 / client_bytes))
        .collect();
    eprintln!(
        "watch bytes for {updates} updates of 8 KiB (events per shard {events:?}): server-side shards {shard_bytes:?} ({} of the \
         client-side shard's), client-side shard {client_bytes}",
        ratios.join(" / ")
    );
    ensure!(
        client_bytes >= updates * 8192.0,
        "the client-side shard read {client_bytes} bytes for {updates} events of 8 KiB"
    );
    for (&b, events) in shard_bytes.iter().zip(&events) {
        // Its share of the events, plus the scrapes and headers every process reads.
        let expected = client_bytes * events / updates;
        ensure!(
            (b as f64) < expected * 1.25 + 16384.0 && (b as f64) > expected * 0.75,
            "a server-side shard sent {events} of {updates} events read {b} bytes; \
             the client-side shard read {client_bytes}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_feature_gate_a_shard_filters_by_itself_and_says_so() -> Result<()> {
    let private = PrivateCluster::start_with_apiserver_args(
        "ksm-sss-nogate",
        "--feature-gates=ShardedListAndWatch=false",
    )?;
    let cluster = &private.cluster;
    let client = cluster.client().await?;
    let n = "sss";
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": n}}))?,
        )
        .await?;
    create_configmaps(&client, n).await?;
    let whole = start_ksm(
        cluster,
        &["--resources=configmaps".into(), format!("--namespaces={n}")],
    )
    .await?;
    let halves = [
        start_ksm(cluster, &sharded(n, 0, 2, true)).await?,
        start_ksm(cluster, &sharded(n, 1, 2, true)).await?,
    ];
    let lines = settled_lines(&[&whole, &halves[0], &halves[1]], |l| {
        l[0].len() > CONFIGMAPS && !l[1].is_empty() && !l[2].is_empty()
    })
    .await?;
    ensure!(
        lines[1].union(&lines[2]).cloned().collect::<BTreeSet<_>>() == lines[0]
            && lines[1].len() + lines[2].len() == lines[0].len(),
        "the two halves do not add up to the whole"
    );
    for half in &halves {
        ensure!(
            received(half, false).await? > 0.0,
            "the API server filtered although its gate is off"
        );
        let logs = half.process.logs();
        ensure!(logs.contains("ignores shardSelector"), "{logs}");
    }
    Ok(())
}
