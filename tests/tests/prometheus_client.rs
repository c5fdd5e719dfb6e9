//! ferrocrane-core's Prometheus client against a real Prometheus holding known history.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ferrocrane_core::prometheus::{
    PrometheusClient, PrometheusConfig, PrometheusError, QueryResult,
};
use ferrocrane_e2e::HistoryPrometheus;

const STEP_S: i64 = 60;
const POINTS: i64 = 6 * 60; // six hours at one-minute resolution

/// Two series whose values encode their timestamps, so a merged range can be checked exactly.
fn history(end_s: i64) -> String {
    let start = end_s - (POINTS - 1) * STEP_S;
    let mut om =
        String::from("# HELP e2e_history_value Test history.\n# TYPE e2e_history_value gauge\n");
    for pod in ["a", "b"] {
        for i in 0..POINTS {
            let t = start + i * STEP_S;
            let v = if pod == "a" {
                i as f64
            } else {
                -(i as f64) / 2.0
            };
            let _ = writeln!(
                om,
                "e2e_history_value{{pod=\"{pod}\",namespace=\"ns1\"}} {v} {t}"
            );
        }
    }
    om.push_str("# EOF\n");
    om
}

fn at(s: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(s as u64)
}

#[tokio::test]
async fn range_queries_split_into_chunks_merge_back_exactly() -> Result<()> {
    // Aligned to the step and two hours back, inside a block promtool writes completely.
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end = (now / 3600) * 3600 - 3 * 3600;
    let prom = HistoryPrometheus::start(&history(end)).await?;

    let whole = PrometheusClient::from_url(prom.handle.url.as_str())?;
    let mut config = PrometheusConfig::new(prom.handle.url.as_str());
    config.max_points_per_query = 50; // 360 points -> 8 chunks
    config.max_in_flight = 3;
    let chunked = PrometheusClient::new(config)?;

    let start = end - (POINTS - 1) * STEP_S;
    let step = Duration::from_secs(STEP_S as u64);
    let q = "e2e_history_value";
    let mut a = whole.query_range(q, at(start), at(end), step).await?;
    let mut b = chunked.query_range(q, at(start), at(end), step).await?;
    a.sort_by(|x, y| x.labels.cmp(&y.labels));
    b.sort_by(|x, y| x.labels.cmp(&y.labels));
    assert_eq!(a.len(), 2);
    assert_eq!(a, b, "chunked and single range results differ");
    let series_a = a
        .iter()
        .find(|s| s.labels.get("pod").map(String::as_str) == Some("a"))
        .context("pod a")?;
    assert_eq!(series_a.samples.len(), POINTS as usize);
    for (i, sample) in series_a.samples.iter().enumerate() {
        assert_eq!(sample.timestamp_ms, (start + i as i64 * STEP_S) * 1000);
        assert_eq!(sample.value, i as f64);
    }

    // Instant query and series against the same history.
    let QueryResult::Vector(v) = whole.query("sum(e2e_history_value)", Some(at(end))).await? else {
        anyhow::bail!("sum() should return a vector");
    };
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].sample.value, (POINTS - 1) as f64 / 2.0);
    let series = whole
        .series(
            &["e2e_history_value".to_string()],
            Some(at(start)),
            Some(at(end)),
        )
        .await?;
    let mut pods: Vec<_> = series
        .iter()
        .filter_map(|l| l.get("pod").cloned())
        .collect();
    pods.sort();
    assert_eq!(pods, ["a", "b"]);

    // Prometheus' own error type and text come through.
    match whole.query("sum(", None).await {
        Err(PrometheusError::Api {
            error_type, error, ..
        }) => {
            assert_eq!(error_type, "bad_data");
            assert!(error.contains("parse error"), "{error}");
        }
        other => anyhow::bail!("expected a bad_data API error, got {other:?}"),
    }
    Ok(())
}
