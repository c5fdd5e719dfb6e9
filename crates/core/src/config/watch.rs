//! Hot reload of a configuration file.
//!
//! Kubernetes mounts a ConfigMap as `config.yaml -> ..data/config.yaml` with `..data` a symlink to
//! a timestamped directory; an update writes a new directory and atomically renames a new `..data`
//! symlink over the old one. The file itself is never written, so a watch on the file (inotify on
//! its inode) sees nothing. We therefore watch the parent directory, where the rename shows up, and
//! decide whether anything changed by hashing the content reached through the path — which also
//! makes spurious events (other keys, editors' temp files) harmless. Because inotify can miss
//! events on some volume types (and is limited per user), a periodic poll backs it up.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use prometheus::{Gauge, IntCounterVec, Opts, Registry};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::load::{ConfigError, Validate, parse_and_validate_str, utf8_text};

/// How a [`ConfigWatcher`] notices and reports changes.
#[derive(Clone)]
pub struct WatchOptions {
    /// Quiet period after a file-system event before reading: a ConfigMap swap or an editor's
    /// save is several events, and reading mid-write would report a spurious failure.
    pub debounce: Duration,
    /// Re-check the content hash this often regardless of events; `None` disables polling.
    pub poll_interval: Option<Duration>,
    /// Use file-system notifications (inotify). Turning this off leaves only polling, for volumes
    /// where notifications are known not to work.
    pub use_fs_events: bool,
    /// Where to register reload self-metrics, and their name prefix (e.g. `ksm`).
    pub metrics: Option<(Registry, String)>,
}

impl Default for WatchOptions {
    /// 250 ms debounce, 30 s poll (well under the kubelet's ~1 min ConfigMap sync), events on.
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_millis(250),
            poll_interval: Some(Duration::from_secs(30)),
            use_fs_events: true,
            metrics: None,
        }
    }
}

impl std::fmt::Debug for WatchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchOptions")
            .field("debounce", &self.debounce)
            .field("poll_interval", &self.poll_interval)
            .field("use_fs_events", &self.use_fs_events)
            .field(
                "metrics_namespace",
                &self.metrics.as_ref().map(|(_, ns)| ns),
            )
            .finish()
    }
}

/// What the last reload attempts did; published on every attempt so readiness checks and tests
/// can react to failures, not only to new configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadStatus {
    /// Whether the most recent load (initial or reload) was applied.
    pub last_reload_successful: bool,
    /// When a config was last applied (the initial load counts).
    pub last_success: SystemTime,
    /// The error of the most recent failed attempt, kept until the next success.
    pub last_error: Option<String>,
    /// Reloads applied / rejected since start; the initial load is not counted.
    pub successes: u64,
    pub failures: u64,
    /// Hash of the content of the config in effect.
    pub content_hash: u64,
}

/// The file's state as last examined, so an unchanged file (good or bad) is not re-parsed and a
/// persistently broken file counts as one failure, not one per poll.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Content(u64),
    Unreadable(String),
}

enum Trigger {
    FsEvent,
    Manual,
}

type Loader<T> = dyn Fn(&str, Vec<u8>) -> Result<T, ConfigError> + Send + Sync;

/// A configuration file kept up to date. Readers take cheap [`Arc`] snapshots with
/// [`ConfigWatcher::current`] or await changes on [`ConfigWatcher::subscribe`]; a reload that
/// fails to read, parse or validate is logged, counted and otherwise ignored, so the service keeps
/// running on its last good configuration. Dropping the watcher stops watching.
pub struct ConfigWatcher<T> {
    config: watch::Receiver<Arc<T>>,
    status: watch::Receiver<ReloadStatus>,
    trigger: mpsc::UnboundedSender<Trigger>,
    task: JoinHandle<()>,
    _fs_watcher: Option<RecommendedWatcher>,
}

impl<T> std::fmt::Debug for ConfigWatcher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatcher")
            .field("status", &*self.status.borrow())
            .finish_non_exhaustive()
    }
}

impl<T> Drop for ConfigWatcher<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<T: DeserializeOwned + Validate + Send + Sync + 'static> ConfigWatcher<T> {
    /// Loads `path` as strict YAML, validates it, and starts watching. Fails if the initial load
    /// fails: a service must not start without a valid config. Must run inside a Tokio runtime.
    pub fn start(path: impl AsRef<Path>, options: WatchOptions) -> Result<Self, ConfigError> {
        Self::start_with(path, options, |name, bytes| {
            parse_and_validate_str(name, &utf8_text(name, bytes)?)
        })
    }
}

impl<T: Send + Sync + 'static> ConfigWatcher<T> {
    /// Like [`ConfigWatcher::start`] with a custom `loader(file name, content)`, for formats or
    /// post-processing (compiling regexes, resolving templates) beyond plain YAML + validate.
    pub fn start_with<F>(
        path: impl AsRef<Path>,
        options: WatchOptions,
        loader: F,
    ) -> Result<Self, ConfigError>
    where
        F: Fn(&str, Vec<u8>) -> Result<T, ConfigError> + Send + Sync + 'static,
    {
        let path = path.as_ref().to_owned();
        let name = path.display().to_string();
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ConfigError::Watch {
            path: path.clone(),
            reason: "ConfigWatcher must be started inside a Tokio runtime".into(),
        })?;

        let bytes = std::fs::read(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let hash = content_hash(&bytes);
        let initial = loader(&name, bytes)?;

        let metrics = match &options.metrics {
            Some((registry, ns)) => Some(ReloadMetrics::register(registry, ns, &name)?),
            None => None,
        };
        let now = SystemTime::now();
        if let Some(m) = &metrics {
            m.success(now);
        }
        let (config_tx, config_rx) = watch::channel(Arc::new(initial));
        let (status_tx, status_rx) = watch::channel(ReloadStatus {
            last_reload_successful: true,
            last_success: now,
            last_error: None,
            successes: 0,
            failures: 0,
            content_hash: hash,
        });
        let (trigger_tx, trigger_rx) = mpsc::unbounded_channel();

        let fs_watcher = if options.use_fs_events {
            match watch_directory(&path, trigger_tx.clone()) {
                Ok(w) => Some(w),
                Err(e) if options.poll_interval.is_some() => {
                    tracing::warn!(file = %name, error = %e, "file-system events unavailable; relying on polling");
                    None
                }
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        if fs_watcher.is_none() && options.poll_interval.is_none() {
            tracing::warn!(file = %name, "config hot reload disabled: no events and no polling");
        }

        let state = ReloadLoop {
            path,
            name,
            loader: Box::new(loader),
            seen: Seen::Content(hash),
            config_tx,
            status_tx,
            metrics,
        };
        let task = runtime.spawn(state.run(trigger_rx, options.debounce, options.poll_interval));
        Ok(ConfigWatcher {
            config: config_rx,
            status: status_rx,
            trigger: trigger_tx,
            task,
            _fs_watcher: fs_watcher,
        })
    }

    /// The configuration in effect. Cheap; hold the `Arc` for the duration of one unit of work
    /// so it sees one consistent config.
    pub fn current(&self) -> Arc<T> {
        self.config.borrow().clone()
    }

    /// A receiver that is notified whenever a new configuration is applied.
    pub fn subscribe(&self) -> watch::Receiver<Arc<T>> {
        self.config.clone()
    }

    /// Outcome of the most recent attempts.
    pub fn status(&self) -> ReloadStatus {
        self.status.borrow().clone()
    }

    /// A receiver notified after every reload attempt, successful or not.
    pub fn subscribe_status(&self) -> watch::Receiver<ReloadStatus> {
        self.status.clone()
    }

    /// Checks the file now, skipping the debounce (e.g. on SIGHUP). Returns immediately; watch
    /// [`ConfigWatcher::subscribe_status`] for the outcome.
    pub fn reload(&self) {
        // Fails only if the loop has ended, in which case there is nothing to reload.
        let _ = self.trigger.send(Trigger::Manual);
    }
}

fn content_hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Watches the directory holding `path` (see the module docs for why not the file).
fn watch_directory(
    path: &Path,
    trigger: mpsc::UnboundedSender<Trigger>,
) -> Result<RecommendedWatcher, ConfigError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let err = |e: notify::Error| ConfigError::Watch {
        path: dir.clone(),
        reason: e.to_string(),
    };
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        match &res {
            Ok(event) if !is_change(&event.kind) => return,
            Ok(_) => {}
            // Backend errors (queue overflow) warrant a re-check: events may have been lost.
            Err(e) => tracing::debug!(error = %e, "file watch error; re-checking config"),
        }
        let _ = trigger.send(Trigger::FsEvent);
    })
    .map_err(err)?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(err)?;
    Ok(watcher)
}

/// Whether an event can mean the content changed. inotify also reports opens and reads, including
/// our own read of the file, which would otherwise re-trigger a check after every check forever.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

struct ReloadLoop<T> {
    path: PathBuf,
    name: String,
    loader: Box<Loader<T>>,
    seen: Seen,
    config_tx: watch::Sender<Arc<T>>,
    status_tx: watch::Sender<ReloadStatus>,
    metrics: Option<ReloadMetrics>,
}

impl<T: Send + Sync + 'static> ReloadLoop<T> {
    async fn run(
        mut self,
        mut triggers: mpsc::UnboundedReceiver<Trigger>,
        debounce: Duration,
        poll_interval: Option<Duration>,
    ) {
        let mut poll = poll_interval.map(|p| {
            let mut i = tokio::time::interval_at(tokio::time::Instant::now() + p, p);
            i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            i
        });
        loop {
            let polled = async {
                match poll.as_mut() {
                    Some(i) => {
                        i.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                t = triggers.recv() => match t {
                    None => return,
                    Some(Trigger::Manual) => {}
                    Some(Trigger::FsEvent) => {
                        // Wait for a quiet period; further events restart it.
                        loop {
                            match tokio::time::timeout(debounce, triggers.recv()).await {
                                Ok(Some(_)) => continue,
                                Ok(None) => return,
                                Err(_) => break,
                            }
                        }
                    }
                },
                _ = polled => {}
            }
            self.check().await;
        }
    }

    async fn check(&mut self) {
        let bytes = match tokio::fs::read(&self.path).await {
            Ok(b) => b,
            Err(e) => {
                let seen = Seen::Unreadable(e.kind().to_string());
                if seen != self.seen {
                    self.seen = seen;
                    self.failed(ConfigError::Read {
                        path: self.path.clone(),
                        source: e,
                    });
                }
                return;
            }
        };
        let hash = content_hash(&bytes);
        if self.seen == Seen::Content(hash) {
            return;
        }
        self.seen = Seen::Content(hash);
        match (self.loader)(&self.name, bytes) {
            Ok(config) => {
                let now = SystemTime::now();
                self.config_tx.send_replace(Arc::new(config));
                self.status_tx.send_modify(|s| {
                    s.last_reload_successful = true;
                    s.last_success = now;
                    s.last_error = None;
                    s.successes += 1;
                    s.content_hash = hash;
                });
                if let Some(m) = &self.metrics {
                    m.success(now);
                    m.reloads.with_label_values(&["success"]).inc();
                }
                tracing::info!(file = %self.name, "configuration reloaded");
            }
            Err(e) => self.failed(e),
        }
    }

    fn failed(&mut self, e: ConfigError) {
        // ConfigError's Display already names the file (and line/key where known).
        tracing::error!(file = %self.name, error = %e, "configuration reload failed; keeping the last good configuration");
        let msg = e.to_string();
        self.status_tx.send_modify(|s| {
            s.last_reload_successful = false;
            s.last_error = Some(msg);
            s.failures += 1;
        });
        if let Some(m) = &self.metrics {
            m.successful.set(0.0);
            m.reloads.with_label_values(&["failure"]).inc();
        }
    }
}

/// Reload self-metrics, named after Prometheus' own `prometheus_config_*` so existing alerts and
/// dashboards translate by swapping the prefix. A `filename` const label keeps several watched
/// files in one registry apart.
struct ReloadMetrics {
    successful: Gauge,
    success_timestamp: Gauge,
    reloads: IntCounterVec,
}

impl ReloadMetrics {
    fn register(registry: &Registry, namespace: &str, file: &str) -> Result<Self, ConfigError> {
        let ns = namespace.trim_end_matches('_');
        let err = |e: prometheus::Error| ConfigError::Metrics(e.to_string());
        let opts = |name: &str, help: &str| {
            Opts::new(name, help)
                .namespace(ns)
                .const_label("filename", file)
        };
        let successful = Gauge::with_opts(opts(
            "config_last_reload_successful",
            "Whether the last configuration load or reload attempt was successful.",
        ))
        .map_err(err)?;
        let success_timestamp = Gauge::with_opts(opts(
            "config_last_reload_success_timestamp_seconds",
            "Timestamp of the last successful configuration load or reload.",
        ))
        .map_err(err)?;
        let reloads = IntCounterVec::new(
            opts(
                "config_reloads_total",
                "Configuration reload attempts after startup, by result.",
            ),
            &["result"],
        )
        .map_err(err)?;
        // Both series exist from the start so rate() and absent() behave before the first reload.
        reloads.with_label_values(&["success"]);
        reloads.with_label_values(&["failure"]);
        registry
            .register(Box::new(successful.clone()))
            .map_err(err)?;
        registry
            .register(Box::new(success_timestamp.clone()))
            .map_err(err)?;
        registry.register(Box::new(reloads.clone())).map_err(err)?;
        Ok(ReloadMetrics {
            successful,
            success_timestamp,
            reloads,
        })
    }

    fn success(&self, at: SystemTime) {
        self.successful.set(1.0);
        let secs = at
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        self.success_timestamp.set(secs);
    }
}

#[cfg(test)]
mod tests;
