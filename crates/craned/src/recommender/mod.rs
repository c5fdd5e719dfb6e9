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

/// YAML with keys in the order given (callers build `serde_json` maps, which sort keys as
/// `sigs.k8s.io/yaml` does).
pub(crate) fn to_yaml(value: &serde_json::Value) -> String {
    // A serde_json::Value always serializes.
    serde_saphyr::to_string(value).unwrap_or_default()
}
