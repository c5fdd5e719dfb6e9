//! Tracing setup shared by the three binaries, so their logs look alike.

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use super::ProcessError;

/// Log output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log pipelines.
    Json,
}

/// Logging flags, meant to be `#[command(flatten)]`ed into each service's `Args`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct LogArgs {
    /// Log filter: a level (`info`) or a tracing directive list (`info,ferrocrane_core=debug`).
    /// RUST_LOG, when set, takes precedence.
    #[arg(long = "log-level", default_value = "info")]
    pub log_level: String,
    /// Log output format.
    #[arg(long = "log-format", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// klog's verbosity, which the Go originals take: accepted so their manifests start
    /// unchanged, and ignored (use --log-level).
    #[arg(long = "v", hide = true)]
    pub klog_v: Option<String>,
    /// klog's flag: accepted and ignored; logs always go to stderr.
    #[arg(long = "logtostderr", hide = true, num_args = 0..=1, default_missing_value = "true")]
    pub logtostderr: Option<String>,
}

impl Default for LogArgs {
    fn default() -> Self {
        Self {
            log_level: "info".into(),
            log_format: LogFormat::Text,
            klog_v: None,
            logtostderr: None,
        }
    }
}

impl LogArgs {
    /// Says, once logging is up, that klog's flags were given and are ignored.
    pub fn warn_ignored_klog_flags(&self) {
        if self.klog_v.is_some() || self.logtostderr.is_some() {
            tracing::warn!(
                "--v and --logtostderr are accepted for compatibility and ignored; use --log-level"
            );
        }
    }
}

/// Builds the filter: `RUST_LOG` if set and non-empty (operators reach for it first when
/// debugging), else `--log-level`.
pub fn log_filter(args: &LogArgs) -> Result<EnvFilter, ProcessError> {
    match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => EnvFilter::try_new(&v)
            .map_err(|e| ProcessError::LogFilter(format!("RUST_LOG={v}: {e}"))),
        _ => EnvFilter::try_new(&args.log_level)
            .map_err(|e| ProcessError::LogFilter(format!("--log-level={}: {e}", args.log_level))),
    }
}

/// Installs the global subscriber. Returns `Ok(false)` when one was already installed (a
/// second call, or a test harness that set its own), which is not an error: logging works.
pub fn init_tracing(args: &LogArgs) -> Result<bool, ProcessError> {
    let filter = log_filter(args)?;
    let result = match args.log_format {
        LogFormat::Text => tracing_subscriber::registry()
            .with(filter)
            .with(fmt::layer().with_writer(std::io::stderr))
            .try_init(),
        LogFormat::Json => tracing_subscriber::registry()
            .with(filter)
            .with(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    Ok(result.is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        log: LogArgs,
    }

    #[test]
    fn flags_parse() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.log, LogArgs::default());
        let cli =
            Cli::try_parse_from(["x", "--log-level", "debug", "--log-format", "json"]).unwrap();
        assert_eq!(cli.log.log_level, "debug");
        assert_eq!(cli.log.log_format, LogFormat::Json);
        assert!(Cli::try_parse_from(["x", "--log-format", "xml"]).is_err());
        let klog = Cli::try_parse_from(["x", "--v=2", "--logtostderr"]).unwrap();
        assert_eq!(
            (klog.log.klog_v.as_deref(), klog.log.logtostderr.as_deref()),
            (Some("2"), Some("true"))
        );
    }

    #[test]
    fn init_twice_does_not_panic() {
        let args = LogArgs::default();
        let first = init_tracing(&args);
        let second = init_tracing(&LogArgs {
            log_format: LogFormat::Json,
            ..args
        });
        assert!(first.is_ok());
        assert_eq!(second.ok(), Some(false));
    }

    #[test]
    fn bad_level_is_reported() {
        // Only meaningful when RUST_LOG is unset in the test environment.
        if std::env::var_os("RUST_LOG").is_none() {
            let err = log_filter(&LogArgs {
                log_level: "info,[[[".into(),
                ..Default::default()
            })
            .unwrap_err();
            assert!(err.to_string().contains("--log-level"), "{err}");
        }
    }
}
