//! ferrocrane-core's Prometheus client against a real Prometheus holding known history, and
//! against the query layers of docs/backends.md (VictoriaMetrics, Thanos Query over two
//! replicas) holding the same history: the same answers from each.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use ferrocrane_core::prometheus::{
    PrometheusClient, PrometheusConfig, PrometheusError, QueryResult,
};
use ferrocrane_e2e::{Backend, BackendKind, History, HistoryPrometheus};

const STEP_S: i64 = 60;
const POINTS: i64 = 6 * 60; // six hours at one-minute resolution

/// Two series whose values encode their timestamps, so a merged range can be checked exactly.
fn history(end_s: i64) -> History {
    let start = end_s - (POINTS - 1) * STEP_S;
    let mut history = History::new();
    for (pod, per_step) in [("a", 1.0), ("b", -0.5)] {
        let times = (0..POINTS).map(|i| start + i * STEP_S);
        history.series(
            "e2e_history_value",
            &format!("pod=\"{pod}\",namespace=\"ns1\""),
            times,
            |t| per_step * ((t - start) / STEP_S) as f64,
        );
    }
    history
}

fn at(s: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(s as u64)
}

/// Aligned to the step and two hours back, inside a block promtool writes completely.
fn history_end() -> Result<i64> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    Ok((now / 3600) * 3600 - 3 * 3600)
}

#[tokio::test]
async fn range_queries_split_into_chunks_merge_back_exactly() -> Result<()> {
    let end = history_end()?;
    let prom = HistoryPrometheus::start(&history(end)).await?;
    same_answers(&prom.handle.url, end, "parse error", None).await
}

#[tokio::test]
async fn victoria_metrics_gives_the_same_answers() -> Result<()> {
    let end = history_end()?;
    let vm = Backend::history(BackendKind::VictoriaMetrics, &history(end)).await?;
    // VictoriaMetrics refuses any query over -search.maxQueryLen (16 KiB by default), POST
    // or not (docs/backends.md): the error must say so in its own words.
    same_answers(
        &vm.url,
        end,
        "unexpected token",
        Some("-search.maxQueryLen"),
    )
    .await
}

#[tokio::test]
async fn thanos_over_two_replicas_gives_the_same_answers() -> Result<()> {
    let end = history_end()?;
    let thanos = Backend::history(BackendKind::Thanos, &history(end)).await?;
    same_answers(&thanos.url, end, "parse error", None).await
}

/// Chunked range queries merge back exactly, instant queries and series read the history,
/// a query too long for a URL goes as POST with the same answer (or, where the backend caps
/// query length, fails with an error containing `long_query_refusal`), a series limit below
/// the answer is an error (however the backend treats `limit`), and the backend's own error
/// type and text (`parse_error_text`) come through.
async fn same_answers(
    url: &str,
    end: i64,
    parse_error_text: &str,
    long_query_refusal: Option<&str>,
) -> Result<()> {
    let whole = PrometheusClient::from_url(url)?;
    let mut config = PrometheusConfig::new(url);
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

    // ~20 KiB of selector: sent as a POST form, answered as the short query is.
    let many: Vec<String> = (0..1000).map(|i| format!("pod-{i:04}-7d9f8c6b5")).collect();
    let long = format!("sum(e2e_history_value{{pod=~\"a|b|{}\"}})", many.join("|"));
    assert!(long.len() > 16 * 1024);
    match (whole.query(&long, Some(at(end))).await, long_query_refusal) {
        (Ok(QueryResult::Vector(lv)), None) => assert_eq!(lv, v, "the long query's answer"),
        (Err(PrometheusError::Api { error, .. }), Some(refusal)) => {
            eprintln!("{url}: a {} byte query: {error}", long.len());
            assert!(error.contains(refusal), "{error}");
        }
        (other, _) => anyhow::bail!("long query: unexpected {other:?}"),
    }

    // Two series under a limit of one: an error, whether the backend truncates (and warns)
    // or ignores `limit` and answers both.
    let limited = |n| {
        let mut c = PrometheusConfig::new(url);
        c.series_limit = Some(n);
        PrometheusClient::new(c)
    };
    let selector = ["e2e_history_value".to_string()];
    match limited(1)?
        .series(&selector, Some(at(start)), Some(at(end)))
        .await
    {
        Err(PrometheusError::SeriesTruncated {
            limit: Some(1),
            detail,
        }) => {
            eprintln!("{url}: a series limit of 1: {detail}");
        }
        other => anyhow::bail!("expected SeriesTruncated, got {other:?}"),
    }
    let two = limited(2)?
        .series(&selector, Some(at(start)), Some(at(end)))
        .await?;
    assert_eq!(two.len(), 2);

    // The backend's own error type and text come through.
    match whole.query("sum(", None).await {
        Err(PrometheusError::Api {
            error_type, error, ..
        }) => {
            eprintln!("{url}: sum( -> {error_type}: {error}");
            assert!(!error_type.is_empty());
            assert!(error.contains(parse_error_text), "{error}");
        }
        other => anyhow::bail!("expected an API error, got {other:?}"),
    }
    Ok(())
}
