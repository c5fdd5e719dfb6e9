//! The validated settings the runtime works from, and the error a bad flag or key gives.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use ferrocrane_core::config::ConfigError;
use ferrocrane_core::process::LogArgs;

use crate::families::FamilyContext;
use crate::field_selector::{namespace_denylist_field_selector, node_field_selector};
use crate::filters::{FamilyFilter, FilterError, KeyAllowlists};
use crate::sharding::Sharding;

/// A flag or config file value that cannot be used. The message names where the value came
/// from (`--shard=3` or `ksm.yaml: shard=3`) and what is wrong, on one line.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("{setting}={value:?}: {message}")]
    Invalid {
        /// `--flag`, or `<file>: <key>` when the config file set it.
        setting: String,
        value: String,
        message: String,
    },

    #[error(transparent)]
    Filter(#[from] FilterError),

    /// The config file could not be read or parsed.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Whether a resolved namespace list means all namespaces (it is empty).
pub fn is_all_namespaces(namespaces: &[String]) -> bool {
    namespaces.is_empty()
}

/// Which instance this is among the shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardingMode {
    /// `--shard` / `--total-shards` (the default, 0 of 1, exports everything).
    Static(Sharding),
    /// `--pod` + `--pod-namespace`: the runtime looks the pod's StatefulSet up and uses
    /// [`crate::sharding::sharding_from_statefulset`], following replica changes.
    Auto { pod: String, namespace: String },
}

/// Where the custom resource state configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomResourceConfig {
    None,
    /// `--custom-resource-state-config`; wins over the file, as upstream.
    Inline(String),
    File {
        path: PathBuf,
        /// `--continue-without-custom-resource-state-config-file`.
        continue_if_missing: bool,
    },
}

/// HTTP server timeouts of the /metrics listener; `Duration::ZERO` means none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerTimeouts {
    pub read: Duration,
    pub write: Duration,
    pub idle: Duration,
    pub read_header: Duration,
}

impl ServerTimeouts {
    /// The flags' defaults (upstream's): 1m0s, 1m0s, 5m0s, 5s.
    pub const DEFAULTS: ServerTimeouts = ServerTimeouts {
        read: Duration::from_secs(60),
        write: Duration::from_secs(60),
        idle: Duration::from_secs(300),
        read_header: Duration::from_secs(5),
    };

    /// What the shared server enforces for them, as Go's `http.Server` reads them: a zero
    /// read-header or idle timeout falls back to the read timeout, zero everywhere is no
    /// limit. The server's header clock also runs while a keep-alive connection waits for
    /// its next request, so the idle timeout applies only when it is the shorter one.
    pub fn serve_options(&self) -> ferrocrane_core::server::ServeOptions {
        let limit = |d: Duration| (!d.is_zero()).then_some(d);
        let or_read = |d: Duration| limit(d).or(limit(self.read));
        let header = match (or_read(self.read_header), or_read(self.idle)) {
            (Some(h), Some(i)) => Some(h.min(i)),
            (h, i) => h.or(i),
        };
        ferrocrane_core::server::ServeOptions {
            header_read_timeout: header,
            write_timeout: limit(self.write),
            ..Default::default()
        }
    }
}

/// Validated, merged settings the runtime works from.
#[derive(Debug, Clone)]
pub struct Options {
    /// Built-in resources to export, sorted; empty with `--custom-resource-state-only`.
    pub resources: Vec<String>,
    pub custom_resource_state_only: bool,
    /// Namespaces to watch, one watch each; empty means one cluster-wide watch.
    pub namespaces: Vec<String>,
    pub namespaces_denylist: Vec<String>,
    /// `--node`, if set.
    pub node: Option<String>,
    pub track_unscheduled_pods: bool,
    /// Field selector for every list/watch: the namespace denylist, then the node selector;
    /// empty when neither applies.
    pub field_selector: String,
    pub family_filter: FamilyFilter,
    pub labels_allowlist: KeyAllowlists,
    pub annotations_allowlist: KeyAllowlists,
    pub sharding: ShardingMode,
    /// `--server-side-sharding`: UID hash ranges, filtered by the API server.
    pub server_side_sharding: bool,
    pub custom_resource_config: CustomResourceConfig,
    pub host: String,
    pub port: u16,
    pub telemetry_host: String,
    pub telemetry_port: u16,
    pub tls_config: Option<PathBuf>,
    pub enable_gzip_encoding: bool,
    pub use_apiserver_cache: bool,
    /// `--object-limit`; `None` for 0 (no limit).
    pub object_limit: Option<u64>,
    pub kubeconfig: Option<PathBuf>,
    pub apiserver: Option<String>,
    /// `--config`, to be watched for changes.
    pub config_file: Option<PathBuf>,
    pub continue_without_config: bool,
    pub auth_filter: bool,
    pub timeouts: ServerTimeouts,
    pub log: LogArgs,
}

impl Options {
    /// The label/annotation allowlists of one resource, for its families.
    pub fn family_context(&self, resource: &str) -> FamilyContext {
        crate::filters::family_context(
            &self.labels_allowlist,
            &self.annotations_allowlist,
            resource,
        )
    }

    pub fn all_namespaces(&self) -> bool {
        is_all_namespaces(&self.namespaces)
    }

    /// `host:port` of /metrics, brackets around IPv6 hosts (`[::]:8080`), as Go's JoinHostPort.
    pub fn metrics_address(&self) -> String {
        join_host_port(&self.host, self.port)
    }

    /// `host:port` of the telemetry listener.
    pub fn telemetry_address(&self) -> String {
        join_host_port(&self.telemetry_host, self.telemetry_port)
    }

    /// The extra field selector of the pods watch: unscheduled pods only
    /// (`spec.nodeName=`) with `--track-unscheduled-pods`, which wins over `--node` as
    /// upstream's builder has it; the node's pods with `--node`; `None` otherwise.
    pub fn pod_field_selector(&self) -> Option<String> {
        if self.track_unscheduled_pods {
            Some("spec.nodeName=".to_owned())
        } else {
            self.node.as_deref().map(node_field_selector)
        }
    }

    /// The namespace denylist as a field selector, for namespaced resources watched
    /// cluster-wide; `None` without a denylist.
    pub fn namespace_field_selector(&self) -> Option<String> {
        (!self.namespaces_denylist.is_empty())
            .then(|| namespace_denylist_field_selector(&self.namespaces_denylist))
    }

    /// The settings a `--config` reload cannot apply to a running process (listeners,
    /// TLS, API server connection), by config key, that differ between `self` and `next`.
    /// Upstream restarts its whole process on a change; we rebuild the watchers only, so
    /// these are reported instead of silently ignored.
    pub fn restart_required_changes(&self, next: &Options) -> Vec<&'static str> {
        let mut changed = Vec::new();
        let mut check = |key: &'static str, differs: bool| {
            if differs {
                changed.push(key);
            }
        };
        check("host", self.host != next.host);
        check("port", self.port != next.port);
        check("telemetry_host", self.telemetry_host != next.telemetry_host);
        check("telemetry_port", self.telemetry_port != next.telemetry_port);
        check("tls_config", self.tls_config != next.tls_config);
        check("kubeconfig", self.kubeconfig != next.kubeconfig);
        check("apiserver", self.apiserver != next.apiserver);
        check("auth_filter", self.auth_filter != next.auth_filter);
        check("server timeouts", self.timeouts != next.timeouts);
        changed
    }
}

/// Go's `net.JoinHostPort`.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// An [`OptionsError::Invalid`] for `setting` (a flag, or `<file>: <key>`) set to `value`.
pub(super) fn invalid(
    setting: String,
    value: impl fmt::Display,
    message: impl Into<String>,
) -> OptionsError {
    OptionsError::Invalid {
        setting,
        value: value.to_string(),
        message: message.into(),
    }
}
