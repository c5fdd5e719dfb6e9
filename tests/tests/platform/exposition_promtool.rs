//! The exposition writer checked by Prometheus' own linter, and scraped by a real Prometheus.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use ferrocrane_core::exposition::{
    Format, MetricFamily, MetricType, render_families, sample_document,
};
use ferrocrane_e2e::Cluster;

fn promtool_check(document: &[u8]) -> Result<std::process::Output> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context(
            "promtool not found: run hack/setup.sh (it installs Debian's prometheus package)",
        )?;
    child
        .stdin
        .take()
        .context("promtool stdin")?
        .write_all(document)?;
    Ok(child.wait_with_output()?)
}

#[test]
fn promtool_accepts_the_text_format_we_write() -> Result<()> {
    let out = promtool_check(&sample_document(Format::Text004))?;
    assert!(
        out.status.success(),
        "promtool rejected our text exposition:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[test]
fn promtool_rejects_a_broken_document() -> Result<()> {
    // Proves the check above can fail: a sample line with an unterminated label value.
    let out = promtool_check(b"# TYPE x gauge\nx{a=\"b} 1\n")?;
    assert!(!out.status.success(), "promtool accepted a broken document");
    Ok(())
}

/// Escaped label values and special floats survive a real scrape and come back identical.
#[tokio::test]
async fn prometheus_scrapes_escaped_labels_and_special_values() -> Result<()> {
    let cluster = Cluster::get()?;
    let prometheus = cluster.prometheus()?;
    let marker = format!("m{}", std::process::id());
    let tricky = "back\\slash \"quoted\"\nnew line ünï";
    let family = MetricFamily {
        name: "ferrocrane_e2e_exposition".into(),
        help: "Values the exposition e2e test serves.".into(),
        kind: MetricType::Gauge,
        metrics: vec![
            ferrocrane_core::exposition::Metric::new(
                vec!["marker".into(), "case".into(), "text".into()],
                vec![marker.clone(), "tricky".into(), tricky.into()],
                1.501569018e9,
            ),
            ferrocrane_core::exposition::Metric::new(
                vec!["marker".into(), "case".into(), "text".into()],
                vec![marker.clone(), "inf".into(), String::new()],
                f64::INFINITY,
            ),
        ],
    };
    let body = render_families(&[family], Format::Text004)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let body = body.clone();
            async move { ([("content-type", Format::Text004.content_type())], body) }
        }),
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let _target = prometheus.add_scrape_target("exposition", &addr.to_string(), "/metrics")?;

    let query = format!("ferrocrane_e2e_exposition{{marker=\"{marker}\"}}");
    let samples =
        ferrocrane_e2e::wait_until("both samples scraped", Duration::from_secs(60), || async {
            let s = prometheus.query(&query).await?;
            Ok((s.len() == 2).then_some(s))
        })
        .await?;
    let tricky_sample = samples
        .iter()
        .find(|s| s.labels["case"] == "tricky")
        .context("tricky sample")?;
    assert_eq!(tricky_sample.labels["text"], tricky);
    assert_eq!(tricky_sample.value, 1.501569018e9);
    let inf = samples
        .iter()
        .find(|s| s.labels["case"] == "inf")
        .context("inf sample")?;
    assert!(inf.value.is_infinite() && inf.value > 0.0);
    server.abort();
    Ok(())
}
