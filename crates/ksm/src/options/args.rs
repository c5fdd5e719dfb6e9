//! kube-state-metrics' command-line flags, as clap parses them.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};
use ferrocrane_core::process::LogArgs;

use super::duration::parse_go_duration;
use super::syntax::parse_go_bool;

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

    /// Ask the API server for this shard's objects only (KEP-5866 shardSelector; kube-apiserver
    /// 1.36+ with the ShardedListAndWatch feature gate) instead of receiving every object and
    /// dropping the other shards'. Assigns UID hash ranges, not client-side sharding's jump
    /// hash: never mix the two in one fleet. Not with auto-sharding (--pod). Experimental.
    #[arg(long = "server-side-sharding", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub server_side_sharding: bool,

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
