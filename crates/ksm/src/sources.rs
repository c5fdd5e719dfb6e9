//! Where the running [`EngineSpec`] comes from, and how it follows changes without a restart:
//!
//! * `--config`: watched with ferrocrane-core's `ConfigWatcher`; every valid edit is merged
//!   over the original flags (see `options`) and applied; a bad edit keeps the last good
//!   options, is logged with file and key, and sets
//!   `kube_state_metrics_last_config_reload_successful{type="config"}` to 0.
//! * `--custom-resource-state-config-file`: the same, `type="customresourceconfig"`.
//! * `--pod`/`--pod-namespace`: the pod's StatefulSet is watched and the shard total follows
//!   its replicas.
//!
//! Upstream restarts its whole process for each of these; here the watchers are rebuilt and
//! the listeners stay up (settings only a restart can apply are logged, see
//! [`Options::restart_required_changes`]).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use ferrocrane_core::config::{ConfigError, ConfigWatcher, WatchOptions, utf8_text};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::custom_resource::CustomResourceStateConfig;
use crate::options::{Args, CustomResourceConfig, Options, ShardingMode, config_loader};
use crate::runtime::EngineSpec;
use crate::sharding::{Sharding, auto_sharding};
use crate::telemetry::{ConfigKind, Telemetry};
use crate::watch::ListSettings;

/// How often a config file that could not be loaded at all (missing, or invalid at start
/// with `--continue-without-*`) is tried again. Once loaded, changes are noticed by
/// file-system events within the watcher's debounce.
const RETRY_INTERVAL: Duration = Duration::from_secs(2);

/// Aborts a background task when dropped.
struct Task(JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A value that may change: its receiver, and whatever keeps it updated.
struct Source<T> {
    rx: watch::Receiver<T>,
    _task: Option<Task>,
}

impl<T: Clone + Send + Sync + 'static> Source<T> {
    /// A value that never changes.
    fn fixed(value: T) -> Self {
        // With the sender dropped, `changed()` fails at once, which `next_change` turns
        // into "never".
        let (_, rx) = watch::channel(value);
        Source { rx, _task: None }
    }

    fn current(&self) -> T {
        self.rx.borrow().clone()
    }
}

/// Waits for the next change; never returns once the sender is gone.
async fn next_change<T>(rx: &mut watch::Receiver<T>) {
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Watches a config file with `ConfigWatcher`, publishing every applied version (`None`
/// until a first successful load) and recording each attempt in the telemetry.
///
/// The first attempt is made here; its failure is returned unless `tolerate` accepts it,
/// in which case the file is tried again every [`RETRY_INTERVAL`] until it loads.
fn watch_file<T, F>(
    path: &Path,
    kind: ConfigKind,
    loader: F,
    telemetry: &Telemetry,
    tolerate: impl Fn(&ConfigError) -> bool,
) -> Result<Source<Option<Arc<T>>>, ConfigError>
where
    T: Send + Sync + 'static,
    F: Fn(&str, Vec<u8>) -> Result<T, ConfigError> + Send + Sync + 'static,
{
    let loader = Arc::new(loader);
    let path = path.to_owned();
    let name = path.display().to_string();
    let start = {
        let path = path.clone();
        move || {
            let loader = loader.clone();
            ConfigWatcher::start_with(&path, watch_options(), move |n, b| loader(n, b))
        }
    };
    let first = match start() {
        Ok(w) => {
            telemetry.config_loaded(kind, &name, SystemTime::now(), w.status().content_hash);
            Some(w)
        }
        Err(e) if tolerate(&e) => {
            tracing::warn!(file = %name, error = %e, "configuration not loaded; will keep trying");
            telemetry.config_failed(kind, &name);
            None
        }
        Err(e) => return Err(e),
    };
    let (tx, rx) = watch::channel(first.as_ref().map(|w| w.current()));
    let telemetry = telemetry.clone();
    let task = tokio::spawn(async move {
        let mut watcher = first;
        let mut last_error = String::new();
        loop {
            let w = match watcher.take() {
                Some(w) => w,
                None => {
                    tokio::time::sleep(RETRY_INTERVAL).await;
                    match start() {
                        Ok(w) => {
                            tracing::info!(file = %name, "configuration loaded");
                            telemetry.config_loaded(
                                kind,
                                &name,
                                SystemTime::now(),
                                w.status().content_hash,
                            );
                            tx.send_replace(Some(w.current()));
                            w
                        }
                        Err(e) => {
                            let msg = e.to_string();
                            if msg != last_error {
                                tracing::error!(file = %name, error = %msg, "configuration still not loadable");
                                last_error = msg;
                            }
                            continue;
                        }
                    }
                }
            };
            let mut config = w.subscribe();
            let mut status = w.subscribe_status();
            loop {
                tokio::select! {
                    r = config.changed() => {
                        if r.is_err() { break; }
                        tx.send_replace(Some(config.borrow_and_update().clone()));
                    }
                    r = status.changed() => {
                        if r.is_err() { break; }
                        let s = status.borrow_and_update().clone();
                        if s.last_reload_successful {
                            telemetry.config_loaded(kind, &name, s.last_success, s.content_hash);
                        } else {
                            // ConfigWatcher has logged the error with file and key.
                            telemetry.config_failed(kind, &name);
                        }
                    }
                }
            }
            tracing::warn!(file = %name, "config watcher stopped; restarting it");
        }
    });
    Ok(Source {
        rx,
        _task: Some(Task(task)),
    })
}

fn watch_options() -> WatchOptions {
    WatchOptions {
        // Events do the work; the poll covers volumes where they are lost.
        poll_interval: Some(Duration::from_secs(10)),
        // Upstream-named metrics are kept by `Telemetry` instead.
        metrics: None,
        ..WatchOptions::default()
    }
}

/// The custom resource state configuration a set of options asks for.
fn custom_resource_source(
    config: &CustomResourceConfig,
    telemetry: &Telemetry,
) -> Result<Source<Option<Arc<CustomResourceStateConfig>>>, ConfigError> {
    match config {
        CustomResourceConfig::None => Ok(Source::fixed(None)),
        CustomResourceConfig::Inline(text) => Ok(Source::fixed(Some(Arc::new(
            CustomResourceStateConfig::parse("--custom-resource-state-config", text)?,
        )))),
        CustomResourceConfig::File {
            path,
            continue_if_missing,
        } => {
            let continue_if_missing = *continue_if_missing;
            watch_file(
                path,
                ConfigKind::CustomResourceState,
                |name, bytes| CustomResourceStateConfig::parse(name, &utf8_text(name, bytes)?),
                telemetry,
                // As upstream: only a missing file may be waited for.
                move |e| {
                    continue_if_missing
                        && matches!(e, ConfigError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
                },
            )
        }
    }
}

/// `--pod`/`--pod-namespace`: reads the pod's StatefulSet now (an error stops startup),
/// then follows its replicas.
async fn sharding_source(client: &kube::Client, mode: &ShardingMode) -> Result<Source<Sharding>> {
    let (pod, namespace) = match mode {
        ShardingMode::Static(s) => return Ok(Source::fixed(*s)),
        ShardingMode::Auto { pod, namespace } => (pod.clone(), namespace.clone()),
    };
    let pod_obj = kube::Api::<Pod>::namespaced(client.clone(), &namespace)
        .get(&pod)
        .await
        .with_context(|| format!("--pod={pod}: reading the pod for auto-sharding"))?;
    let owner = pod_obj
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "StatefulSet")
        .with_context(|| format!("--pod={pod}: not owned by a StatefulSet, cannot auto-shard"))?
        .name
        .clone();
    let api = kube::Api::<StatefulSet>::namespaced(client.clone(), &namespace);
    let sts = api.get(&owner).await.with_context(|| {
        format!("--pod={pod}: reading StatefulSet {namespace}/{owner} for auto-sharding")
    })?;
    let initial = auto_sharding(&owner, sts.spec.replicas, &pod)?;
    tracing::info!(statefulset = %owner, shard = initial.shard, total = initial.total, "auto-sharding");
    let (tx, rx) = watch::channel(initial);
    let task = tokio::spawn(async move {
        let config = watcher::Config::default().fields(&format!("metadata.name={owner}"));
        let mut events = watcher(api, config)
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(event) = events.next().await {
            let sts = match event {
                Ok(sts) => sts,
                Err(e) => {
                    tracing::warn!(statefulset = %owner, error = %e, "auto-sharding watch failed; retrying");
                    continue;
                }
            };
            match auto_sharding(&owner, sts.spec.replicas, &pod) {
                Ok(next) => {
                    tx.send_if_modified(|current| {
                        if *current == next {
                            return false;
                        }
                        tracing::info!(
                            from = current.total,
                            to = next.total,
                            shard = next.shard,
                            "StatefulSet replicas changed; re-sharding"
                        );
                        *current = next;
                        true
                    });
                }
                Err(e) => tracing::error!(error = %e, "auto-sharding"),
            }
        }
    });
    Ok(Source {
        rx,
        _task: Some(Task(task)),
    })
}

/// The engine spec for a set of options, a shard assignment and a custom resource config.
pub fn engine_spec(
    options: &Options,
    sharding: Sharding,
    custom_resources: Option<Arc<CustomResourceStateConfig>>,
) -> EngineSpec {
    let filter = options.family_filter.clone();
    let contexts = Arc::new(options.clone());
    EngineSpec {
        resources: options.resources.clone(),
        namespaces: options.namespaces.clone(),
        namespace_field_selector: options.namespace_field_selector(),
        pod_field_selector: options.pod_field_selector(),
        family_enabled: Arc::new(move |name, opt_in| filter.is_included(name, opt_in)),
        context_for: Arc::new(move |resource| contexts.family_context(resource)),
        sharding,
        server_side_sharding: options.server_side_sharding,
        list: ListSettings {
            use_apiserver_cache: options.use_apiserver_cache,
            object_limit: options.object_limit,
        },
        custom_resources,
        gzip: options.enable_gzip_encoding,
    }
}

/// Starts every source (failing on what upstream fails on at startup) and a task that
/// publishes a new [`EngineSpec`] whenever one of them changes.
pub async fn start_sources(
    args: &Args,
    options: Options,
    client: &kube::Client,
    telemetry: &Telemetry,
) -> Result<(watch::Receiver<Arc<EngineSpec>>, JoinHandle<()>)> {
    let options_source = match &options.config_file {
        Some(path) => watch_file(
            path,
            ConfigKind::Options,
            config_loader(args.clone()),
            telemetry,
            // `options::load` has already decided whether a bad file stops startup.
            |_| true,
        )?,
        None => Source::fixed(None),
    };
    let mut sharding = sharding_source(client, &options.sharding).await?;
    let mut crs = custom_resource_source(&options.custom_resource_config, telemetry)?;
    let (spec_tx, spec_rx) = watch::channel(Arc::new(engine_spec(
        &options,
        sharding.current(),
        crs.current(),
    )));
    let client = client.clone();
    let telemetry = telemetry.clone();
    let task = tokio::spawn(async move {
        let mut options_source = options_source;
        let mut current = options;
        loop {
            tokio::select! {
                () = next_change(&mut options_source.rx) => {
                    let Some(next) = options_source.rx.borrow_and_update().clone() else {
                        continue;
                    };
                    let next = (*next).clone();
                    let restart = current.restart_required_changes(&next);
                    if !restart.is_empty() {
                        tracing::warn!(
                            settings = ?restart,
                            "changed in the config file, but the listeners and API connection only change on restart"
                        );
                    }
                    if next.sharding != current.sharding {
                        match sharding_source(&client, &next.sharding).await {
                            Ok(s) => sharding = s,
                            Err(e) => tracing::error!(error = %e, "new sharding settings not applied"),
                        }
                    }
                    if next.custom_resource_config != current.custom_resource_config {
                        match custom_resource_source(&next.custom_resource_config, &telemetry) {
                            Ok(s) => crs = s,
                            Err(e) => tracing::error!(error = %e, "new custom resource state configuration not applied"),
                        }
                    }
                    current = next;
                }
                () = next_change(&mut sharding.rx) => {}
                () = next_change(&mut crs.rx) => {}
            }
            let spec = engine_spec(
                &current,
                *sharding.rx.borrow_and_update(),
                crs.rx.borrow_and_update().clone(),
            );
            spec_tx.send_replace(Arc::new(spec));
        }
    });
    Ok((spec_rx, task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::resolve;
    use clap::Parser;

    fn options(flags: &[&str]) -> Options {
        let mut argv = vec!["ksm"];
        argv.extend_from_slice(flags);
        resolve(&Args::try_parse_from(argv).expect("flags")).expect("options")
    }

    #[test]
    fn engine_spec_carries_the_options() {
        let o = options(&[
            "--resources=pods",
            "--track-unscheduled-pods",
            "--namespaces-denylist=kube-system",
            "--use-apiserver-cache",
            "--object-limit=5",
            "--enable-gzip-encoding",
            "--metric-denylist=kube_pod_info",
        ]);
        let spec = engine_spec(&o, Sharding { shard: 1, total: 2 }, None);
        assert_eq!(spec.resources, ["pods"]);
        assert_eq!(spec.pod_field_selector.as_deref(), Some("spec.nodeName="));
        assert_eq!(
            spec.namespace_field_selector.as_deref(),
            Some("metadata.namespace!=kube-system")
        );
        assert_eq!(
            spec.list,
            ListSettings {
                use_apiserver_cache: true,
                object_limit: Some(5)
            }
        );
        assert!(spec.gzip);
        assert_eq!(spec.sharding, Sharding { shard: 1, total: 2 });
        assert!(!(spec.family_enabled)("kube_pod_info", false));
        assert!((spec.family_enabled)("kube_pod_labels", false));
    }

    #[tokio::test]
    async fn a_config_file_is_followed_and_a_bad_edit_keeps_the_last_good_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("crs.yaml");
        let good = "spec:\n  resources:\n  - groupVersionKind: {group: a.io, version: v1, kind: A}\n    metrics:\n    - name: x\n      help: x\n      each:\n        type: Gauge\n        gauge:\n          path: [spec, x]\n";
        let telemetry = Telemetry::new().expect("telemetry");
        // Missing at start: tolerated only with the continue flag.
        let config = CustomResourceConfig::File {
            path: path.clone(),
            continue_if_missing: false,
        };
        assert!(custom_resource_source(&config, &telemetry).is_err());
        let config = CustomResourceConfig::File {
            path: path.clone(),
            continue_if_missing: true,
        };
        let mut source = custom_resource_source(&config, &telemetry).expect("tolerated");
        assert!(source.current().is_none());
        std::fs::write(&path, good).expect("write");
        let loaded = tokio::time::timeout(Duration::from_secs(25), async {
            loop {
                next_change(&mut source.rx).await;
                if let Some(c) = source.rx.borrow_and_update().clone() {
                    return c;
                }
            }
        })
        .await
        .expect("loaded after it appeared");
        assert_eq!(loaded.spec.resources[0].metrics[0].name, "x");
        // A bad edit: no new value, the metric says so.
        std::fs::write(&path, "spec: {resources: [{bogus: 1}]}\n").expect("write");
        let label = path.display().to_string();
        let failed = tokio::time::timeout(Duration::from_secs(25), async {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let text = telemetry.exposition();
                if text.contains(&format!(
                    "kube_state_metrics_last_config_reload_successful{{filename=\"{label}\",type=\"customresourceconfig\"}} 0"
                )) {
                    return;
                }
            }
        })
        .await;
        assert!(failed.is_ok(), "{}", telemetry.exposition());
        assert!(!source.rx.has_changed().unwrap_or(true));
        assert_eq!(
            source.current().expect("still loaded").spec.resources[0].metrics[0].name,
            "x"
        );
    }
}
