//! Hot-reload tests against real files in a tempdir, including the Kubernetes ConfigMap layout.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::*;
use crate::config::ValidationError;

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Cfg {
    name: String,
    #[serde(default)]
    replicas: u32,
}

impl Validate for Cfg {
    fn validate(&self) -> Result<(), ValidationError> {
        if self.replicas > 100 {
            return Err(ValidationError::new("replicas", "must be at most 100"));
        }
        Ok(())
    }
}

const WAIT: Duration = Duration::from_secs(10);

fn opts(registry: &Registry) -> WatchOptions {
    WatchOptions {
        debounce: Duration::from_millis(50),
        // Events only, so a passing test proves the directory watch works.
        poll_interval: None,
        use_fs_events: true,
        metrics: Some((registry.clone(), "test".into())),
    }
}

async fn wait_status(
    w: &ConfigWatcher<Cfg>,
    what: &str,
    f: impl FnMut(&ReloadStatus) -> bool,
) -> ReloadStatus {
    let mut rx = w.subscribe_status();
    match tokio::time::timeout(WAIT, rx.wait_for(f)).await {
        Ok(Ok(s)) => s.clone(),
        _ => panic!("timed out waiting for {what}; status {:?}", w.status()),
    }
}

fn metric(registry: &Registry, name: &str, label: Option<(&str, &str)>) -> f64 {
    for fam in registry.gather() {
        if fam.name() != name {
            continue;
        }
        for m in fam.get_metric() {
            let matches = label.is_none_or(|(k, v)| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == k && l.value() == v)
            });
            if matches {
                return if name.ends_with("_total") {
                    m.get_counter().get_value()
                } else {
                    m.get_gauge().get_value()
                };
            }
        }
    }
    panic!("metric {name} {label:?} not found")
}

/// Replaces the file the way editors and `kubectl cp` do, so the watcher never sees a half-written
/// file (that would be a legitimate but test-breaking failure).
fn atomic_write(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).expect("write tmp");
    std::fs::rename(&tmp, path).expect("rename");
}

/// Creates `<dir>/<ts>/config.yaml` with `content` and points `..data` at it atomically.
fn configmap_version(dir: &Path, ts: &str, content: &str) {
    let version = dir.join(ts);
    std::fs::create_dir(&version).expect("mkdir version");
    std::fs::write(version.join("config.yaml"), content).expect("write");
    let tmp = dir.join("..data_tmp");
    symlink(ts, &tmp).expect("symlink tmp");
    std::fs::rename(&tmp, dir.join("..data")).expect("atomic swap");
}

#[tokio::test]
async fn configmap_symlink_swap_is_picked_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    configmap_version(dir.path(), "..2026_a", "name: a\n");
    let path = dir.path().join("config.yaml");
    symlink("..data/config.yaml", &path).expect("symlink config");

    let registry = Registry::new();
    let w = ConfigWatcher::<Cfg>::start(&path, opts(&registry)).expect("start");
    assert_eq!(w.current().name, "a");
    let mut rx = w.subscribe();
    rx.borrow_and_update();

    configmap_version(dir.path(), "..2026_b", "name: b\nreplicas: 2\n");
    std::fs::remove_dir_all(dir.path().join("..2026_a")).expect("cleanup old version");

    tokio::time::timeout(WAIT, rx.changed())
        .await
        .expect("reload within timeout")
        .expect("sender alive");
    assert_eq!(
        *w.current(),
        Cfg {
            name: "b".into(),
            replicas: 2
        }
    );
    let s = w.status();
    assert!(s.last_reload_successful);
    assert_eq!((s.successes, s.failures), (1, 0));
    assert_eq!(
        metric(
            &registry,
            "test_config_reloads_total",
            Some(("result", "success"))
        ),
        1.0
    );
    assert_eq!(
        metric(&registry, "test_config_last_reload_successful", None),
        1.0
    );
}

#[tokio::test]
async fn bad_reload_keeps_last_good_and_good_reload_recovers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, "name: good\n").expect("write");
    let registry = Registry::new();
    let w = ConfigWatcher::<Cfg>::start(&path, opts(&registry)).expect("start");
    let started_ts = metric(
        &registry,
        "test_config_last_reload_success_timestamp_seconds",
        None,
    );
    assert!(started_ts > 0.0);

    // Unknown key: parse failure.
    atomic_write(&path, "name: bad\nreplicaz: 3\n");
    let s = wait_status(&w, "first failure", |s| s.failures == 1).await;
    assert!(!s.last_reload_successful);
    let err = s.last_error.expect("error recorded");
    assert!(err.contains("config.yaml:2:"), "{err}");
    assert!(err.contains("replicaz"), "{err}");
    assert_eq!(w.current().name, "good");
    assert_eq!(
        metric(&registry, "test_config_last_reload_successful", None),
        0.0
    );
    assert_eq!(
        metric(
            &registry,
            "test_config_reloads_total",
            Some(("result", "failure"))
        ),
        1.0
    );

    // Validation failure is also rejected.
    atomic_write(&path, "name: bad\nreplicas: 1000\n");
    let s = wait_status(&w, "second failure", |s| s.failures == 2).await;
    assert!(
        s.last_error
            .as_deref()
            .is_some_and(|e| e.contains("replicas: must be at most 100")),
        "{s:?}"
    );
    assert_eq!(w.current().name, "good");

    // A good file applies again and clears the error.
    atomic_write(&path, "name: fixed\n");
    let s = wait_status(&w, "recovery", |s| s.successes == 1).await;
    assert!(s.last_reload_successful);
    assert_eq!(s.last_error, None);
    assert_eq!(w.current().name, "fixed");
    assert_eq!(
        metric(&registry, "test_config_last_reload_successful", None),
        1.0
    );
    assert_eq!(
        metric(
            &registry,
            "test_config_reloads_total",
            Some(("result", "success"))
        ),
        1.0
    );
    assert_eq!(
        metric(
            &registry,
            "test_config_reloads_total",
            Some(("result", "failure"))
        ),
        2.0
    );
    assert!(
        metric(
            &registry,
            "test_config_last_reload_success_timestamp_seconds",
            None
        ) >= started_ts
    );
}

#[tokio::test]
async fn polling_fallback_without_fs_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, "name: one\n").expect("write");
    let options = WatchOptions {
        debounce: Duration::from_millis(10),
        poll_interval: Some(Duration::from_millis(100)),
        use_fs_events: false,
        metrics: None,
    };
    let w = ConfigWatcher::<Cfg>::start(&path, options).expect("start");
    std::fs::write(&path, "name: two\n").expect("write");
    wait_status(&w, "polled reload", |s| s.successes == 1).await;
    assert_eq!(w.current().name, "two");

    // A persistently broken (here: deleted) file is one failure, not one per poll.
    std::fs::remove_file(&path).expect("rm");
    wait_status(&w, "read failure", |s| s.failures == 1).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(w.status().failures, 1);
    assert_eq!(w.current().name, "two");
}

#[tokio::test]
async fn manual_reload_and_unchanged_content() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, "name: one\n").expect("write");
    let options = WatchOptions {
        poll_interval: None,
        use_fs_events: false,
        ..WatchOptions::default()
    };
    let w = ConfigWatcher::<Cfg>::start(&path, options).expect("start");
    // Same content rewritten: not a reload.
    std::fs::write(&path, "name: one\n").expect("write");
    w.reload();
    std::fs::write(&path, "name: two\n").expect("write");
    w.reload();
    let s = wait_status(&w, "manual reload", |s| s.successes >= 1).await;
    assert_eq!(s.successes, 1);
    assert_eq!(w.current().name, "two");
}

#[tokio::test]
async fn invalid_initial_config_fails_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, "name: x\nreplicas: 101\n").expect("write");
    let e = ConfigWatcher::<Cfg>::start(&path, WatchOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("c.yaml: invalid configuration: replicas"),
        "{msg}"
    );
    let e = ConfigWatcher::<Cfg>::start(dir.path().join("nope.yaml"), WatchOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("nope.yaml: cannot read"), "{e}");
}

#[tokio::test]
async fn two_files_share_one_registry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.yaml");
    let b = dir.path().join("b.yaml");
    std::fs::write(&a, "name: a\n").expect("write");
    std::fs::write(&b, "name: b\n").expect("write");
    let registry = Registry::new();
    let _wa = ConfigWatcher::<Cfg>::start(&a, opts(&registry)).expect("a");
    let _wb = ConfigWatcher::<Cfg>::start(&b, opts(&registry)).expect("b");
    let fam = registry
        .gather()
        .into_iter()
        .find(|f| f.name() == "test_config_last_reload_successful")
        .expect("family");
    assert_eq!(fam.get_metric().len(), 2);
}

#[test]
fn start_outside_runtime_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, "name: x\n").expect("write");
    let e = ConfigWatcher::<Cfg>::start(&path, WatchOptions::default()).unwrap_err();
    assert!(e.to_string().contains("Tokio runtime"), "{e}");
}

#[test]
fn own_reads_are_not_changes() {
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
    assert!(!is_change(&EventKind::Access(AccessKind::Open(
        AccessMode::Any
    ))));
    assert!(!is_change(&EventKind::Access(AccessKind::Close(
        AccessMode::Read
    ))));
    assert!(!is_change(&EventKind::Access(AccessKind::Read)));
    assert!(is_change(&EventKind::Access(AccessKind::Close(
        AccessMode::Write
    ))));
    assert!(is_change(&EventKind::Create(CreateKind::Any)));
    assert!(is_change(&EventKind::Modify(ModifyKind::Name(
        RenameMode::Both
    ))));
    assert!(is_change(&EventKind::Remove(
        notify::event::RemoveKind::Any
    )));
    assert!(is_change(&EventKind::Any));
}
