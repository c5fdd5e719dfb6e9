//! Crane's `RecommendationConfiguration` file and per-recommender config maps.
//!
//! The file (`--recommendation-configuration-file`) lists the recommenders, the kinds each
//! accepts, and a `config` map of string values; a rule's `recommenders[].config` overrides it
//! key by key (Crane's `MergeRecommenderConfigFromRule`). Values are parsed when a recommender is
//! built, and a bad one names its key.

use std::collections::BTreeMap;

use ferrocrane_core::config::{ConfigError, Validate, ValidationError, parse_and_validate_str};
use ferrocrane_core::duration::GoDuration;
use serde::{Deserialize, Serialize};

use crate::crd::{RecommendationRuleSpec, ResourceSelector, recommenders};

/// The file, as Crane's `apis.RecommenderConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecommendationConfiguration {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub recommenders: Vec<RecommenderConfig>,
    #[serde(default)]
    pub recommender_plugins: Vec<RecommenderPlugin>,
}

/// One recommender's entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecommenderConfig {
    pub name: String,
    /// Which kinds this recommender runs on (Crane's `acceptedResources`).
    #[serde(default, rename = "acceptedResources")]
    pub accepted_resources: Vec<ResourceSelector>,
    #[serde(default)]
    pub config: BTreeMap<String, String>,
}

/// Accepted for compatibility with Crane's files; craned runs no plugins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecommenderPlugin {
    pub name: String,
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub server_config: ServerConfig,
    #[serde(default)]
    pub config: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(default)]
    pub url_prefix: String,
}

impl Validate for RecommendationConfiguration {
    fn validate(&self) -> Result<(), ValidationError> {
        if !self.kind.is_empty() && self.kind != "RecommendationConfiguration" {
            return Err(ValidationError::new(
                "kind",
                format!("must be RecommendationConfiguration, not {:?}", self.kind),
            ));
        }
        for (i, r) in self.recommenders.iter().enumerate() {
            let at = format!("recommenders[{i}]");
            if !recommenders::ALL.contains(&r.name.as_str()) {
                return Err(ValidationError::new(
                    "name",
                    format!(
                        "unknown recommender {:?} (known: {})",
                        r.name,
                        recommenders::ALL.join(", ")
                    ),
                )
                .at(&at));
            }
            if self.recommenders[..i].iter().any(|o| o.name == r.name) {
                return Err(
                    ValidationError::new("name", format!("{:?} listed twice", r.name)).at(&at),
                );
            }
            for (j, sel) in r.accepted_resources.iter().enumerate() {
                if sel.kind.is_empty() {
                    return Err(ValidationError::new("kind", "must not be empty")
                        .at(format!("{at}.acceptedResources[{j}]")));
                }
            }
            // Values are checked now, not at the first run, so a bad file is refused at load.
            let cfg = Config::new(r.config.clone());
            check_values(&r.name, &cfg).map_err(|e| {
                ValidationError::new(format!("config.{}", e.key), e.message).at(&at)
            })?;
        }
        Ok(())
    }
}

fn check_values(name: &str, cfg: &Config) -> Result<(), ConfigValueError> {
    use super::*;
    match name {
        recommenders::RESOURCE => resource::ResourceConfig::from_config(cfg).map(drop),
        recommenders::REPLICAS => replicas::ReplicasConfig::from_config(cfg).map(drop),
        recommenders::HPA => hpa::HpaConfig::from_config(cfg).map(drop),
        recommenders::IDLE_NODE => idlenode::IdleNodeConfig::from_config(cfg).map(drop),
        recommenders::SERVICE => service::ServiceConfig::from_config(cfg).map(drop),
        _ => Ok(()),
    }
}

impl RecommendationConfiguration {
    /// Parses the file strictly (unknown keys, duplicate keys and unknown recommenders are
    /// errors naming the field); `name` is what messages call the file.
    pub fn parse(name: &str, text: &str) -> Result<Self, ConfigError> {
        parse_and_validate_str(name, text)
    }

    pub fn recommender(&self, name: &str) -> Option<&RecommenderConfig> {
        self.recommenders.iter().find(|r| r.name == name)
    }

    /// The config a rule runs `name` with: the file's map, overridden key by key by every
    /// `recommenders[]` entry of the rule with that name. `None` when the file does not list
    /// the recommender (Crane skips it then).
    pub fn merged(&self, name: &str, rule: &RecommendationRuleSpec) -> Option<Config> {
        let base = self.recommender(name)?;
        let mut map = base.config.clone();
        for r in rule.recommenders.iter().filter(|r| r.name == name) {
            map.extend(r.config.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Some(Config::new(map))
    }
}

/// A bad value in a recommender's config map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config {key}: {message}")]
pub struct ConfigValueError {
    pub key: String,
    pub message: String,
}

impl ConfigValueError {
    pub fn new(key: &str, message: impl Into<String>) -> Self {
        ConfigValueError {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// A recommender's merged `config` map with Crane's typed getters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config(BTreeMap<String, String>);

impl Config {
    pub fn new(map: BTreeMap<String, String>) -> Self {
        Config(map)
    }

    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Config(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    pub fn map(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    pub fn get_str<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.0.get(key).map(String::as_str).unwrap_or(default)
    }

    fn parsed<T>(
        &self,
        key: &str,
        default: T,
        parse: impl FnOnce(&str) -> Option<T>,
        what: &str,
    ) -> Result<T, ConfigValueError> {
        match self.0.get(key) {
            None => Ok(default),
            Some(v) => parse(v.trim())
                .ok_or_else(|| ConfigValueError::new(key, format!("{v:?} is not {what}"))),
        }
    }

    /// A finite float (Go's `strconv.ParseFloat`, minus NaN and infinities).
    pub fn get_f64(&self, key: &str, default: f64) -> Result<f64, ConfigValueError> {
        self.parsed(
            key,
            default,
            |s| s.parse::<f64>().ok().filter(|f| f.is_finite()),
            "a number",
        )
    }

    pub fn get_i64(&self, key: &str, default: i64) -> Result<i64, ConfigValueError> {
        self.parsed(key, default, |s| s.parse().ok(), "an integer")
    }

    /// Go's `strconv.ParseBool`: 1 t T TRUE true True / 0 f F FALSE false False.
    pub fn get_bool(&self, key: &str, default: bool) -> Result<bool, ConfigValueError> {
        self.parsed(
            key,
            default,
            |s| match s {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
                "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
                _ => None,
            },
            "a boolean",
        )
    }

    /// A duration in seconds, as Crane's `utils.ParseDuration` reads it: `7d`, or a Go
    /// duration (`168h`, `1h30m`, `90s`).
    pub fn get_duration_secs(&self, key: &str, default: i64) -> Result<i64, ConfigValueError> {
        self.parsed(
            key,
            default,
            parse_duration_secs,
            "a duration such as 168h or 7d",
        )
    }
}

/// Crane's `utils.ParseDuration`: whole days (`7d`), or a Go duration (`168h`, `1h30m`).
pub fn parse_crane_duration(s: &str) -> Option<GoDuration> {
    const DAY_NANOS: i64 = 86_400 * 1_000_000_000;
    if let Some(Ok(days)) = s.strip_suffix('d').map(str::parse::<i64>) {
        return days.checked_mul(DAY_NANOS).map(GoDuration::from_nanos);
    }
    GoDuration::parse(s).ok()
}

/// [`parse_crane_duration`] in whole seconds (sub-second parts are dropped).
pub fn parse_duration_secs(s: &str) -> Option<i64> {
    parse_crane_duration(s).map(GoDuration::whole_seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::RecommenderRef;

    #[test]
    fn durations_like_crane() {
        assert_eq!(parse_duration_secs("168h"), Some(7 * 86_400));
        assert_eq!(parse_duration_secs("7d"), Some(7 * 86_400));
        assert_eq!(parse_duration_secs("1h30m"), Some(5_400));
        assert_eq!(parse_duration_secs("1.5h"), Some(5_400));
        assert_eq!(parse_duration_secs("1m"), Some(60));
        assert_eq!(parse_duration_secs("0"), Some(0));
        assert_eq!(parse_duration_secs("500ms"), Some(0));
        assert_eq!(parse_duration_secs(""), None);
        assert_eq!(parse_duration_secs("7"), None);
        assert_eq!(parse_duration_secs("7w"), None);
    }

    #[test]
    fn typed_getters_name_the_key() {
        let c = Config::from_pairs([("a", "0.5"), ("b", "yes"), ("c", "TRUE"), ("d", "x")]);
        assert_eq!(c.get_f64("a", 1.0), Ok(0.5));
        assert_eq!(c.get_f64("zz", 1.0), Ok(1.0));
        assert_eq!(c.get_bool("c", false), Ok(true));
        let e = c.get_bool("b", false).unwrap_err();
        assert_eq!(e.to_string(), "config b: \"yes\" is not a boolean");
        assert_eq!(c.get_i64("d", 0).unwrap_err().key, "d");
        assert!(c.get_f64("d", 0.0).is_err());
    }

    const FILE: &str = "apiVersion: analysis.crane.io/v1alpha1
kind: RecommendationConfiguration
recommenders:
  - name: Resource
    acceptedResources:
      - kind: Deployment
        apiVersion: apps/v1
    config:
      cpu-request-percentile: \"0.98\"
      mem-request-margin-fraction: \"0.2\"
  - name: Replicas
    acceptedResources:
      - kind: Deployment
        apiVersion: apps/v1
";

    #[test]
    fn rule_overrides_file_per_key() {
        let cfg = RecommendationConfiguration::parse("config.yaml", FILE).unwrap();
        let rule = RecommendationRuleSpec {
            recommenders: vec![RecommenderRef {
                name: "Resource".into(),
                config: [("cpu-request-percentile".to_string(), "0.95".to_string())].into(),
            }],
            ..Default::default()
        };
        let merged = cfg.merged("Resource", &rule).unwrap();
        assert_eq!(merged.get_str("cpu-request-percentile", ""), "0.95");
        assert_eq!(merged.get_str("mem-request-margin-fraction", ""), "0.2");
        assert_eq!(cfg.merged("Replicas", &rule).unwrap(), Config::default());
        assert!(cfg.merged("HPA", &rule).is_none());
    }

    #[test]
    fn strict_parse_names_file_and_field() {
        let e = RecommendationConfiguration::parse(
            "config.yaml",
            "recommenders:\n  - name: Resource\n    acceptedResource: []\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("config.yaml:"), "{e}");
        assert!(e.contains("acceptedResource"), "{e}");

        let e = RecommendationConfiguration::parse("config.yaml", "recommenders:\n  - name: Foo\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("recommenders[0].name"), "{e}");
        assert!(e.contains("unknown recommender \"Foo\""), "{e}");

        let e = RecommendationConfiguration::parse(
            "config.yaml",
            "recommenders:\n  - name: Resource\n    config:\n      oom-bump-ratio: lots\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("recommenders[0].config.oom-bump-ratio"), "{e}");
    }

    /// The default file shipped in config/ loads and lists every recommender.
    #[test]
    fn shipped_default_configuration_loads() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/craned/recommendation-configuration.yaml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let cfg = RecommendationConfiguration::parse(path, &text).unwrap();
        for name in recommenders::ALL {
            assert!(cfg.recommender(name).is_some(), "{name} missing");
        }
        // It spells out Crane's defaults; they parse into the same values as no config at all.
        let r = cfg
            .merged("Resource", &RecommendationRuleSpec::default())
            .unwrap();
        assert_eq!(
            crate::recommender::resource::ResourceConfig::from_config(&r).unwrap(),
            crate::recommender::resource::ResourceConfig::from_config(&Config::default()).unwrap()
        );
    }
}
