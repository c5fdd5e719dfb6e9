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

/// apimachinery's canonical string of `NewMilliQuantity(millis, DecimalSI)`: `345m`, `2`, `1500m`.
pub fn format_millicores(millis: i64) -> String {
    if millis == 0 {
        return "0".into();
    }
    let mut v = millis;
    let mut exp = -3;
    while v % 1000 == 0 && exp < 18 {
        v /= 1000;
        exp += 3;
    }
    let suffix = match exp {
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        _ => "E",
    };
    format!("{v}{suffix}")
}

/// apimachinery's canonical string of `NewQuantity(bytes, BinarySI)`: the largest power-of-1024
/// suffix that keeps an integer (`117760Ki`, `1Gi`), a plain number otherwise or below 1024.
pub fn format_bytes(bytes: i64) -> String {
    if bytes.unsigned_abs() < 1024 {
        return bytes.to_string();
    }
    let mut v = bytes;
    let mut i = 0;
    while v % 1024 == 0 && i < 6 {
        v /= 1024;
        i += 1;
    }
    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][i];
    format!("{v}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_print_like_apimachinery() {
        assert_eq!(format_millicores(0), "0");
        assert_eq!(format_millicores(345), "345m");
        assert_eq!(format_millicores(2000), "2");
        assert_eq!(format_millicores(1500), "1500m");
        assert_eq!(format_millicores(2_000_000), "2k");
        assert_eq!(format_bytes(0), "0");
        assert_eq!(format_bytes(1000), "1000");
        assert_eq!(format_bytes(120_586_240), "115Mi");
        assert_eq!(format_bytes(120_586_240 + 1024), "117761Ki");
        assert_eq!(format_bytes(1 << 30), "1Gi");
        assert_eq!(format_bytes(536_870_912), "512Mi");
        assert_eq!(format_bytes(1_288_490_189), "1288490189");
    }
}
