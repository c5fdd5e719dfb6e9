//! The `--config` file: upstream `Options`' YAML keys, parsed strictly.

use std::fmt;

use ferrocrane_core::config::{ConfigError, Validate, ValidationError, parse_yaml_str};
use serde::Deserialize;

use super::duration::parse_go_duration;
use super::syntax::check_wildcards;
use crate::filters::LabelsAllowList;

/// A set in the config file: upstream's mapping of names to `{}` (`pods: {}`), or a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameSet(pub Vec<String>);

impl<'de> Deserialize<'de> for NameSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Empty {}
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NameSet;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of names to {} (name: {}) or a list of names")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<NameSet, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    m.next_value::<Option<Empty>>()?;
                    out.push(k);
                }
                Ok(NameSet(out))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<NameSet, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = s.next_element::<String>()? {
                    out.push(k);
                }
                Ok(NameSet(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The `--config` file: upstream `Options`' YAML keys, all optional. Only keys present
/// override flags.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub annotations_allow_list: Option<LabelsAllowList>,
    pub labels_allow_list: Option<LabelsAllowList>,
    pub metric_allowlist: Option<NameSet>,
    pub metric_denylist: Option<NameSet>,
    pub metric_opt_in_list: Option<NameSet>,
    pub resources: Option<NameSet>,
    pub apiserver: Option<String>,
    /// `--custom-resource-state-config` (inline YAML).
    pub custom_resource_config: Option<String>,
    pub custom_resource_state_config_file: Option<String>,
    /// Deprecated alias of `custom_resource_state_config_file`, used only when neither the
    /// canonical key nor the flag sets the file.
    pub custom_resource_config_file: Option<String>,
    pub continue_without_custom_resource_state_config_file: Option<bool>,
    pub host: Option<String>,
    pub kubeconfig: Option<String>,
    /// `--pod-namespace`.
    pub namespace: Option<String>,
    pub node: Option<String>,
    pub pod: Option<String>,
    pub tls_config: Option<String>,
    pub telemetry_host: Option<String>,
    /// Upstream's untagged `Config` field; accepted and ignored (the file cannot move itself).
    pub config: Option<String>,
    pub continue_without_config: Option<bool>,
    pub namespaces: Option<Vec<String>>,
    pub namespaces_denylist: Option<Vec<String>>,
    /// Ignored (Go runtime setting).
    #[serde(rename = "auto-gomemlimit-ratio")]
    pub auto_gomemlimit_ratio: Option<f64>,
    pub port: Option<u16>,
    pub telemetry_port: Option<u16>,
    pub total_shards: Option<i32>,
    pub server_read_timeout: Option<String>,
    pub server_write_timeout: Option<String>,
    pub server_idle_timeout: Option<String>,
    pub server_read_header_timeout: Option<String>,
    pub shard: Option<i32>,
    /// Ignored (Go runtime setting).
    #[serde(rename = "auto-gomemlimit")]
    pub auto_gomemlimit: Option<bool>,
    /// `--custom-resource-state-only`.
    pub custom_resources_only: Option<bool>,
    pub enable_gzip_encoding: Option<bool>,
    /// Upstream's `Help` field; accepted and ignored.
    pub help: Option<bool>,
    pub track_unscheduled_pods: Option<bool>,
    /// `--server-side-sharding`.
    pub server_side_sharding: Option<bool>,
    /// `--use-apiserver-cache`.
    pub use_api_server_cache: Option<bool>,
    pub object_limit: Option<i64>,
    pub auth_filter: Option<bool>,
}

impl ConfigFile {
    /// Strictly parses a config file's text; `name` appears in errors.
    pub fn parse(name: &str, text: &str) -> Result<Self, ConfigError> {
        parse_yaml_str(name, text)
    }
}

impl Validate for ConfigFile {
    /// The checks that need no flags: durations parse, allowlist wildcards.
    fn validate(&self) -> Result<(), ValidationError> {
        for (key, v) in [
            ("server_read_timeout", &self.server_read_timeout),
            ("server_write_timeout", &self.server_write_timeout),
            ("server_idle_timeout", &self.server_idle_timeout),
            (
                "server_read_header_timeout",
                &self.server_read_header_timeout,
            ),
        ] {
            if let Some(v) = v {
                parse_go_duration(v).map_err(|m| ValidationError::new(key, m))?;
            }
        }
        for (key, v) in [
            ("labels_allow_list", &self.labels_allow_list),
            ("annotations_allow_list", &self.annotations_allow_list),
        ] {
            if let Some(list) = v {
                for (resource, keys) in list {
                    check_wildcards(keys)
                        .map_err(|m| ValidationError::new(format!("{key}.{resource}"), m))?;
                }
            }
        }
        Ok(())
    }
}
