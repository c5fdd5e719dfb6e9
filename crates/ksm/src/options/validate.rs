//! The checks on the merged flags and file, and the [`Options`] they produce.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ferrocrane_core::process::LogArgs;

use super::merge::Raw;
use super::settings::{CustomResourceConfig, Options, OptionsError, ShardingMode, invalid};
use crate::field_selector::{
    merge_field_selectors, namespace_denylist_field_selector, node_field_selector,
};
use crate::filters::{FamilyFilter, FilterError, KeyAllowlists};
use crate::registry::{ALL_RESOURCES, DEFAULT_RESOURCES};
use crate::sharding::Sharding;

impl Raw {
    pub(super) fn validate(
        self,
        log: LogArgs,
        config_file: Option<PathBuf>,
    ) -> Result<Options, OptionsError> {
        let origin = &self.origin;
        let relabel = |e: FilterError| -> OptionsError {
            match e {
                FilterError::InvalidRegex {
                    flag,
                    pattern,
                    reason,
                } => {
                    let flag = match flag.as_str() {
                        "--metric-allowlist" => origin.of("--metric-allowlist", "metric_allowlist"),
                        "--metric-denylist" => origin.of("--metric-denylist", "metric_denylist"),
                        _ => origin.of("--metric-opt-in-list", "metric_opt_in_list"),
                    };
                    FilterError::InvalidRegex {
                        flag,
                        pattern,
                        reason,
                    }
                    .into()
                }
                other => other.into(),
            }
        };

        // Resources.
        let resources: Vec<String> = if self.crs_only {
            Vec::new()
        } else if self.resources.is_empty() {
            DEFAULT_RESOURCES.iter().map(|s| s.to_string()).collect()
        } else {
            if let Some(bad) = self
                .resources
                .iter()
                .find(|r| !ALL_RESOURCES.contains(&r.as_str()))
            {
                return Err(invalid(
                    origin.of("--resources", "resources"),
                    self.resources.join(","),
                    format!(
                        "resource {bad} does not exist. Available resources: {}",
                        ALL_RESOURCES.join(",")
                    ),
                ));
            }
            self.resources.clone()
        };

        // Node-scoped pods only.
        if !self.node.is_empty() || self.track_unscheduled_pods {
            let (setting, value) = if self.track_unscheduled_pods {
                (
                    origin.of("--track-unscheduled-pods", "track_unscheduled_pods"),
                    "true".to_owned(),
                )
            } else {
                (origin.of("--node", "node"), self.node.clone())
            };
            if let Some(bad) = resources.iter().find(|r| *r != "pods") {
                return Err(invalid(
                    setting,
                    value,
                    format!(
                        "resource {bad} can't be sharded by field selector spec.nodeName; \
                         set --resources=pods"
                    ),
                ));
            }
        }

        // Sharding.
        if self.total_shards < 1 {
            return Err(invalid(
                origin.of("--total-shards", "total_shards"),
                self.total_shards,
                "must be at least 1",
            ));
        }
        if self.shard < 0 || self.shard >= self.total_shards {
            return Err(invalid(
                origin.of("--shard", "shard"),
                self.shard,
                format!(
                    "must be at least 0 and less than {}={}",
                    origin.of("--total-shards", "total_shards"),
                    self.total_shards
                ),
            ));
        }
        let sharding = match (self.pod.is_empty(), self.pod_namespace.is_empty()) {
            (true, true) => ShardingMode::Static(Sharding {
                shard: self.shard,
                total: self.total_shards,
            }),
            (false, false) if self.server_side_sharding => {
                return Err(invalid(
                    origin.of("--server-side-sharding", "server_side_sharding"),
                    true,
                    "is not supported with auto-sharding (--pod) yet: a replica change would \
                     have to restart every watch with a new range; use --shard and --total-shards",
                ));
            }
            (false, false) => ShardingMode::Auto {
                pod: self.pod.clone(),
                namespace: self.pod_namespace.clone(),
            },
            (false, true) => {
                return Err(invalid(
                    origin.of("--pod", "pod"),
                    &self.pod,
                    "auto-sharding needs --pod-namespace as well",
                ));
            }
            (true, false) => {
                return Err(invalid(
                    origin.of("--pod-namespace", "namespace"),
                    &self.pod_namespace,
                    "auto-sharding needs --pod as well",
                ));
            }
        };

        if self.object_limit < 0 {
            return Err(invalid(
                origin.of("--object-limit", "object_limit"),
                self.object_limit,
                "must be 0 (no limit) or more",
            ));
        }

        // Filters.
        let family_filter = FamilyFilter::new(
            &self.metric_allowlist,
            &self.metric_denylist,
            &self.metric_opt_in_list,
        )
        .map_err(relabel)?;
        let labels_allowlist = KeyAllowlists::resolve(
            &origin.of("--metric-labels-allowlist", "labels_allow_list"),
            &self.labels_allowlist,
            &resources,
            &ALL_RESOURCES,
        )?;
        let annotations_allowlist = KeyAllowlists::resolve(
            &origin.of("--metric-annotations-allowlist", "annotations_allow_list"),
            &self.annotations_allowlist,
            &resources,
            &ALL_RESOURCES,
        )?;

        // Namespaces: an empty entry means all (upstream's NamespaceAll).
        let namespaces = if self.namespaces.iter().any(String::is_empty) {
            Vec::new()
        } else {
            dedup_keep_order(self.namespaces)
        };
        let namespaces_denylist = dedup_keep_order(self.namespaces_denylist);
        let node_selector = if self.track_unscheduled_pods {
            "spec.nodeName=".to_owned()
        } else {
            node_field_selector(&self.node)
        };
        let field_selector = merge_field_selectors(&[
            &namespace_denylist_field_selector(&namespaces_denylist),
            &node_selector,
        ]);

        let custom_resource_config = if !self.crs_inline.is_empty() {
            CustomResourceConfig::Inline(self.crs_inline)
        } else if let Some(path) = self.crs_file {
            CustomResourceConfig::File {
                path,
                continue_if_missing: self.crs_continue,
            }
        } else {
            CustomResourceConfig::None
        };

        Ok(Options {
            resources,
            custom_resource_state_only: self.crs_only,
            namespaces,
            namespaces_denylist,
            node: Some(self.node).filter(|n| !n.is_empty()),
            track_unscheduled_pods: self.track_unscheduled_pods,
            field_selector,
            family_filter,
            labels_allowlist,
            annotations_allowlist,
            sharding,
            server_side_sharding: self.server_side_sharding,
            custom_resource_config,
            host: self.host,
            port: self.port,
            telemetry_host: self.telemetry_host,
            telemetry_port: self.telemetry_port,
            tls_config: self.tls_config,
            enable_gzip_encoding: self.enable_gzip_encoding,
            use_apiserver_cache: self.use_apiserver_cache,
            object_limit: u64::try_from(self.object_limit).ok().filter(|&n| n > 0),
            kubeconfig: self.kubeconfig,
            apiserver: self.apiserver,
            config_file,
            continue_without_config: self.continue_without_config,
            auth_filter: self.auth_filter,
            timeouts: self.timeouts,
            log,
        })
    }
}

fn dedup_keep_order(v: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    v.into_iter().filter(|x| seen.insert(x.clone())).collect()
}
