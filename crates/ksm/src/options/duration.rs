//! The server timeout flags and keys: Go durations, through core's one parser.

use std::time::Duration;

use ferrocrane_core::duration::{GoDuration, ParseDurationError};

/// A server timeout: a Go duration (`300ms`, `1.5h`, `1h2m3s`, `0`). A negative one, which Go's
/// HTTP server treats as "no timeout", becomes `Duration::ZERO`. The messages are ksm's own
/// (`invalid duration "5": missing unit`), which its flag and config errors have always used.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let d = GoDuration::parse(s).map_err(|e| {
        let why = match e {
            ParseDurationError::MissingUnit { .. } => "missing unit".to_owned(),
            ParseDurationError::UnknownUnit { unit, .. } => format!("unknown unit {unit:?}"),
            ParseDurationError::OutOfRange { .. } => "out of range".to_owned(),
            ParseDurationError::Syntax { .. } => "expected e.g. 30s, 1m30s, 500ms".to_owned(),
        };
        format!("invalid duration {s:?}: {why}")
    })?;
    Ok(d.to_std().unwrap_or(Duration::ZERO))
}
