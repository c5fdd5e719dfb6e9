//! Go duration text (`1h30m`, `500ms`): `time.ParseDuration` and `Duration.String()`, written once.
//!
//! Flags and config values of the Go originals (`--resync-period=5m`, `server_read_timeout`,
//! `@every 1h30m`, Crane's `history-length: 168h`) are Go durations, and metrics.k8s.io writes
//! its `window` with `Duration.String()`. Parsing happens here and nowhere else; what a value
//! may be (positive, at least a second, ...) is the caller's rule.

mod format;
mod parse;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use parse::ParseDurationError;

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// A signed number of nanoseconds, the value of Go's `time.Duration` (about ±292 years).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(i64);

/// A negative duration where only a non-negative one makes sense (`std::time::Duration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("negative duration {0}")]
pub struct NegativeDurationError(pub GoDuration);

impl GoDuration {
    pub const ZERO: GoDuration = GoDuration(0);
    pub const MAX: GoDuration = GoDuration(i64::MAX);
    pub const MIN: GoDuration = GoDuration(i64::MIN);

    pub const fn from_nanos(nanos: i64) -> Self {
        GoDuration(nanos)
    }

    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Go's `time.ParseDuration`: `300ms`, `-1.5h`, `2h45m`, `0`.
    pub fn parse(text: &str) -> Result<Self, ParseDurationError> {
        parse::parse(text).map(GoDuration)
    }

    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// Whole seconds, truncated toward zero like Go's `d / time.Second`.
    pub const fn whole_seconds(self) -> i64 {
        self.0 / NANOS_PER_SECOND
    }

    /// The same length as a `std::time::Duration`; a negative one has none.
    pub fn to_std(self) -> Result<Duration, NegativeDurationError> {
        u64::try_from(self.0)
            .map(Duration::from_nanos)
            .map_err(|_| NegativeDurationError(self))
    }

    /// `d`, or the longest Go duration when `d` is longer than Go can hold.
    pub fn from_std_saturating(d: Duration) -> Self {
        GoDuration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl TryFrom<GoDuration> for Duration {
    type Error = NegativeDurationError;

    fn try_from(d: GoDuration) -> Result<Duration, NegativeDurationError> {
        d.to_std()
    }
}

impl FromStr for GoDuration {
    type Err = ParseDurationError;

    fn from_str(text: &str) -> Result<Self, ParseDurationError> {
        GoDuration::parse(text)
    }
}

/// Go's `Duration.String()`: `1h2m3.5s`, `1.5ms`, `-7ns`, `0s`.
impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format::write_go(f, self.0)
    }
}
