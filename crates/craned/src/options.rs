//! The manager's flags (Crane's names and defaults, `cmd/craned/app/options`) and their
//! validation into [`Settings`].
//!
//! Go's boolean flags accept `--flag`, `--flag=true` and `--flag=false`; the chart passes
//! `--leader-elect=true`, so booleans here take an optional `=value` the same way. Durations are
//! Go durations (`3m`, `15s`, `1h30m`). Every error names its flag.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args as ClapArgs};
use ferrocrane_core::kube::ClientArgs;
use ferrocrane_core::prometheus::remote_read::ReadFormat;
use ferrocrane_core::prometheus::{BasicAuth, PrometheusConfig};

use crate::recommender::config::parse_crane_duration;

/// Where Crane reads the recommendation configuration when the flag is not given.
pub const DEFAULT_CONFIGURATION_FILE: &str =
    "/tmp/recommendation-framework/recommendation_configuration.yaml";

/// Crane's namespace, used when `POD_NAMESPACE` is not set (Recommendations of cluster-scoped
/// targets, the Lease and the `oom-record` ConfigMap live there).
pub const DEFAULT_NAMESPACE: &str = "crane-system";

/// The flags of `craned` without a subcommand (the manager).
#[derive(Debug, Clone, ClapArgs)]
pub struct ManagerArgs {
    /// Prometheus address (the history of every recommendation is read from it).
    #[arg(long = "prometheus-address", default_value = "")]
    pub prometheus_address: String,
    /// Prometheus basic-auth username.
    #[arg(long = "prometheus-auth-username", default_value = "")]
    pub prometheus_auth_username: String,
    /// Prometheus basic-auth password.
    #[arg(long = "prometheus-auth-password", default_value = "")]
    pub prometheus_auth_password: String,
    /// Prometheus bearer token (prefer --prometheus-bearer-token-file: a flag is visible in
    /// the process list and does not rotate).
    #[arg(long = "prometheus-auth-bearertoken", default_value = "")]
    pub prometheus_auth_bearertoken: String,
    /// File holding a Prometheus bearer token, re-read when it changes (ferrocrane).
    #[arg(long = "prometheus-bearer-token-file")]
    pub prometheus_bearer_token_file: Option<PathBuf>,
    /// PEM bundle of CAs that sign Prometheus' certificate (ferrocrane).
    #[arg(long = "prometheus-ca-file")]
    pub prometheus_ca_file: Option<PathBuf>,
    /// Skip verification of Prometheus' certificate.
    #[arg(long = "prometheus-insecure-skip-verify", default_value_t = false,
          num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = ArgAction::Set)]
    pub prometheus_insecure_skip_verify: bool,
    /// Timeout of one Prometheus request.
    #[arg(long = "prometheus-timeout", default_value = "3m")]
    pub prometheus_timeout: String,
    /// Prometheus queries in flight at once.
    #[arg(long = "prometheus-query-concurrency", default_value_t = 10)]
    pub prometheus_query_concurrency: usize,
    /// Points per series above which a range query is split.
    #[arg(long = "prometheus-maxpoints", default_value_t = 11000)]
    pub prometheus_maxpoints: u64,
    /// Largest Prometheus answer read, as a quantity of bytes (`0`: no limit); a larger one
    /// fails that query with an error naming this flag instead of exhausting memory. Not in
    /// Crane (which reads any size).
    #[arg(long = "prometheus-max-response-size", default_value = ferrocrane_core::prometheus::DEFAULT_MAX_RESPONSE_SIZE)]
    pub prometheus_max_response_size: String,
    /// How workload usage history is read: `chunks` (remote read, the TSDB's chunks decoded
    /// here), `samples` (remote read, decoded by Prometheus) or `off` (range queries, as
    /// Crane). Remote read gives the same values as the range queries at a fraction of
    /// Prometheus' CPU; a backend without it (Thanos Query, VictoriaMetrics) is read with
    /// range queries automatically. Not in Crane.
    #[arg(long = "prometheus-remote-read", default_value = "chunks",
          value_parser = ["chunks", "samples", "off"])]
    pub prometheus_remote_read: String,
    /// Headers, long-URL POST, partial responses: shared with metrics-adapter.
    /// Not in Crane, whose queries break on long selectors behind Thanos (Crane #907).
    #[command(flatten)]
    pub prometheus_layer: ferrocrane_core::prometheus::QueryLayerArgs,
    /// The recommendation configuration file (Crane's format), reloaded when it changes.
    #[arg(long = "recommendation-configuration-file", default_value = DEFAULT_CONFIGURATION_FILE)]
    pub recommendation_configuration_file: PathBuf,
    /// Hold a coordination.k8s.io Lease before writing anything, so replicas never both write.
    #[arg(long = "leader-elect", default_value_t = true,
          num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = ArgAction::Set)]
    pub leader_elect: bool,
    /// How long a Lease stays valid without renewal; other candidates wait this long.
    #[arg(long = "lease-duration", default_value = "15s")]
    pub lease_duration: String,
    /// The leader gives up (stops writing) if it could not renew for this long.
    #[arg(long = "lease-renew-period", default_value = "10s")]
    pub lease_renew_period: String,
    /// How often candidates try to acquire, and the leader to renew.
    #[arg(long = "lease-retry-period", default_value = "2s")]
    pub lease_retry_period: String,
    /// The address /metrics binds to (`:8080` is every interface; `0` disables).
    #[arg(long = "metrics-bind-address", default_value = ":8080")]
    pub metrics_bind_address: String,
    /// The address /healthz and /readyz bind to.
    #[arg(long = "health-probe-bind-address", default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// Entries kept in the oom-record ConfigMap.
    #[arg(long = "oom-record-max-number", default_value_t = 10000)]
    pub oom_record_max_number: usize,
    /// Let Recommendations with adoptionType Auto patch their targets (ferrocrane: Crane's Auto
    /// is a no-op for most types; here it writes, so it is opt-in).
    #[arg(long = "auto-adoption", default_value_t = false,
          num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = ArgAction::Set)]
    pub auto_adoption: bool,
    /// Leave a Recommendation alone when a round would change nothing in it but its
    /// run-number and timestamps (ferrocrane; `=false` rewrites every one every round, as
    /// Crane does).
    #[arg(long = "skip-unchanged-writes", default_value_t = true,
          num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = ArgAction::Set)]
    pub skip_unchanged_writes: bool,
    /// How often each TimeSeriesPrediction is checked (Crane's flag, default 30s); its status
    /// is rewritten only when its series no longer reach the next window.
    #[arg(long = "prediction-update-frequency-duration", default_value = "30s")]
    pub prediction_update_frequency: String,
    /// How long a fitted prediction model is used before it is fitted again (Crane's flag).
    #[arg(long = "model-update-interval", default_value = "12h")]
    pub model_update_interval: String,
    /// Prediction models fitted at a time (Crane's flag, where it counts reconcile workers;
    /// here reconciles never wait for a model).
    #[arg(
        long = "time-series-prediction-max-concurrent-reconciles",
        default_value_t = 10
    )]
    pub time_series_prediction_max_concurrent_reconciles: usize,
    /// craned's own namespace: the Lease, the oom-record ConfigMap, and Recommendations of
    /// cluster-scoped targets (nodes, volumes).
    #[arg(long = "pod-namespace", env = "POD_NAMESPACE", default_value = DEFAULT_NAMESPACE)]
    pub pod_namespace: String,
    /// This replica's identity in the Lease (default: the hostname).
    #[arg(long = "pod-name", env = "POD_NAME")]
    pub pod_name: Option<String>,
    /// Crane's spelling of --kube-api-qps.
    #[arg(long = "api-qps")]
    pub api_qps: Option<f32>,
    /// Crane's spelling of --kube-api-burst.
    #[arg(long = "api-burst")]
    pub api_burst: Option<u32>,
    #[command(flatten)]
    pub kube: ClientArgs,
}

/// A flag with a bad value.
#[derive(Debug, thiserror::Error)]
#[error("--{flag}: {message}")]
pub struct OptionsError {
    pub flag: &'static str,
    pub message: String,
}

fn err(flag: &'static str, message: impl Into<String>) -> OptionsError {
    OptionsError {
        flag,
        message: message.into(),
    }
}

/// Leader-election timings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseSettings {
    pub duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// How TimeSeriesPredictions are kept up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PredictionSettings {
    pub update_period: Duration,
    pub model_refresh: Duration,
    pub concurrency: usize,
}

/// The validated manager settings.
#[derive(Debug, Clone)]
pub struct Settings {
    pub prometheus: PrometheusConfig,
    pub query_concurrency: usize,
    pub history_read: crate::datasource::HistoryRead,
    pub configuration_file: PathBuf,
    /// `None`: no leader election (a single replica writes at once).
    pub leader_election: Option<LeaseSettings>,
    pub metrics_addr: Option<SocketAddr>,
    pub health_addr: Option<SocketAddr>,
    pub oom_record_max_number: usize,
    pub auto_adoption: bool,
    pub skip_unchanged_writes: bool,
    /// The TimeSeriesPrediction controller's timing.
    pub prediction: PredictionSettings,
    pub namespace: String,
    pub identity: String,
    pub kube: ClientArgs,
}

/// A Go duration flag of at least a second.
pub fn parse_duration(flag: &'static str, value: &str) -> Result<Duration, OptionsError> {
    // Crane's parser also accepts `7d`; harmless for flags.
    match parse_crane_duration(value.trim()).map(|d| d.to_std()) {
        Some(Ok(d)) if d >= Duration::from_secs(1) => Ok(d),
        Some(_) => Err(err(flag, format!("{value:?} must be at least 1s"))),
        None => Err(err(
            flag,
            format!("{value:?} is not a duration such as 15s or 3m"),
        )),
    }
}

/// controller-runtime's bind addresses: `:8080` (all interfaces), `host:port`, or `0` (off).
pub fn parse_bind_address(
    flag: &'static str,
    value: &str,
) -> Result<Option<SocketAddr>, OptionsError> {
    let v = value.trim();
    if v == "0" || v.is_empty() {
        return Ok(None);
    }
    let full = if let Some(port) = v.strip_prefix(':') {
        format!("0.0.0.0:{port}")
    } else {
        v.to_string()
    };
    use std::net::ToSocketAddrs;
    full.to_socket_addrs()
        .map_err(|e| err(flag, format!("{value:?} is not host:port or :port: {e}")))?
        .next()
        .map(Some)
        .ok_or_else(|| err(flag, format!("{value:?} resolves to no address")))
}

impl ManagerArgs {
    /// Checks every flag; `hostname` is the default identity in the Lease.
    pub fn resolve(&self, hostname: &str) -> Result<Settings, OptionsError> {
        if self.prometheus_address.trim().is_empty() {
            return Err(err(
                "prometheus-address",
                "required: craned reads usage history from Prometheus",
            ));
        }
        ferrocrane_core::prometheus::parse_base_url(&self.prometheus_address)
            .map_err(|e| err("prometheus-address", e.to_string()))?;
        let mut prometheus = PrometheusConfig::new(self.prometheus_address.trim());
        prometheus.timeout = parse_duration("prometheus-timeout", &self.prometheus_timeout)?;
        if self.prometheus_query_concurrency == 0 {
            return Err(err("prometheus-query-concurrency", "must be at least 1"));
        }
        prometheus.max_in_flight = self.prometheus_query_concurrency;
        if self.prometheus_maxpoints == 0 {
            return Err(err("prometheus-maxpoints", "must be at least 1"));
        }
        prometheus.max_points_per_query = self.prometheus_maxpoints;
        prometheus.max_response_bytes =
            ferrocrane_core::prometheus::parse_response_limit(&self.prometheus_max_response_size)
                .map_err(|e| err("prometheus-max-response-size", e))?;
        self.prometheus_layer
            .apply(&mut prometheus)
            .map_err(|e| err("prometheus-header", e))?;
        prometheus.insecure_skip_verify = self.prometheus_insecure_skip_verify;
        prometheus.ca_file = self.prometheus_ca_file.clone();
        let basic = !self.prometheus_auth_username.is_empty();
        if !self.prometheus_auth_password.is_empty() && !basic {
            return Err(err(
                "prometheus-auth-password",
                "needs --prometheus-auth-username",
            ));
        }
        if !self.prometheus_auth_bearertoken.is_empty()
            && self.prometheus_bearer_token_file.is_some()
        {
            return Err(err(
                "prometheus-auth-bearertoken",
                "give either it or --prometheus-bearer-token-file, not both",
            ));
        }
        let bearer = !self.prometheus_auth_bearertoken.is_empty()
            || self.prometheus_bearer_token_file.is_some();
        if basic && bearer {
            return Err(err(
                "prometheus-auth-username",
                "basic auth and a bearer token are mutually exclusive",
            ));
        }
        if basic {
            prometheus.basic_auth = Some(BasicAuth {
                username: self.prometheus_auth_username.clone(),
                password: self.prometheus_auth_password.clone(),
            });
        }
        prometheus.bearer_token_file = self.prometheus_bearer_token_file.clone();
        if !self.prometheus_auth_bearertoken.is_empty() {
            // core's client reads tokens from files (they rotate); a literal token is sent as
            // a header instead.
            prometheus.headers.push((
                "Authorization".into(),
                format!("Bearer {}", self.prometheus_auth_bearertoken),
            ));
        }

        let leader_election = if self.leader_elect {
            let l = LeaseSettings {
                duration: parse_duration("lease-duration", &self.lease_duration)?,
                renew_deadline: parse_duration("lease-renew-period", &self.lease_renew_period)?,
                retry_period: parse_duration("lease-retry-period", &self.lease_retry_period)?,
            };
            if l.renew_deadline >= l.duration {
                return Err(err(
                    "lease-renew-period",
                    "must be shorter than --lease-duration",
                ));
            }
            if l.retry_period >= l.renew_deadline {
                return Err(err(
                    "lease-retry-period",
                    "must be shorter than --lease-renew-period",
                ));
            }
            Some(l)
        } else {
            None
        };
        if self.pod_namespace.trim().is_empty() {
            return Err(err("pod-namespace", "must not be empty"));
        }
        if self.time_series_prediction_max_concurrent_reconciles == 0 {
            return Err(err(
                "time-series-prediction-max-concurrent-reconciles",
                "must be at least 1",
            ));
        }
        let prediction = PredictionSettings {
            update_period: parse_duration(
                "prediction-update-frequency-duration",
                &self.prediction_update_frequency,
            )?,
            model_refresh: parse_duration("model-update-interval", &self.model_update_interval)?,
            concurrency: self.time_series_prediction_max_concurrent_reconciles,
        };
        let mut kube = self.kube.clone();
        if let Some(q) = self.api_qps {
            kube.qps = q;
        }
        if let Some(b) = self.api_burst {
            kube.burst = b;
        }
        Ok(Settings {
            prometheus,
            query_concurrency: self.prometheus_query_concurrency,
            history_read: match self.prometheus_remote_read.as_str() {
                "off" => crate::datasource::HistoryRead::QueryRange,
                "samples" => crate::datasource::HistoryRead::RemoteRead(ReadFormat::Samples),
                _ => crate::datasource::HistoryRead::RemoteRead(ReadFormat::Chunks),
            },
            configuration_file: self.recommendation_configuration_file.clone(),
            leader_election,
            metrics_addr: parse_bind_address("metrics-bind-address", &self.metrics_bind_address)?,
            health_addr: parse_bind_address(
                "health-probe-bind-address",
                &self.health_probe_bind_address,
            )?,
            oom_record_max_number: self.oom_record_max_number,
            auto_adoption: self.auto_adoption,
            skip_unchanged_writes: self.skip_unchanged_writes,
            prediction,
            namespace: self.pod_namespace.trim().to_string(),
            identity: self
                .pod_name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| hostname.to_string()),
            kube,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        m: ManagerArgs,
    }

    fn parse(args: &[&str]) -> ManagerArgs {
        T::try_parse_from(std::iter::once("craned").chain(args.iter().copied()))
            .unwrap()
            .m
    }

    #[test]
    fn defaults_are_cranes() {
        let a = parse(&["--prometheus-address=http://p:9090"]);
        assert!(a.leader_elect);
        assert_eq!(a.metrics_bind_address, ":8080");
        assert_eq!(a.health_probe_bind_address, ":8081");
        assert_eq!(a.oom_record_max_number, 10000);
        assert_eq!(a.prometheus_query_concurrency, 10);
        assert_eq!(a.prometheus_maxpoints, 11000);
        let s = a.resolve("host-a").unwrap();
        assert_eq!(s.prometheus.timeout, Duration::from_secs(180));
        assert_eq!(s.prometheus.max_response_bytes, Some(512 << 20));
        assert_eq!(
            s.leader_election,
            Some(LeaseSettings {
                duration: Duration::from_secs(15),
                renew_deadline: Duration::from_secs(10),
                retry_period: Duration::from_secs(2),
            })
        );
        assert_eq!(s.metrics_addr, Some("0.0.0.0:8080".parse().unwrap()));
        assert_eq!(s.identity, "host-a");
        assert!(!s.auto_adoption);
        assert!(s.skip_unchanged_writes);
        assert_eq!(
            s.configuration_file,
            PathBuf::from(DEFAULT_CONFIGURATION_FILE)
        );
    }

    /// What charts/ferrocrane/templates/craned/deployment.yaml passes.
    #[test]
    fn chart_arguments_are_accepted() {
        let a = parse(&[
            "--prometheus-address=http://prometheus-operated.monitoring.svc:9090",
            "--recommendation-configuration-file=/etc/craned/config.yaml",
            "--leader-elect=true",
            "--metrics-bind-address=:8080",
            "--health-probe-bind-address=:8081",
            "--oom-record-max-number=10000",
        ]);
        assert!(a.resolve("h").is_ok());
        let a = parse(&["--prometheus-address=http://p", "--leader-elect=false"]);
        assert!(a.resolve("h").unwrap().leader_election.is_none());
        let a = parse(&["--prometheus-address=http://p", "--auto-adoption"]);
        assert!(a.auto_adoption);
        let a = parse(&[
            "--prometheus-address=http://p",
            "--skip-unchanged-writes=false",
        ]);
        assert!(!a.resolve("h").unwrap().skip_unchanged_writes);
    }

    #[test]
    fn query_layer_flags_reach_the_client() {
        let s = parse(&[
            "--prometheus-address=http://p",
            "--prometheus-header=X-Scope-OrgID=team-a",
            "--prometheus-max-get-length=2048",
            "--prometheus-partial-response=unset",
        ])
        .resolve("h")
        .unwrap();
        assert_eq!(
            s.prometheus.headers,
            vec![("X-Scope-OrgID".to_owned(), "team-a".to_owned())]
        );
        assert_eq!(s.prometheus.max_get_url_len, 2048);
        assert_eq!(
            s.prometheus.partial_response,
            ferrocrane_core::prometheus::PartialResponse::Unset
        );
        let e = parse(&["--prometheus-address=http://p", "--prometheus-header==x"])
            .resolve("h")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--prometheus-header:"), "{e}");
    }

    #[test]
    fn bad_values_name_the_flag() {
        let e = parse(&[]).resolve("h").unwrap_err().to_string();
        assert!(e.starts_with("--prometheus-address:"), "{e}");
        let e = parse(&["--prometheus-address=http://p", "--prometheus-timeout=soon"])
            .resolve("h")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--prometheus-timeout:"), "{e}");
        let e = parse(&[
            "--prometheus-address=http://p",
            "--prometheus-max-response-size=-5",
        ])
        .resolve("h")
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--prometheus-max-response-size:"), "{e}");
        let e = parse(&["--prometheus-address=http://p", "--lease-renew-period=20s"])
            .resolve("h")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--lease-renew-period:"), "{e}");
        let e = parse(&[
            "--prometheus-address=http://p",
            "--metrics-bind-address=nope",
        ])
        .resolve("h")
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--metrics-bind-address:"), "{e}");
        let e = parse(&[
            "--prometheus-address=http://p",
            "--prometheus-auth-username=u",
            "--prometheus-auth-bearertoken=t",
        ])
        .resolve("h")
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--prometheus-auth-username:"), "{e}");
        assert!(
            T::try_parse_from(["craned", "--prometheus-maxpoints=many"]).is_err(),
            "clap names the flag itself"
        );
    }

    #[test]
    fn bind_addresses() {
        assert_eq!(parse_bind_address("x", "0").unwrap(), None);
        assert_eq!(
            parse_bind_address("x", "127.0.0.1:9").unwrap(),
            Some("127.0.0.1:9".parse().unwrap())
        );
    }
}
