//! Keeping a mapping current: a background rediscovery that publishes each good result.

use std::{sync::Arc, time::Duration};

use ::kube::Client;
use tokio::{sync::watch, task::JoinHandle};

use super::ResourceMapper;
use crate::kube::KubeError;

/// A handle to the latest mapping, refreshed in the background by [`spawn_refresh`].
/// Cloning is cheap; lookups take a snapshot and never block the refresher.
#[derive(Debug, Clone)]
pub struct SharedMapper {
    rx: watch::Receiver<Arc<ResourceMapper>>,
}

impl SharedMapper {
    /// A mapper that never changes, for tests and for callers that discovered once.
    pub fn fixed(mapper: ResourceMapper) -> Self {
        let (tx, rx) = watch::channel(Arc::new(mapper));
        // Keeping the sender alive is unnecessary: receivers still read the last value.
        drop(tx);
        Self { rx }
    }

    /// The current snapshot (empty until the first successful discovery).
    pub fn current(&self) -> Arc<ResourceMapper> {
        self.rx.borrow().clone()
    }

    /// Waits until a snapshot from a successful discovery is available, e.g. to hold a
    /// readiness gate. Returns at once if one already is. Errors only if the refresher
    /// stopped before ever succeeding.
    pub async fn ready(&self) -> Result<Arc<ResourceMapper>, KubeError> {
        let mut rx = self.rx.clone();
        let snapshot = rx
            .wait_for(|m| !m.is_empty())
            .await
            .map_err(|_| KubeError::Discovery("resource mapper refresher stopped".into()))?;
        Ok(snapshot.clone())
    }

    /// Waits for the next refresh that changed the snapshot.
    pub async fn changed(&mut self) -> Result<Arc<ResourceMapper>, KubeError> {
        self.rx
            .changed()
            .await
            .map_err(|_| KubeError::Discovery("resource mapper refresher stopped".into()))?;
        Ok(self.rx.borrow_and_update().clone())
    }
}

/// Discovers now and then every `interval`, publishing each successful result. A failed run
/// is logged and the previous snapshot kept. The task ends when every [`SharedMapper`] clone
/// is dropped.
pub fn spawn_refresh(client: Client, interval: Duration) -> SharedMapper {
    spawn_refresh_with(interval, move || {
        let client = client.clone();
        async move { ResourceMapper::discover(&client).await }
    })
    .0
}

/// [`spawn_refresh`] with the discovery step supplied by the caller, which is how the refresh
/// policy is tested without an API server. Also returns the task handle.
pub fn spawn_refresh_with<F, Fut>(
    interval: Duration,
    mut discover: F,
) -> (SharedMapper, JoinHandle<()>)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<ResourceMapper, KubeError>> + Send + 'static,
{
    let (tx, rx) = watch::channel(Arc::new(ResourceMapper::default()));
    let handle = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(1)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = tx.closed() => return,
                _ = ticker.tick() => {}
            }
            match discover().await {
                Ok(mapper) => {
                    tracing::debug!(resources = mapper.all().len(), "resource mapping refreshed");
                    tx.send_if_modified(|current| {
                        if current.resources == mapper.resources
                            && current.failed_groups == mapper.failed_groups
                        {
                            false
                        } else {
                            *current = Arc::new(mapper);
                            true
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "resource discovery failed; keeping the last mapping");
                }
            }
        }
    });
    (SharedMapper { rx }, handle)
}
