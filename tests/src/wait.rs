//! Polling with a deadline: the cluster is eventually consistent, so tests wait for a
//! condition instead of sleeping a guessed amount.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

/// Polls `probe` until it returns `Ok(Some(v))`, or fails after `timeout` with the last
/// error or "still None" so the failure says what was being waited for.
pub async fn wait_until<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    let mut last = String::from("condition never held");
    loop {
        match probe().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last = format!("{e:#}"),
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}: {last}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until `url` answers 2xx (a process' readiness endpoint).
pub async fn wait_http_ok(url: &str, timeout: Duration) -> Result<()> {
    let http = crate::process::http_client()?;
    wait_until(&format!("{url} to answer 2xx"), timeout, || async {
        Ok(http
            .get(url)
            .send()
            .await
            .ok()
            .filter(|r| r.status().is_success())
            .map(|_| ()))
    })
    .await
}
