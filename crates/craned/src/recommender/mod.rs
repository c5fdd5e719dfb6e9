//! Recommenders: pure functions from a target's facts and usage history to a recommendation.
//!
//! Each module reproduces one of Crane's recommenders (`pkg/recommendation/recommender/*`): its
//! config keys and defaults ([`config::Config`]), its filter (`Err(NotApplicable)` where Crane's
//! Filter or Recommend returns an error meaning "no recommendation for this target"), and the
//! numbers it proposes. [`Proposal`] is what goes into `Recommendation.status`.

pub mod config;
pub mod hpa;
pub mod idlenode;
pub mod replicas;
pub mod resource;
pub mod service;
pub mod volume;

pub use config::{Config, ConfigValueError, RecommendationConfiguration};

/// Why no recommendation was made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecommendError {
    /// The target does not qualify (not idle, replicas below the minimum, fluctuation too
    /// low ...): not a failure, the Recommendation says why.
    #[error("{0}")]
    NotApplicable(String),
    /// Not enough history to decide.
    #[error("insufficient data: {0}")]
    InsufficientData(String),
    #[error(transparent)]
    Config(#[from] ConfigValueError),
}

/// The `status` fields a recommender fills (Crane's `RecommendationContent`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposal {
    /// YAML of Crane's `ProposedRecommendation` (empty for IdleNode/Service/Volume).
    pub recommended_value: String,
    /// JSON merge patch that adopts the recommendation.
    pub recommended_info: String,
    /// The same patch with the target's current values.
    pub current_info: String,
    /// Patch, None, Create or Delete.
    pub action: &'static str,
    pub description: String,
}

/// One idleness check: what it measures, its threshold (0 turns it off), the percentile taken
/// of its samples, and the samples.
pub(crate) type IdleCheck<'a> = (&'a str, f64, f64, &'a [crate::prediction::Sample]);

/// The first enabled check whose percentile is above its threshold, as (what, threshold,
/// percentile, value); `None` when every enabled check is at or below. A check with no
/// samples is insufficient data (Crane's IdleNode and Service recommenders share this rule).
pub(crate) fn first_busy<'a>(
    checks: impl IntoIterator<Item = IdleCheck<'a>>,
) -> Result<Option<(&'a str, f64, f64, f64)>, RecommendError> {
    let mut scratch = Vec::new();
    for (what, threshold, pct, series) in checks {
        if threshold == 0.0 {
            continue;
        }
        scratch.clear();
        scratch.extend(series.iter().map(|s| s.value));
        let v = crate::prediction::stats::percentile(&mut scratch, pct)
            .ok_or_else(|| RecommendError::InsufficientData(format!("no {what} samples")))?;
        if v > threshold {
            return Ok(Some((what, threshold, pct, v)));
        }
    }
    Ok(None)
}

/// YAML with keys in the order given (callers build `serde_json` maps, which sort keys as
/// `sigs.k8s.io/yaml` does).
pub(crate) fn to_yaml(value: &serde_json::Value) -> String {
    // A serde_json::Value always serializes.
    serde_saphyr::to_string(value).unwrap_or_default()
}
