//! Command-line flags and the `--config` file, with kube-state-metrics v2.20's names, defaults
//! and list syntax, resolved into validated [`Options`].
//!
//! Flow: clap parses [`Args`]; [`resolve`] (flags only) or [`resolve_with_config`] (flags plus a
//! parsed [`ConfigFile`]) turns them into [`Options`]; [`load`] does the one piece of I/O
//! (reading `--config`), and [`config_loader`] plugs the same merge into
//! `ferrocrane_core::config::ConfigWatcher::start_with` for hot reload. Everything except
//! [`load`] is pure.
//!
//! # The `--config` file
//! Its keys are upstream's `Options` YAML tags (`resources`, `metric_allowlist`,
//! `labels_allow_list`, `namespaces`, `total_shards`, `use_api_server_cache`,
//! `auto-gomemlimit-ratio`, ...; see [`ConfigFile`]). Sets are mappings of names to `{}`
//! (`resources: {pods: {}}`, what upstream reads); a list of names is accepted too.
//! Durations are Go duration strings (`90s`, `1m30s`). Unknown keys are errors.
//!
//! **The file overrides the flags**, key by key, as upstream does: a key present in the file
//! wins over its flag; a key absent from the file leaves the flag's value. As upstream, an
//! empty set (`resources: {}`) does not override, while an empty `namespaces: []` or
//! `labels_allow_list: {}` does (they become "all namespaces" / "no labels").
//!
//! # Differences from upstream (deliberate)
//! * A reload merges the new file over the **original flags**; upstream unmarshals each reload
//!   over the previous merge, so a key deleted from the file kept its old value.
//! * Validation runs on the merged result every time (upstream validates flags only, before the
//!   file is read) and is complete: `--shard` must be below `--total-shards`; `--total-shards`
//!   at least 1; `--object-limit` not negative; `--pod` and `--pod-namespace` together or not at
//!   all; `--node` / `--track-unscheduled-pods` only with `--resources=pods` (upstream skips the
//!   check when `--resources` is not given and then fails every non-pod watch).
//! * Unknown resources in `--resources` are rejected at startup, not when the store is built.
//! * `--metric-labels-allowlist` rejects malformed text upstream silently drops (a trailing
//!   `nodes` without `=[...]`, an unclosed `[`), and drops empty keys (`pods=[ ]`).
//! * Allow/deny regexes are RE2-style (`regex` crate) rather than ECMAScript: lookaround and
//!   backreferences are rejected with a clear error.
//! * `--auto-gomemlimit`, `--auto-gomemlimit-ratio` are accepted and ignored (Go runtime
//!   knobs). Upstream's klog flags (`-v`, `--logtostderr`, ...) are not accepted; use
//!   `--log-level` / `--log-format`. `--version` is a flag (upstream: a `version` subcommand).

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};
use ferrocrane_core::config::{ConfigError, Validate, ValidationError, parse_yaml_str, utf8_text};
use ferrocrane_core::server::LogArgs;
use serde::Deserialize;

use crate::families::FamilyContext;
pub use crate::field_selector::{
    merge_field_selectors, namespace_denylist_field_selector, node_field_selector,
};
use crate::filters::{FamilyFilter, FilterError, KeyAllowlists, LabelsAllowList, WILDCARD};
use crate::sharding::Sharding;

/// Resources enabled when `--resources` is not given (upstream `DefaultResources`), sorted.
pub const DEFAULT_RESOURCES: [&str; 32] = [
    "certificatesigningrequests",
    "configmaps",
    "cronjobs",
    "daemonsets",
    "deployments",
    "endpointslices",
    "horizontalpodautoscalers",
    "ingresses",
    "jobs",
    "leases",
    "limitranges",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
    "mutatingwebhookconfigurations",
    "namespaces",
    "networkpolicies",
    "nodes",
    "persistentvolumeclaims",
    "persistentvolumes",
    "poddisruptionbudgets",
    "pods",
    "replicasets",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "services",
    "statefulsets",
    "storageclasses",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "validatingwebhookconfigurations",
    "volumeattachments",
];

/// Resources that exist but are off by default, sorted.
pub const OPTIONAL_RESOURCES: [&str; 7] = [
    "clusterrolebindings",
    "clusterroles",
    "endpoints",
    "ingressclasses",
    "rolebindings",
    "roles",
    "serviceaccounts",
];

/// Every valid `--resources` name (upstream `availableStores`), sorted.
pub const ALL_RESOURCES: [&str; 39] = [
    "certificatesigningrequests",
    "clusterrolebindings",
    "clusterroles",
    "configmaps",
    "cronjobs",
    "daemonsets",
    "deployments",
    "endpoints",
    "endpointslices",
    "horizontalpodautoscalers",
    "ingressclasses",
    "ingresses",
    "jobs",
    "leases",
    "limitranges",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
    "mutatingwebhookconfigurations",
    "namespaces",
    "networkpolicies",
    "nodes",
    "persistentvolumeclaims",
    "persistentvolumes",
    "poddisruptionbudgets",
    "pods",
    "replicasets",
    "replicationcontrollers",
    "resourcequotas",
    "rolebindings",
    "roles",
    "secrets",
    "serviceaccounts",
    "services",
    "statefulsets",
    "storageclasses",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "validatingwebhookconfigurations",
    "volumeattachments",
];

const AUTOSHARDING_NOTE: &str = "Auto-sharding (experimental): set both --pod and \
--pod-namespace, usually from the downward API, and the shard and total are taken from the \
pod's StatefulSet ordinal and replicas, overriding --shard and --total-shards.";

/// kube-state-metrics' flags. Repeating a scalar flag keeps the last value and list flags
/// accumulate, as with upstream's pflag. Boolean flags take an optional `=true|false`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "ksm",
    version,
    about = "kube-state-metrics-compatible exporter",
    args_override_self = true
)]
pub struct Args {
    /// Comma-separated resources to export (plural names, e.g. pods,deployments). Default: the
    /// 32 default resources of kube-state-metrics.
    #[arg(long, value_name = "LIST", action = ArgAction::Append)]
    pub resources: Vec<String>,

    /// Comma-separated namespaces to watch. Default: all namespaces.
    #[arg(long, value_name = "LIST", action = ArgAction::Append)]
    pub namespaces: Vec<String>,

    /// Comma-separated namespaces to leave out (a metadata.namespace!= field selector). Combined
    /// with --namespaces, the listed namespaces minus these are watched.
    #[arg(long = "namespaces-denylist", value_name = "LIST", action = ArgAction::Append)]
    pub namespaces_denylist: Vec<String>,

    /// Comma-separated metric families to export: exact names and/or regular expressions,
    /// matched unanchored. Cannot be combined with --metric-denylist.
    #[arg(long = "metric-allowlist", value_name = "LIST", action = ArgAction::Append)]
    pub metric_allowlist: Vec<String>,

    /// Comma-separated metric families not to export: exact names and/or regular expressions,
    /// matched unanchored. Cannot be combined with --metric-allowlist.
    #[arg(long = "metric-denylist", value_name = "LIST", action = ArgAction::Append)]
    pub metric_denylist: Vec<String>,

    /// Comma-separated opt-in metric families (off by default) to export; regular expressions
    /// allowed. Applies on top of the allow/deny list.
    #[arg(long = "metric-opt-in-list", value_name = "LIST", action = ArgAction::Append)]
    pub metric_opt_in_list: Vec<String>,

    /// Kubernetes label keys exported as label_* in each resource's *_labels family, per
    /// resource: 'pods=[app,team],namespaces=[*]'. A first '*' allows every key (costly); a
    /// '*' inside a key is a glob ('pods=[example.org/team-*]', one per key); the resource '*'
    /// applies to every enabled resource. Default: none.
    #[arg(long = "metric-labels-allowlist", value_name = "SPEC")]
    pub metric_labels_allowlist: Option<String>,

    /// Kubernetes annotation keys exported as annotation_* in each resource's *_annotations
    /// family; same syntax as --metric-labels-allowlist. Default: none.
    #[arg(long = "metric-annotations-allowlist", value_name = "SPEC")]
    pub metric_annotations_allowlist: Option<String>,

    /// Zero-based index of this instance among --total-shards.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub shard: i32,

    /// Number of shards; 1 disables sharding.
    #[arg(
        long = "total-shards",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub total_shards: i32,

    /// Name of the pod running this exporter.
    #[arg(long, default_value = "", hide_default_value = true, long_help = format!("Name of the pod running this exporter. {AUTOSHARDING_NOTE}"))]
    pub pod: String,

    /// Namespace of the pod given by --pod.
    #[arg(long = "pod-namespace", default_value = "", hide_default_value = true, long_help = format!("Namespace of the pod given by --pod. {AUTOSHARDING_NOTE}"))]
    pub pod_namespace: String,

    /// Only export pods scheduled on this node (spec.nodeName field selector), for running one
    /// exporter per node as a DaemonSet; requires --resources=pods. Experimental.
    #[arg(long, default_value = "", hide_default_value = true)]
    pub node: String,

    /// Only export pods not scheduled on any node (spec.nodeName= field selector); meant for
    /// one extra instance next to a per-node DaemonSet; requires --resources=pods.
    /// Experimental.
    #[arg(long = "track-unscheduled-pods", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub track_unscheduled_pods: bool,

    /// Custom resource state configuration as inline YAML (takes precedence over the file).
    /// Experimental.
    #[arg(
        long = "custom-resource-state-config",
        default_value = "",
        hide_default_value = true
    )]
    pub custom_resource_state_config: String,

    /// Path to a custom resource state configuration file. Experimental.
    #[arg(long = "custom-resource-state-config-file", value_name = "FILE")]
    pub custom_resource_state_config_file: Option<PathBuf>,

    /// Export only custom resource state metrics, no built-in resources. Experimental.
    #[arg(long = "custom-resource-state-only", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub custom_resource_state_only: bool,

    /// Keep running when --custom-resource-state-config-file does not exist yet, and load it
    /// once it appears (e.g. a ConfigMap created later).
    #[arg(long = "continue-without-custom-resource-state-config-file", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub continue_without_custom_resource_state_config_file: bool,

    /// Keep running when --config does not exist yet or is invalid, and load it once it is
    /// fixed.
    #[arg(long = "continue-without-config", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub continue_without_config: bool,

    /// Address to serve /metrics on.
    #[arg(long, default_value = "::")]
    pub host: String,

    /// Port to serve /metrics on.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,

    /// Address to serve the exporter's own metrics on.
    #[arg(long = "telemetry-host", default_value = "::")]
    pub telemetry_host: String,

    /// Port to serve the exporter's own metrics on.
    #[arg(long = "telemetry-port", default_value_t = 8081)]
    pub telemetry_port: u16,

    /// Path to a Prometheus exporter-toolkit web config file (TLS, basic auth).
    #[arg(long = "tls-config", value_name = "FILE")]
    pub tls_config: Option<PathBuf>,

    /// Gzip /metrics responses for clients sending 'Accept-Encoding: gzip'.
    #[arg(long = "enable-gzip-encoding", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub enable_gzip_encoding: bool,

    /// List with resourceVersion=0, served from the API server's watch cache rather than a
    /// quorum read from etcd.
    #[arg(long = "use-apiserver-cache", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub use_apiserver_cache: bool,

    /// Maximum number of objects listed per resource; 0 means no limit. Experimental.
    #[arg(
        long = "object-limit",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub object_limit: i64,

    /// Path to a kubeconfig file; default: in-cluster configuration.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// URL of the API server, overriding the kubeconfig's.
    #[arg(long, value_name = "URL")]
    pub apiserver: Option<String>,

    /// Path to an options YAML file whose keys override these flags; reloaded on change.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Require a Kubernetes-authenticated and authorized client (TokenReview and
    /// SubjectAccessReview) on the metrics endpoints.
    #[arg(long = "auth-filter", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub auth_filter: bool,

    /// Longest time to read a whole request, body included (Go duration, 0 = none).
    #[arg(long = "server-read-timeout", value_name = "DURATION", default_value = "1m0s", value_parser = parse_go_duration)]
    pub server_read_timeout: Duration,

    /// Longest time to write a response; keep it above the scrape timeout (Go duration,
    /// 0 = none).
    #[arg(long = "server-write-timeout", value_name = "DURATION", default_value = "1m0s", value_parser = parse_go_duration)]
    pub server_write_timeout: Duration,

    /// How long a keep-alive connection may wait for its next request (Go duration, 0 = none).
    #[arg(long = "server-idle-timeout", value_name = "DURATION", default_value = "5m0s", value_parser = parse_go_duration)]
    pub server_idle_timeout: Duration,

    /// Longest time to read request headers (Go duration, 0 = none).
    #[arg(long = "server-read-header-timeout", value_name = "DURATION", default_value = "5s", value_parser = parse_go_duration)]
    pub server_read_header_timeout: Duration,

    /// Accepted for compatibility; a Go runtime setting with no effect here.
    #[arg(long = "auto-gomemlimit", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub auto_gomemlimit: bool,

    /// Accepted for compatibility; a Go runtime setting with no effect here.
    #[arg(
        long = "auto-gomemlimit-ratio",
        value_name = "RATIO",
        default_value_t = 0.9
    )]
    pub auto_gomemlimit_ratio: f64,

    #[command(flatten)]
    pub log: LogArgs,
}

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

// ---------------------------------------------------------------------------------------------
// List syntax (pkg/options/types.go)

/// A comma-separated list flag, possibly repeated: split, trim, drop empty entries.
pub fn split_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A set flag (resources, metric lists): [`split_list`], sorted and deduplicated.
pub fn split_set(values: &[String]) -> Vec<String> {
    split_list(values)
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

const ALLOWLIST_FORMAT: &str = "invalid format, metric=[label1,label2,labeln...],metricN=[]";
const ALLOWLIST_WILDCARDS: &str = "invalid format, only one wildcard per label allowed";

/// Parses `resource=[key,key],other=[*]` (upstream `LabelsAllowList.Set`). A repeated
/// resource keeps its last list; `resource=[]` is an empty list.
pub fn parse_labels_allowlist(value: &str) -> Result<LabelsAllowList, String> {
    let mut out = LabelsAllowList::new();
    let mut rest = value.trim();
    if rest.is_empty() {
        return Ok(out);
    }
    loop {
        let (name, after) = rest.split_once('=').ok_or(ALLOWLIST_FORMAT)?;
        let name = name.trim();
        if name.is_empty() || name.contains([',', '[', ']']) {
            return Err(ALLOWLIST_FORMAT.into());
        }
        let after = after.strip_prefix('[').ok_or(ALLOWLIST_FORMAT)?;
        let (inner, after) = after.split_once(']').ok_or(ALLOWLIST_FORMAT)?;
        if inner.contains(['=', '[']) {
            return Err(ALLOWLIST_FORMAT.into());
        }
        let keys: Vec<String> = if inner.trim().is_empty() {
            Vec::new()
        } else {
            let keys: Vec<String> = inner.split(',').map(|k| k.trim().to_owned()).collect();
            // Upstream rejects `a,,b` and `a,]`; a blank key is never useful.
            if keys.iter().any(String::is_empty) {
                return Err(ALLOWLIST_FORMAT.into());
            }
            keys
        };
        check_wildcards(&keys)?;
        out.insert(name.to_owned(), keys);
        if after.is_empty() {
            return Ok(out);
        }
        rest = after.strip_prefix(',').ok_or(ALLOWLIST_FORMAT)?;
        if rest.trim().is_empty() {
            return Err(ALLOWLIST_FORMAT.into());
        }
    }
}

fn check_wildcards(keys: &[String]) -> Result<(), String> {
    if keys.iter().any(|k| k.matches(WILDCARD).count() > 1) {
        return Err(ALLOWLIST_WILDCARDS.into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Go value syntax

/// Go's `strconv.ParseBool`, which pflag uses for `--flag=value`.
pub fn parse_go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("invalid boolean {s:?}: use true or false")),
    }
}

/// Go's `time.ParseDuration` (`300ms`, `1.5h`, `1h2m3s`, `0`). A negative duration, which Go's
/// HTTP server treats as "no timeout", becomes `Duration::ZERO`.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {s:?}: expected e.g. 30s, 1m30s, 500ms");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, r) = rest.split_at(int_len);
        rest = r;
        let mut frac_part = "";
        if let Some(r) = rest.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            (frac_part, rest) = r.split_at(n);
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (unit, r) = rest.split_at(unit_len);
        rest = r;
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            "" => return Err(format!("invalid duration {s:?}: missing unit")),
            other => return Err(format!("invalid duration {s:?}: unknown unit {other:?}")),
        };
        let int: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        // Enough fraction digits for nanosecond precision of an hour; the rest truncates.
        let frac_digits = &frac_part[..frac_part.len().min(20)];
        let frac = if frac_digits.is_empty() {
            0
        } else {
            let num: u128 = frac_digits.parse().map_err(|_| invalid())?;
            let den = 10u128.pow(u32::try_from(frac_digits.len()).unwrap_or(20));
            num * scale / den
        };
        total = int
            .checked_mul(scale)
            .and_then(|v| v.checked_add(frac))
            .and_then(|v| v.checked_add(total))
            .filter(|v| *v <= i64::MAX as u128)
            .ok_or_else(|| format!("invalid duration {s:?}: out of range"))?;
    }
    if negative {
        return Ok(Duration::ZERO);
    }
    Ok(Duration::from_nanos(
        u64::try_from(total).map_err(|_| invalid())?,
    ))
}

// ---------------------------------------------------------------------------------------------
// The config file

/// A set in the config file: upstream's mapping of names to `{}` (`pods: {}`), or a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameSet(pub Vec<String>);

impl<'de> Deserialize<'de> for NameSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Empty {}
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NameSet;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of names to {} (name: {}) or a list of names")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<NameSet, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    m.next_value::<Option<Empty>>()?;
                    out.push(k);
                }
                Ok(NameSet(out))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<NameSet, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = s.next_element::<String>()? {
                    out.push(k);
                }
                Ok(NameSet(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The `--config` file: upstream `Options`' YAML keys, all optional. Only keys present
/// override flags.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub annotations_allow_list: Option<LabelsAllowList>,
    pub labels_allow_list: Option<LabelsAllowList>,
    pub metric_allowlist: Option<NameSet>,
    pub metric_denylist: Option<NameSet>,
    pub metric_opt_in_list: Option<NameSet>,
    pub resources: Option<NameSet>,
    pub apiserver: Option<String>,
    /// `--custom-resource-state-config` (inline YAML).
    pub custom_resource_config: Option<String>,
    pub custom_resource_state_config_file: Option<String>,
    /// Deprecated alias of `custom_resource_state_config_file`, used only when neither the
    /// canonical key nor the flag sets the file.
    pub custom_resource_config_file: Option<String>,
    pub continue_without_custom_resource_state_config_file: Option<bool>,
    pub host: Option<String>,
    pub kubeconfig: Option<String>,
    /// `--pod-namespace`.
    pub namespace: Option<String>,
    pub node: Option<String>,
    pub pod: Option<String>,
    pub tls_config: Option<String>,
    pub telemetry_host: Option<String>,
    /// Upstream's untagged `Config` field; accepted and ignored (the file cannot move itself).
    pub config: Option<String>,
    pub continue_without_config: Option<bool>,
    pub namespaces: Option<Vec<String>>,
    pub namespaces_denylist: Option<Vec<String>>,
    /// Ignored (Go runtime setting).
    #[serde(rename = "auto-gomemlimit-ratio")]
    pub auto_gomemlimit_ratio: Option<f64>,
    pub port: Option<u16>,
    pub telemetry_port: Option<u16>,
    pub total_shards: Option<i32>,
    pub server_read_timeout: Option<String>,
    pub server_write_timeout: Option<String>,
    pub server_idle_timeout: Option<String>,
    pub server_read_header_timeout: Option<String>,
    pub shard: Option<i32>,
    /// Ignored (Go runtime setting).
    #[serde(rename = "auto-gomemlimit")]
    pub auto_gomemlimit: Option<bool>,
    /// `--custom-resource-state-only`.
    pub custom_resources_only: Option<bool>,
    pub enable_gzip_encoding: Option<bool>,
    /// Upstream's `Help` field; accepted and ignored.
    pub help: Option<bool>,
    pub track_unscheduled_pods: Option<bool>,
    /// `--use-apiserver-cache`.
    pub use_api_server_cache: Option<bool>,
    pub object_limit: Option<i64>,
    pub auth_filter: Option<bool>,
}

impl ConfigFile {
    /// Strictly parses a config file's text; `name` appears in errors.
    pub fn parse(name: &str, text: &str) -> Result<Self, ConfigError> {
        parse_yaml_str(name, text)
    }
}

impl Validate for ConfigFile {
    /// The checks that need no flags: durations parse, allowlist wildcards.
    fn validate(&self) -> Result<(), ValidationError> {
        for (key, v) in [
            ("server_read_timeout", &self.server_read_timeout),
            ("server_write_timeout", &self.server_write_timeout),
            ("server_idle_timeout", &self.server_idle_timeout),
            (
                "server_read_header_timeout",
                &self.server_read_header_timeout,
            ),
        ] {
            if let Some(v) = v {
                parse_go_duration(v).map_err(|m| ValidationError::new(key, m))?;
            }
        }
        for (key, v) in [
            ("labels_allow_list", &self.labels_allow_list),
            ("annotations_allow_list", &self.annotations_allow_list),
        ] {
            if let Some(list) = v {
                for (resource, keys) in list {
                    check_wildcards(keys)
                        .map_err(|m| ValidationError::new(format!("{key}.{resource}"), m))?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Resolution

/// A setting's name in errors: the flag, or the file and key when the file set it.
#[derive(Debug, Clone)]
struct Origin {
    file: Option<String>,
    overridden: BTreeSet<&'static str>,
}

impl Origin {
    fn of(&self, flag: &'static str, key: &'static str) -> String {
        match &self.file {
            Some(file) if self.overridden.contains(flag) => format!("{file}: {key}"),
            _ => flag.to_owned(),
        }
    }
}

/// Flags parsed into values, before the file and validation.
#[derive(Debug, Clone)]
struct Raw {
    resources: Vec<String>,
    namespaces: Vec<String>,
    namespaces_denylist: Vec<String>,
    metric_allowlist: Vec<String>,
    metric_denylist: Vec<String>,
    metric_opt_in_list: Vec<String>,
    labels_allowlist: LabelsAllowList,
    annotations_allowlist: LabelsAllowList,
    shard: i32,
    total_shards: i32,
    pod: String,
    pod_namespace: String,
    node: String,
    track_unscheduled_pods: bool,
    crs_inline: String,
    crs_file: Option<PathBuf>,
    crs_only: bool,
    crs_continue: bool,
    continue_without_config: bool,
    host: String,
    port: u16,
    telemetry_host: String,
    telemetry_port: u16,
    tls_config: Option<PathBuf>,
    enable_gzip_encoding: bool,
    use_apiserver_cache: bool,
    object_limit: i64,
    kubeconfig: Option<PathBuf>,
    apiserver: Option<String>,
    auth_filter: bool,
    timeouts: ServerTimeouts,
    origin: Origin,
}

fn invalid(setting: String, value: impl fmt::Display, message: impl Into<String>) -> OptionsError {
    OptionsError::Invalid {
        setting,
        value: value.to_string(),
        message: message.into(),
    }
}

fn non_empty_path(p: &Option<PathBuf>) -> Option<PathBuf> {
    p.clone().filter(|p| !p.as_os_str().is_empty())
}

fn dedup_keep_order(v: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    v.into_iter().filter(|x| seen.insert(x.clone())).collect()
}

impl Raw {
    fn from_args(args: &Args) -> Result<Raw, OptionsError> {
        let labels =
            |flag: &'static str, v: &Option<String>| -> Result<LabelsAllowList, OptionsError> {
                match v {
                    None => Ok(LabelsAllowList::new()),
                    Some(v) => parse_labels_allowlist(v).map_err(|m| invalid(flag.into(), v, m)),
                }
            };
        Ok(Raw {
            resources: split_set(&args.resources),
            namespaces: split_list(&args.namespaces),
            namespaces_denylist: split_list(&args.namespaces_denylist),
            metric_allowlist: split_set(&args.metric_allowlist),
            metric_denylist: split_set(&args.metric_denylist),
            metric_opt_in_list: split_set(&args.metric_opt_in_list),
            labels_allowlist: labels("--metric-labels-allowlist", &args.metric_labels_allowlist)?,
            annotations_allowlist: labels(
                "--metric-annotations-allowlist",
                &args.metric_annotations_allowlist,
            )?,
            shard: args.shard,
            total_shards: args.total_shards,
            pod: args.pod.clone(),
            pod_namespace: args.pod_namespace.clone(),
            node: args.node.clone(),
            track_unscheduled_pods: args.track_unscheduled_pods,
            crs_inline: args.custom_resource_state_config.clone(),
            crs_file: non_empty_path(&args.custom_resource_state_config_file),
            crs_only: args.custom_resource_state_only,
            crs_continue: args.continue_without_custom_resource_state_config_file,
            continue_without_config: args.continue_without_config,
            host: args.host.clone(),
            port: args.port,
            telemetry_host: args.telemetry_host.clone(),
            telemetry_port: args.telemetry_port,
            tls_config: non_empty_path(&args.tls_config),
            enable_gzip_encoding: args.enable_gzip_encoding,
            use_apiserver_cache: args.use_apiserver_cache,
            object_limit: args.object_limit,
            kubeconfig: non_empty_path(&args.kubeconfig),
            apiserver: args.apiserver.clone().filter(|s| !s.is_empty()),
            auth_filter: args.auth_filter,
            timeouts: ServerTimeouts {
                read: args.server_read_timeout,
                write: args.server_write_timeout,
                idle: args.server_idle_timeout,
                read_header: args.server_read_header_timeout,
            },
            origin: Origin {
                file: None,
                overridden: BTreeSet::new(),
            },
        })
    }

    /// Lays the file over the flags, key by key (see the module docs for the exact rules).
    fn apply(&mut self, name: &str, f: &ConfigFile) -> Result<(), OptionsError> {
        self.origin.file = Some(name.to_owned());
        let o = &mut self.origin.overridden;
        macro_rules! set {
            ($field:ident, $flag:literal, $value:expr) => {
                if let Some(v) = $value {
                    self.$field = v;
                    o.insert($flag);
                }
            };
        }
        let set_of = |s: &Option<NameSet>| {
            s.as_ref()
                .filter(|s| !s.0.is_empty())
                .map(|s| split_set(&s.0))
        };
        set!(resources, "--resources", set_of(&f.resources));
        set!(
            metric_allowlist,
            "--metric-allowlist",
            set_of(&f.metric_allowlist)
        );
        set!(
            metric_denylist,
            "--metric-denylist",
            set_of(&f.metric_denylist)
        );
        set!(
            metric_opt_in_list,
            "--metric-opt-in-list",
            set_of(&f.metric_opt_in_list)
        );
        set!(
            labels_allowlist,
            "--metric-labels-allowlist",
            f.labels_allow_list.clone()
        );
        set!(
            annotations_allowlist,
            "--metric-annotations-allowlist",
            f.annotations_allow_list.clone()
        );
        set!(
            namespaces,
            "--namespaces",
            f.namespaces.as_deref().map(split_list)
        );
        set!(
            namespaces_denylist,
            "--namespaces-denylist",
            f.namespaces_denylist.as_deref().map(split_list)
        );
        set!(shard, "--shard", f.shard);
        set!(total_shards, "--total-shards", f.total_shards);
        set!(pod, "--pod", f.pod.clone());
        set!(pod_namespace, "--pod-namespace", f.namespace.clone());
        set!(node, "--node", f.node.clone());
        set!(
            track_unscheduled_pods,
            "--track-unscheduled-pods",
            f.track_unscheduled_pods
        );
        set!(
            crs_inline,
            "--custom-resource-state-config",
            f.custom_resource_config.clone()
        );
        set!(
            crs_file,
            "--custom-resource-state-config-file",
            f.custom_resource_state_config_file
                .as_ref()
                .map(|p| Some(PathBuf::from(p)).filter(|p| !p.as_os_str().is_empty()))
        );
        if self.crs_file.is_none() {
            set!(
                crs_file,
                "--custom-resource-state-config-file",
                f.custom_resource_config_file
                    .as_ref()
                    .filter(|p| !p.is_empty())
                    .map(|p| Some(PathBuf::from(p)))
            );
        }
        set!(
            crs_only,
            "--custom-resource-state-only",
            f.custom_resources_only
        );
        set!(
            crs_continue,
            "--continue-without-custom-resource-state-config-file",
            f.continue_without_custom_resource_state_config_file
        );
        set!(
            continue_without_config,
            "--continue-without-config",
            f.continue_without_config
        );
        set!(host, "--host", f.host.clone());
        set!(port, "--port", f.port);
        set!(telemetry_host, "--telemetry-host", f.telemetry_host.clone());
        set!(telemetry_port, "--telemetry-port", f.telemetry_port);
        set!(
            tls_config,
            "--tls-config",
            f.tls_config
                .as_ref()
                .map(|p| Some(PathBuf::from(p)).filter(|p| !p.as_os_str().is_empty()))
        );
        set!(
            enable_gzip_encoding,
            "--enable-gzip-encoding",
            f.enable_gzip_encoding
        );
        set!(
            use_apiserver_cache,
            "--use-apiserver-cache",
            f.use_api_server_cache
        );
        set!(object_limit, "--object-limit", f.object_limit);
        set!(
            kubeconfig,
            "--kubeconfig",
            f.kubeconfig
                .as_ref()
                .map(|p| Some(PathBuf::from(p)).filter(|p| !p.as_os_str().is_empty()))
        );
        set!(
            apiserver,
            "--apiserver",
            f.apiserver
                .as_ref()
                .map(|s| Some(s.clone()).filter(|s| !s.is_empty()))
        );
        set!(auth_filter, "--auth-filter", f.auth_filter);

        let duration = |key: &'static str,
                        v: &Option<String>|
         -> Result<Option<Duration>, OptionsError> {
            v.as_ref()
                .map(|s| parse_go_duration(s).map_err(|m| invalid(format!("{name}: {key}"), s, m)))
                .transpose()
        };
        if let Some(d) = duration("server_read_timeout", &f.server_read_timeout)? {
            self.timeouts.read = d;
        }
        if let Some(d) = duration("server_write_timeout", &f.server_write_timeout)? {
            self.timeouts.write = d;
        }
        if let Some(d) = duration("server_idle_timeout", &f.server_idle_timeout)? {
            self.timeouts.idle = d;
        }
        if let Some(d) = duration("server_read_header_timeout", &f.server_read_header_timeout)? {
            self.timeouts.read_header = d;
        }
        for (key, list) in [
            ("labels_allow_list", &f.labels_allow_list),
            ("annotations_allow_list", &f.annotations_allow_list),
        ] {
            for (resource, keys) in list.iter().flatten() {
                check_wildcards(keys)
                    .map_err(|m| invalid(format!("{name}: {key}.{resource}"), keys.join(","), m))?;
            }
        }
        Ok(())
    }

    fn validate(self, log: LogArgs, config_file: Option<PathBuf>) -> Result<Options, OptionsError> {
        let origin = &self.origin;
        let relabel = |e: FilterError| -> OptionsError {
            match e {
                FilterError::InvalidRegex {
                    flag,
                    pattern,
                    reason,
                } => {
                    let flag = match flag.as_str() {
                        "--metric-allowlist" => origin.of("--metric-allowlist", "metric_allowlist"),
                        "--metric-denylist" => origin.of("--metric-denylist", "metric_denylist"),
                        _ => origin.of("--metric-opt-in-list", "metric_opt_in_list"),
                    };
                    FilterError::InvalidRegex {
                        flag,
                        pattern,
                        reason,
                    }
                    .into()
                }
                other => other.into(),
            }
        };

        // Resources.
        let resources: Vec<String> = if self.crs_only {
            Vec::new()
        } else if self.resources.is_empty() {
            DEFAULT_RESOURCES.iter().map(|s| s.to_string()).collect()
        } else {
            if let Some(bad) = self
                .resources
                .iter()
                .find(|r| !ALL_RESOURCES.contains(&r.as_str()))
            {
                return Err(invalid(
                    origin.of("--resources", "resources"),
                    self.resources.join(","),
                    format!(
                        "resource {bad} does not exist. Available resources: {}",
                        ALL_RESOURCES.join(",")
                    ),
                ));
            }
            self.resources.clone()
        };

        // Node-scoped pods only.
        if !self.node.is_empty() || self.track_unscheduled_pods {
            let (setting, value) = if self.track_unscheduled_pods {
                (
                    origin.of("--track-unscheduled-pods", "track_unscheduled_pods"),
                    "true".to_owned(),
                )
            } else {
                (origin.of("--node", "node"), self.node.clone())
            };
            if let Some(bad) = resources.iter().find(|r| *r != "pods") {
                return Err(invalid(
                    setting,
                    value,
                    format!(
                        "resource {bad} can't be sharded by field selector spec.nodeName; \
                         set --resources=pods"
                    ),
                ));
            }
        }

        // Sharding.
        if self.total_shards < 1 {
            return Err(invalid(
                origin.of("--total-shards", "total_shards"),
                self.total_shards,
                "must be at least 1",
            ));
        }
        if self.shard < 0 || self.shard >= self.total_shards {
            return Err(invalid(
                origin.of("--shard", "shard"),
                self.shard,
                format!(
                    "must be at least 0 and less than {}={}",
                    origin.of("--total-shards", "total_shards"),
                    self.total_shards
                ),
            ));
        }
        let sharding = match (self.pod.is_empty(), self.pod_namespace.is_empty()) {
            (true, true) => ShardingMode::Static(Sharding {
                shard: self.shard,
                total: self.total_shards,
            }),
            (false, false) => ShardingMode::Auto {
                pod: self.pod.clone(),
                namespace: self.pod_namespace.clone(),
            },
            (false, true) => {
                return Err(invalid(
                    origin.of("--pod", "pod"),
                    &self.pod,
                    "auto-sharding needs --pod-namespace as well",
                ));
            }
            (true, false) => {
                return Err(invalid(
                    origin.of("--pod-namespace", "namespace"),
                    &self.pod_namespace,
                    "auto-sharding needs --pod as well",
                ));
            }
        };

        if self.object_limit < 0 {
            return Err(invalid(
                origin.of("--object-limit", "object_limit"),
                self.object_limit,
                "must be 0 (no limit) or more",
            ));
        }

        // Filters.
        let family_filter = FamilyFilter::new(
            &self.metric_allowlist,
            &self.metric_denylist,
            &self.metric_opt_in_list,
        )
        .map_err(relabel)?;
        let labels_allowlist = KeyAllowlists::resolve(
            &origin.of("--metric-labels-allowlist", "labels_allow_list"),
            &self.labels_allowlist,
            &resources,
            &ALL_RESOURCES,
        )?;
        let annotations_allowlist = KeyAllowlists::resolve(
            &origin.of("--metric-annotations-allowlist", "annotations_allow_list"),
            &self.annotations_allowlist,
            &resources,
            &ALL_RESOURCES,
        )?;

        // Namespaces: an empty entry means all (upstream's NamespaceAll).
        let namespaces = if self.namespaces.iter().any(String::is_empty) {
            Vec::new()
        } else {
            dedup_keep_order(self.namespaces)
        };
        let namespaces_denylist = dedup_keep_order(self.namespaces_denylist);
        let node_selector = if self.track_unscheduled_pods {
            "spec.nodeName=".to_owned()
        } else {
            node_field_selector(&self.node)
        };
        let field_selector = merge_field_selectors(&[
            &namespace_denylist_field_selector(&namespaces_denylist),
            &node_selector,
        ]);

        let custom_resource_config = if !self.crs_inline.is_empty() {
            CustomResourceConfig::Inline(self.crs_inline)
        } else if let Some(path) = self.crs_file {
            CustomResourceConfig::File {
                path,
                continue_if_missing: self.crs_continue,
            }
        } else {
            CustomResourceConfig::None
        };

        Ok(Options {
            resources,
            custom_resource_state_only: self.crs_only,
            namespaces,
            namespaces_denylist,
            node: Some(self.node).filter(|n| !n.is_empty()),
            track_unscheduled_pods: self.track_unscheduled_pods,
            field_selector,
            family_filter,
            labels_allowlist,
            annotations_allowlist,
            sharding,
            custom_resource_config,
            host: self.host,
            port: self.port,
            telemetry_host: self.telemetry_host,
            telemetry_port: self.telemetry_port,
            tls_config: self.tls_config,
            enable_gzip_encoding: self.enable_gzip_encoding,
            use_apiserver_cache: self.use_apiserver_cache,
            object_limit: u64::try_from(self.object_limit).ok().filter(|&n| n > 0),
            kubeconfig: self.kubeconfig,
            apiserver: self.apiserver,
            config_file,
            continue_without_config: self.continue_without_config,
            auth_filter: self.auth_filter,
            timeouts: self.timeouts,
            log,
        })
    }
}

/// Flags only (ignores `--config`'s content, but records the path in
/// [`Options::config_file`]).
pub fn resolve(args: &Args) -> Result<Options, OptionsError> {
    Raw::from_args(args)?.validate(args.log.clone(), non_empty_path(&args.config))
}

/// Flags with a parsed config file laid over them; `name` (the file's path) appears in errors.
pub fn resolve_with_config(
    args: &Args,
    name: &str,
    file: &ConfigFile,
) -> Result<Options, OptionsError> {
    let mut raw = Raw::from_args(args)?;
    raw.apply(name, file)?;
    raw.validate(args.log.clone(), non_empty_path(&args.config))
}

/// Startup: [`resolve`], or with `--config`, read the file and [`resolve_with_config`]. A
/// missing or invalid file is an error unless `--continue-without-config`, in which case the
/// flags alone are used (the runtime keeps watching the file, as upstream).
pub fn load(args: &Args) -> Result<Options, OptionsError> {
    let Some(path) = non_empty_path(&args.config) else {
        return resolve(args);
    };
    let name = path.display().to_string();
    let parsed = std::fs::read(&path)
        .map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })
        .and_then(|bytes| utf8_text(&name, bytes))
        .and_then(|text| ConfigFile::parse(&name, &text));
    match parsed {
        Ok(file) => resolve_with_config(args, &name, &file),
        Err(_) if args.continue_without_config => resolve(args),
        Err(e) => Err(e.into()),
    }
}

/// A loader for `ConfigWatcher::start_with(config_path, watch_options, config_loader(args))`:
/// every (re)load merges the file over the original flags and validates the result, so a bad
/// edit is reported with file and key and the last good [`Options`] stay in force.
pub fn config_loader(
    args: Args,
) -> impl Fn(&str, Vec<u8>) -> Result<Options, ConfigError> + Send + Sync + 'static {
    move |name, bytes| {
        let text = utf8_text(name, bytes)?;
        let file = ConfigFile::parse(name, &text)?;
        resolve_with_config(&args, name, &file).map_err(|e| match e {
            OptionsError::Config(c) => c,
            other => ConfigError::Invalid {
                file: name.to_owned(),
                error: ValidationError::new("", other.to_string()),
            },
        })
    }
}

#[cfg(test)]
mod tests;
