//! Command-line flags, with prometheus-adapter's (and the generic API server's) names and
//! defaults so a deployment migrates by swapping the image.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use ferrocrane_core::duration::GoDuration;
use ferrocrane_core::kube::ClientArgs;
use ferrocrane_core::process::LogArgs;
use ferrocrane_core::prometheus::{BasicAuth, PrometheusConfig, Verb};
use serde::Deserialize;

/// Parses a duration flag like prometheus-adapter's `time.Duration` flags: Go's
/// `time.ParseDuration` (`10m`, `1h30m`, `1.5m`, `500ms`, `0`). Go would also take a negative
/// interval or timeout, which means nothing here, so it is refused.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = GoDuration::parse(s).map_err(|e| e.to_string())?;
    d.to_std().map_err(|_| format!("{s:?} is negative"))
}

/// `metrics-adapter`: serve the APIs, or `check-config`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "metrics-adapter",
    version,
    about = "prometheus-adapter-compatible aggregated API server",
    args_conflicts_with_subcommands = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub prometheus: PrometheusArgs,

    /// Configuration file containing details of how to transform between Prometheus metrics
    /// and custom metrics API resources. Reloaded when it changes.
    #[arg(long)]
    pub config: Option<PathBuf>,

    /// Interval at which to re-list the set of all available metrics from Prometheus.
    #[arg(long = "metrics-relist-interval", default_value = "10m", value_parser = parse_duration)]
    pub metrics_relist_interval: Duration,

    /// Period for which to query the set of available metrics from Prometheus (default: the
    /// relist interval). Must not be less than the relist interval.
    #[arg(long = "metrics-max-age", value_parser = parse_duration)]
    pub metrics_max_age: Option<Duration>,

    #[command(flatten)]
    pub serving: ServingArgs,

    #[command(flatten)]
    pub auth: AuthArgs,

    /// Kubeconfig of the API server whose objects `*` requests list (default: --kubeconfig).
    #[arg(long = "lister-kubeconfig")]
    pub lister_kubeconfig: Option<PathBuf>,

    /// Answer custom-metrics `*` requests from a metadata-only watch of the resource (names,
    /// namespaces, labels) once it has synced, instead of a LIST per request (upstream's
    /// behaviour, `--object-cache=false`). Not in upstream.
    #[arg(long = "object-cache", default_value_t = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub object_cache: bool,

    /// Serve Crane's `crane_autoscaling_cron` and `crane_autoscaling_prediction` external
    /// metrics from EffectiveHorizontalPodAutoscalers and TimeSeriesPredictions once the API
    /// server serves their CRDs (`=false`: never, as prometheus-adapter). Not in upstream.
    #[arg(long = "crane-autoscaling-metrics", default_value_t = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub crane_autoscaling_metrics: bool,

    /// Interval at which to refresh API discovery (resource names and kinds).
    #[arg(long = "discovery-interval", default_value = "10m", value_parser = parse_duration)]
    pub discovery_interval: Duration,

    #[command(flatten)]
    pub kube: ClientArgs,

    #[command(flatten)]
    pub log: LogArgs,
}

/// Subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Loads a config, lists the series of its rules from Prometheus, and prints every metric it
    /// discovers, the resource it maps to and the exact query it would run. Exits non-zero
    /// naming the problem when the config is invalid.
    CheckConfig(CheckArgs),
}

/// `check-config` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The configuration file to check.
    #[arg(long)]
    pub config: PathBuf,

    #[command(flatten)]
    pub prometheus: PrometheusArgs,

    /// How far back to look for series.
    #[arg(long = "metrics-max-age", default_value = "10m", value_parser = parse_duration)]
    pub metrics_max_age: Duration,

    /// Resolve resources with this cluster's discovery (default: only the core resources
    /// every cluster has).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,

    /// Namespace used in the printed example queries.
    #[arg(long, default_value = "default")]
    pub namespace: String,
}

/// How to reach Prometheus.
#[derive(Debug, Clone, clap::Args)]
pub struct PrometheusArgs {
    /// URL for connecting to Prometheus.
    #[arg(long = "prometheus-url", default_value = "https://localhost")]
    pub url: String,
    /// Use the in-cluster service account's token and CA when connecting to Prometheus.
    #[arg(long = "prometheus-auth-incluster")]
    pub auth_incluster: bool,
    /// Kubeconfig file whose current context's cluster CA and user credentials are used to
    /// connect to Prometheus (the server URL still comes from --prometheus-url).
    #[arg(long = "prometheus-auth-config")]
    pub auth_config: Option<PathBuf>,
    /// CA file to use when connecting with Prometheus.
    #[arg(long = "prometheus-ca-file")]
    pub ca_file: Option<PathBuf>,
    /// Client TLS certificate file to use when connecting with Prometheus (re-read on
    /// change).
    #[arg(long = "prometheus-client-tls-cert-file")]
    pub client_cert_file: Option<PathBuf>,
    /// Client TLS key file to use when connecting with Prometheus.
    #[arg(long = "prometheus-client-tls-key-file")]
    pub client_key_file: Option<PathBuf>,
    /// File containing the bearer token to use when connecting with Prometheus (re-read when
    /// it changes).
    #[arg(long = "prometheus-token-file")]
    pub token_file: Option<PathBuf>,
    /// Headers, long-URL POST, partial responses: shared with craned.
    #[command(flatten)]
    pub layer: ferrocrane_core::prometheus::QueryLayerArgs,
    /// Most series one relist answer may hold (sent as `limit`); a longer answer, or one the
    /// backend says it truncated, fails that rule's relist with an error naming this flag.
    /// 0: no limit. Not in upstream.
    #[arg(long = "prometheus-series-limit", default_value_t = 0)]
    pub series_limit: usize,
    /// HTTP verb to set on requests to Prometheus: GET or POST.
    #[arg(long = "prometheus-verb", default_value = "GET")]
    pub verb: String,
    /// Timeout of each Prometheus request (upstream has none, so a hung Prometheus hangs the
    /// HPA's requests).
    #[arg(long = "prometheus-query-timeout", default_value = "30s", value_parser = parse_duration)]
    pub query_timeout: Duration,
    /// Largest Prometheus answer read, as a quantity of bytes (`0`: no limit); a larger one
    /// fails that request (or relist) with an error naming this flag instead of exhausting
    /// memory. Upstream reads any size.
    #[arg(long = "prometheus-max-response-size", default_value = ferrocrane_core::prometheus::DEFAULT_MAX_RESPONSE_SIZE)]
    pub max_response_size: String,
}

/// HTTPS serving.
#[derive(Debug, Clone, clap::Args)]
pub struct ServingArgs {
    /// The port on which to serve HTTPS with authentication and authorization.
    #[arg(long = "secure-port", default_value_t = 443)]
    pub secure_port: u16,
    /// The IP address on which to listen for the --secure-port port.
    #[arg(long = "bind-address", default_value = "0.0.0.0")]
    pub bind_address: std::net::IpAddr,
    /// The directory where the self-signed certificate is written when --tls-cert-file and
    /// --tls-private-key-file are not given.
    #[arg(
        long = "cert-dir",
        default_value = "apiserver.local.config/certificates"
    )]
    pub cert_dir: PathBuf,
    /// File containing the default x509 certificate for HTTPS (CA cert, if any, concatenated
    /// after the server cert).
    #[arg(long = "tls-cert-file")]
    pub tls_cert_file: Option<PathBuf>,
    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long = "tls-private-key-file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Serve HTTP/1.1 only.
    #[arg(long = "disable-http2")]
    pub disable_http2: bool,
}

/// Delegated authentication and authorization.
#[derive(Debug, Clone, clap::Args)]
pub struct AuthArgs {
    /// Root certificate bundle to verify client certificates on incoming requests before
    /// trusting usernames in the headers of --requestheader-username-headers. Default: read
    /// from the kube-system/extension-apiserver-authentication ConfigMap.
    #[arg(long = "requestheader-client-ca-file")]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Client certificate common names allowed to provide usernames in the request headers.
    /// Empty allows any certificate the requestheader CA verified.
    #[arg(long = "requestheader-allowed-names", value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// Request headers to inspect for usernames.
    #[arg(long = "requestheader-username-headers", value_delimiter = ',')]
    pub requestheader_username_headers: Vec<String>,
    /// Request headers to inspect for groups.
    #[arg(long = "requestheader-group-headers", value_delimiter = ',')]
    pub requestheader_group_headers: Vec<String>,
    /// Request header prefixes to inspect for extra attributes.
    #[arg(long = "requestheader-extra-headers-prefix", value_delimiter = ',')]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// Kubeconfig pointing at the API server that creates TokenReviews (default: --kubeconfig).
    #[arg(long = "authentication-kubeconfig")]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// Kubeconfig pointing at the API server that creates SubjectAccessReviews (default:
    /// --kubeconfig).
    #[arg(long = "authorization-kubeconfig")]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// Do not read the requestheader settings from the cluster's
    /// extension-apiserver-authentication ConfigMap.
    #[arg(long = "authentication-skip-lookup")]
    pub authentication_skip_lookup: bool,
    /// Paths served without authentication or authorization (`*` suffix: prefix match).
    #[arg(
        long = "authorization-always-allow-paths",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez"
    )]
    pub always_allow_paths: Vec<String>,
    /// How long TokenReview and SubjectAccessReview answers are cached.
    #[arg(long = "authentication-token-webhook-cache-ttl", default_value = "10s", value_parser = parse_duration)]
    pub cache_ttl: Duration,
}

/// Why flags do not make a usable configuration.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("--prometheus-header: {0}")]
    Header(String),
    #[error("--prometheus-verb: {0}")]
    Verb(String),
    #[error("--prometheus-max-response-size: {0}")]
    MaxResponseSize(String),
    #[error(
        "--prometheus-client-tls-cert-file and --prometheus-client-tls-key-file must be given together"
    )]
    ClientCertPair,
    #[error("--tls-cert-file and --tls-private-key-file must be given together")]
    ServingCertPair,
    #[error("--prometheus-auth-incluster and --prometheus-auth-config cannot be used together")]
    AuthSources,
    #[error(
        "--metrics-max-age ({max_age:?}) must not be less than --metrics-relist-interval ({interval:?})"
    )]
    MaxAge {
        max_age: Duration,
        interval: Duration,
    },
    #[error("--prometheus-auth-config {path}: {message}")]
    AuthConfig { path: PathBuf, message: String },
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl Args {
    /// `--metrics-max-age`, defaulting to the relist interval, checked like upstream.
    pub fn max_age(&self) -> Result<Duration, OptionsError> {
        let max_age = self.metrics_max_age.unwrap_or(self.metrics_relist_interval);
        if max_age < self.metrics_relist_interval {
            return Err(OptionsError::MaxAge {
                max_age,
                interval: self.metrics_relist_interval,
            });
        }
        Ok(max_age)
    }

    /// Cross-flag checks that clap cannot express.
    pub fn validate(&self) -> Result<(), OptionsError> {
        self.max_age()?;
        if self.serving.tls_cert_file.is_some() != self.serving.tls_private_key_file.is_some() {
            return Err(OptionsError::ServingCertPair);
        }
        self.prometheus.validate()
    }
}

impl PrometheusArgs {
    pub fn validate(&self) -> Result<(), OptionsError> {
        self.verb.parse::<Verb>().map_err(OptionsError::Verb)?;
        self.layer.headers().map_err(OptionsError::Header)?;
        if self.client_cert_file.is_some() != self.client_key_file.is_some() {
            return Err(OptionsError::ClientCertPair);
        }
        if self.auth_incluster && self.auth_config.is_some() {
            return Err(OptionsError::AuthSources);
        }
        Ok(())
    }

    /// The client configuration. Credentials given inline in an auth kubeconfig are written
    /// to files in `scratch` (the client reads files so rotation works).
    pub fn client_config(&self, scratch: &Path) -> Result<PrometheusConfig, OptionsError> {
        self.validate()?;
        let mut cfg = PrometheusConfig::new(self.url.clone());
        cfg.verb = self.verb.parse().map_err(OptionsError::Verb)?;
        cfg.timeout = self.query_timeout;
        cfg.max_response_bytes =
            ferrocrane_core::prometheus::parse_response_limit(&self.max_response_size)
                .map_err(OptionsError::MaxResponseSize)?;
        self.layer.apply(&mut cfg).map_err(OptionsError::Header)?;
        cfg.series_limit = (self.series_limit > 0).then_some(self.series_limit);
        if self.auth_incluster {
            let sa = Path::new("/var/run/secrets/kubernetes.io/serviceaccount");
            cfg.bearer_token_file = Some(sa.join("token"));
            cfg.ca_file = Some(sa.join("ca.crt"));
        }
        if let Some(path) = &self.auth_config {
            let auth = KubeconfigAuth::load(path, scratch)?;
            cfg.ca_file = auth.ca_file;
            cfg.insecure_skip_verify = auth.insecure_skip_verify;
            cfg.bearer_token_file = auth.token_file;
            cfg.client_cert_file = auth.client_cert_file;
            cfg.client_key_file = auth.client_key_file;
            cfg.basic_auth = auth.basic_auth;
        }
        // Explicit flags win over the kubeconfig's, as upstream (the CA file replaces it).
        if let Some(ca) = &self.ca_file {
            cfg.ca_file = Some(ca.clone());
        }
        if let (Some(c), Some(k)) = (&self.client_cert_file, &self.client_key_file) {
            cfg.client_cert_file = Some(c.clone());
            cfg.client_key_file = Some(k.clone());
        }
        if let Some(t) = &self.token_file {
            cfg.bearer_token_file = Some(t.clone());
        }
        Ok(cfg)
    }
}

/// The parts of a kubeconfig that configure a connection (not its server).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<Named<KubeCluster>>,
    #[serde(default)]
    users: Vec<Named<KubeUser>>,
    #[serde(default)]
    contexts: Vec<Named<KubeContext>>,
    #[serde(default)]
    current_context: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: Option<T>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct KubeCluster {
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<k8s_openapi::ByteString>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct KubeUser {
    token: Option<String>,
    token_file: Option<PathBuf>,
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<k8s_openapi::ByteString>,
    client_key: Option<PathBuf>,
    client_key_data: Option<k8s_openapi::ByteString>,
    username: Option<String>,
    password: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct KubeContext {
    cluster: String,
    user: Option<String>,
}

/// Connection settings taken from `--prometheus-auth-config`.
#[derive(Debug, Default)]
pub struct KubeconfigAuth {
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: bool,
    pub token_file: Option<PathBuf>,
    pub client_cert_file: Option<PathBuf>,
    pub client_key_file: Option<PathBuf>,
    pub basic_auth: Option<BasicAuth>,
}

impl KubeconfigAuth {
    /// Reads the current context's cluster and user. Relative paths are relative to the
    /// kubeconfig's directory, as client-go resolves them.
    pub fn load(path: &Path, scratch: &Path) -> Result<Self, OptionsError> {
        let err = |message: String| OptionsError::AuthConfig {
            path: path.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let kc: Kubeconfig =
            ferrocrane_core::config::parse_yaml_str(&path.display().to_string(), &text)
                .map_err(|e| err(e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &PathBuf| {
            if p.is_absolute() {
                p.clone()
            } else {
                base.join(p)
            }
        };
        let ctx_name = kc
            .current_context
            .clone()
            .or_else(|| kc.contexts.first().map(|c| c.name.clone()))
            .ok_or_else(|| err("no current-context and no contexts".into()))?;
        let ctx = kc
            .contexts
            .iter()
            .find(|c| c.name == ctx_name)
            .and_then(|c| c.value.as_ref())
            .ok_or_else(|| err(format!("context {ctx_name:?} not found")))?;
        let cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == ctx.cluster)
            .and_then(|c| c.value.as_ref())
            .ok_or_else(|| err(format!("cluster {:?} not found", ctx.cluster)))?;
        let user = match &ctx.user {
            Some(u) => kc
                .users
                .iter()
                .find(|n| &n.name == u)
                .and_then(|n| n.value.as_ref())
                .ok_or_else(|| err(format!("user {u:?} not found")))?,
            None => &KubeUser::default(),
        };
        let write = |name: &str, data: &[u8], mode: u32| -> Result<PathBuf, OptionsError> {
            std::fs::create_dir_all(scratch)
                .map_err(|e| OptionsError::Io(scratch.to_owned(), e))?;
            let p = scratch.join(name);
            write_private(&p, data, mode).map_err(|e| OptionsError::Io(p.clone(), e))?;
            Ok(p)
        };
        let mut out = KubeconfigAuth {
            insecure_skip_verify: cluster.insecure_skip_tls_verify,
            ..KubeconfigAuth::default()
        };
        out.ca_file = match (
            &cluster.certificate_authority,
            &cluster.certificate_authority_data,
        ) {
            (Some(p), _) => Some(resolve(p)),
            (None, Some(d)) => Some(write("prometheus-ca.crt", &d.0, 0o644)?),
            _ => None,
        };
        out.client_cert_file = match (&user.client_certificate, &user.client_certificate_data) {
            (Some(p), _) => Some(resolve(p)),
            (None, Some(d)) => Some(write("prometheus-client.crt", &d.0, 0o644)?),
            _ => None,
        };
        out.client_key_file = match (&user.client_key, &user.client_key_data) {
            (Some(p), _) => Some(resolve(p)),
            (None, Some(d)) => Some(write("prometheus-client.key", &d.0, 0o600)?),
            _ => None,
        };
        if out.client_cert_file.is_some() != out.client_key_file.is_some() {
            return Err(err(
                "user has a client certificate without a key, or a key without a certificate"
                    .into(),
            ));
        }
        out.token_file = match (&user.token_file, &user.token) {
            (Some(p), _) => Some(resolve(p)),
            (None, Some(t)) => Some(write("prometheus-token", t.as_bytes(), 0o600)?),
            _ => None,
        };
        if let Some(username) = &user.username {
            out.basic_auth = Some(BasicAuth {
                username: username.clone(),
                password: user.password.clone().unwrap_or_default(),
            });
        }
        Ok(out)
    }
}

fn write_private(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    options.open(path)?.write_all(data)
}

#[cfg(test)]
mod tests;
