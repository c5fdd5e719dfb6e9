//! craned's two ways of reading usage history give the same values (issue 15): on one real
//! Prometheus loaded with a day of irregular cAdvisor-style history — scrapes jittered by up to
//! 2 s, a 15-minute gap, a counter reset, a second copy of a container under another job, a
//! `POD` container and a pod of another workload that must not count — every workload's
//! history read with range queries (`--prometheus-remote-read=off`, what Crane does) equals,
//! bit for bit, the history read with remote read as chunks and as samples, for several
//! evaluation times and steps, two of them putting a sample exactly on the left edge of the
//! `irate` window and of the lookback. Prometheus' own request counters prove each path was the one used.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, ensure};
use ferrocrane_core::prometheus::PrometheusClient;
use ferrocrane_core::prometheus::remote_read::ReadFormat;
use ferrocrane_craned::datasource::{History, HistoryRead, Retry, UsageQueries, WorkloadHistory};
use ferrocrane_e2e::{History as OpenMetricsHistory, HistoryPrometheus};

const NAMESPACE: &str = "remote-read";
const SCRAPE_MS: i64 = 30_000;
const SPAN_MS: i64 = 26 * 3600 * 1000;

/// (kind, name, pods, containers) of the workloads read.
const WORKLOADS: [(&str, &str, &[&str], &[&str]); 2] = [
    (
        "Deployment",
        "web",
        &["web-7d9f8c-abcde", "web-7d9f8c-fghij"],
        &["app", "proxy"],
    ),
    ("StatefulSet", "db", &["db-0", "db-1"], &["db"]),
];

/// A small deterministic generator, so a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

fn seconds(ms: i64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// One series' samples: (timestamp ms, counter, gauge).
fn samples(rng: &mut Lcg, end_ms: i64, gap: bool, reset: bool) -> Vec<(i64, f64, f64)> {
    let mut out = Vec::new();
    let mut counter = 1000.0;
    let mut t = end_ms - SPAN_MS;
    let gap_at = end_ms - SPAN_MS / 2;
    while t <= end_ms {
        let jittered = t + i64::try_from(rng.next() % 2000).unwrap_or(0);
        t += SCRAPE_MS;
        if gap && (gap_at..gap_at + 15 * 60_000).contains(&jittered) {
            continue;
        }
        counter += (rng.next() % 3000) as f64 / 100.0;
        if reset && out.len() == 1500 {
            counter = 2.5;
        }
        let gauge = 1e8 + (rng.next() % 50_000_000) as f64;
        out.push((jittered, counter, gauge));
    }
    out
}

/// The OpenMetrics history, and the timestamps of the last two samples before the first
/// series' gap (for the window-edge cases).
fn history(end_ms: i64) -> (OpenMetricsHistory, [i64; 2]) {
    let mut rng = Lcg(15);
    let mut history = OpenMetricsHistory::new();
    let mut before_gap = Vec::new();
    let mut series = |labels: String, gap: bool, reset: bool| {
        let samples = samples(&mut rng, end_ms, gap, reset);
        if gap && before_gap.is_empty() {
            let gap_at = end_ms - SPAN_MS / 2;
            before_gap = samples
                .iter()
                .map(|s| s.0)
                .filter(|t| *t < gap_at)
                .collect();
        }
        for (t, counter, gauge) in samples {
            history.sample(
                "container_cpu_usage_seconds_total",
                &labels,
                counter,
                seconds(t),
            );
            history.sample(
                "container_memory_working_set_bytes",
                &labels,
                gauge,
                seconds(t),
            );
        }
    };
    for (_, _, pods, containers) in WORKLOADS {
        for (i, pod) in pods.iter().enumerate() {
            for c in containers {
                let labels = format!(r#"namespace="{NAMESPACE}",pod="{pod}",container="{c}""#);
                series(labels, i == 0, i == 1);
            }
        }
    }
    // A second copy of one container (another job): `max` picks per timestamp.
    series(
        format!(r#"namespace="{NAMESPACE}",pod="web-7d9f8c-abcde",container="app",job="cadvisor""#),
        false,
        false,
    );
    // Must not count: the pause container, and a pod the workload's regex does not match.
    series(
        format!(r#"namespace="{NAMESPACE}",pod="web-7d9f8c-abcde",container="POD""#),
        false,
        false,
    );
    series(
        format!(r#"namespace="{NAMESPACE}",pod="webhook-0",container="app""#),
        false,
        false,
    );
    let n = before_gap.len();
    (history, [before_gap[n - 2], before_gap[n - 1]])
}

async fn handler_requests(prometheus: &str, handler: &str) -> Result<f64> {
    let text = reqwest::get(format!("{prometheus}/metrics"))
        .await?
        .text()
        .await?;
    let wanted = format!("handler=\"{handler}\"");
    Ok(text
        .lines()
        .filter(|l| l.starts_with("prometheus_http_requests_total{") && l.contains(&wanted))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

async fn read_all(
    history: &History,
    cases: &[(SystemTime, Duration)],
) -> Result<Vec<WorkloadHistory>> {
    let mut out = Vec::new();
    for (kind, name, _, _) in WORKLOADS {
        let queries = UsageQueries::of(NAMESPACE, name, kind);
        for &(now, step) in cases {
            out.push(
                history
                    .workload(&queries, now, Duration::from_secs(24 * 3600), step)
                    .await
                    .with_context(|| format!("{kind} {name}"))?,
            );
        }
    }
    Ok(out)
}

#[tokio::test]
async fn remote_read_gives_the_range_queries_answers() -> Result<()> {
    let now_ms = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?;
    let end_ms = now_ms - now_ms % 60_000 - 60_000;
    let (history, [second_last, last]) = history(end_ms);
    let prometheus = HistoryPrometheus::start(&history).await?;
    let url = prometheus.handle.url.clone();
    let at = |ms: i64| UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    let cases = [
        (at(end_ms), Duration::from_secs(60)),
        (at(end_ms - 12_345), Duration::from_secs(60)),
        (at(end_ms - 12_345), Duration::from_secs(37)),
        // Before a gap, evaluations (the last point is `now`: 24 h is whole steps) whose
        // window starts exactly on a sample: irate's second sample, the lookback's only one.
        // Prometheus 2 counts it (`[t - range, t]`), Prometheus 3 does not.
        (at(second_last + 180_000), Duration::from_secs(60)),
        (at(last + 300_000), Duration::from_secs(30)),
    ];

    let reader = |read: HistoryRead| -> Result<History> {
        Ok(History::new(PrometheusClient::from_url(&url)?, 4, Retry::default()).reading(read))
    };
    let counts = || async {
        Ok::<_, anyhow::Error>((
            handler_requests(&url, "/api/v1/query_range").await?,
            handler_requests(&url, "/api/v1/read").await?,
        ))
    };

    let c0 = counts().await?;
    let ranged = read_all(&reader(HistoryRead::QueryRange)?, &cases).await?;
    let c1 = counts().await?;
    ensure!(
        c1.0 > c0.0 && c1.1 == c0.1,
        "range path: query_range {c0:?} → {c1:?}"
    );
    let points: usize = ranged
        .iter()
        .flat_map(|h| {
            h.cpu
                .containers
                .values()
                .chain(h.memory.containers.values())
        })
        .flatten()
        .map(|p| p.samples.len())
        .sum();
    ensure!(
        points > 10_000,
        "the range queries found too little: {points} points"
    );

    for format in [ReadFormat::Chunks, ReadFormat::Samples] {
        let c0 = counts().await?;
        let read = read_all(&reader(HistoryRead::RemoteRead(format))?, &cases).await?;
        let c1 = counts().await?;
        ensure!(
            c1.1 > c0.1 && c1.0 == c0.0,
            "{format:?}: remote read was not the path taken: (query_range, read) {c0:?} → {c1:?}"
        );
        for (i, (a, b)) in ranged.iter().zip(&read).enumerate() {
            if a != b {
                let first = a
                    .cpu
                    .containers
                    .iter()
                    .zip(&b.cpu.containers)
                    .find(|(x, y)| x != y)
                    .map(|(x, y)| format!("{x:?}\n vs\n{y:?}"));
                anyhow::bail!("{format:?}, case {i}: the histories differ\n{first:?}");
            }
        }
        println!(
            "{format:?}: {} workload histories ({points} points) equal to the range queries'",
            read.len()
        );
    }
    Ok(())
}
