//! The flags as values ([`Raw`]), and the `--config` file laid over them key by key.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use super::Args;
use super::duration::parse_go_duration;
use super::file::{ConfigFile, NameSet};
use super::non_empty_path;
use super::settings::{OptionsError, ServerTimeouts, invalid};
use super::syntax::{check_wildcards, parse_labels_allowlist, split_list, split_set};
use crate::filters::LabelsAllowList;

/// A setting's name in errors: the flag, or the file and key when the file set it.
#[derive(Debug, Clone)]
pub(super) struct Origin {
    pub(super) file: Option<String>,
    pub(super) overridden: BTreeSet<&'static str>,
}

impl Origin {
    pub(super) fn of(&self, flag: &'static str, key: &'static str) -> String {
        match &self.file {
            Some(file) if self.overridden.contains(flag) => format!("{file}: {key}"),
            _ => flag.to_owned(),
        }
    }
}

/// Flags parsed into values, before the file and validation.
#[derive(Debug, Clone)]
pub(super) struct Raw {
    pub(super) resources: Vec<String>,
    pub(super) namespaces: Vec<String>,
    pub(super) namespaces_denylist: Vec<String>,
    pub(super) metric_allowlist: Vec<String>,
    pub(super) metric_denylist: Vec<String>,
    pub(super) metric_opt_in_list: Vec<String>,
    pub(super) labels_allowlist: LabelsAllowList,
    pub(super) annotations_allowlist: LabelsAllowList,
    pub(super) shard: i32,
    pub(super) total_shards: i32,
    pub(super) pod: String,
    pub(super) pod_namespace: String,
    pub(super) node: String,
    pub(super) track_unscheduled_pods: bool,
    pub(super) server_side_sharding: bool,
    pub(super) crs_inline: String,
    pub(super) crs_file: Option<PathBuf>,
    pub(super) crs_only: bool,
    pub(super) crs_continue: bool,
    pub(super) continue_without_config: bool,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) telemetry_host: String,
    pub(super) telemetry_port: u16,
    pub(super) tls_config: Option<PathBuf>,
    pub(super) enable_gzip_encoding: bool,
    pub(super) use_apiserver_cache: bool,
    pub(super) object_limit: i64,
    pub(super) kubeconfig: Option<PathBuf>,
    pub(super) apiserver: Option<String>,
    pub(super) auth_filter: bool,
    pub(super) timeouts: ServerTimeouts,
    pub(super) origin: Origin,
}

impl Raw {
    pub(super) fn from_args(args: &Args) -> Result<Raw, OptionsError> {
        let labels =
            |flag: &'static str, v: &Option<String>| -> Result<LabelsAllowList, OptionsError> {
                match v {
                    None => Ok(LabelsAllowList::new()),
                    Some(v) => parse_labels_allowlist(v).map_err(|m| invalid(flag.into(), v, m)),
                }
            };
        Ok(Raw {
            resources: split_set(&args.resources),
            namespaces: split_list(&args.namespaces),
            namespaces_denylist: split_list(&args.namespaces_denylist),
            metric_allowlist: split_set(&args.metric_allowlist),
            metric_denylist: split_set(&args.metric_denylist),
            metric_opt_in_list: split_set(&args.metric_opt_in_list),
            labels_allowlist: labels("--metric-labels-allowlist", &args.metric_labels_allowlist)?,
            annotations_allowlist: labels(
                "--metric-annotations-allowlist",
                &args.metric_annotations_allowlist,
            )?,
            shard: args.shard,
            total_shards: args.total_shards,
            pod: args.pod.clone(),
            pod_namespace: args.pod_namespace.clone(),
            node: args.node.clone(),
            track_unscheduled_pods: args.track_unscheduled_pods,
            server_side_sharding: args.server_side_sharding,
            crs_inline: args.custom_resource_state_config.clone(),
            crs_file: non_empty_path(&args.custom_resource_state_config_file),
            crs_only: args.custom_resource_state_only,
            crs_continue: args.continue_without_custom_resource_state_config_file,
            continue_without_config: args.continue_without_config,
            host: args.host.clone(),
            port: args.port,
            telemetry_host: args.telemetry_host.clone(),
            telemetry_port: args.telemetry_port,
            tls_config: non_empty_path(&args.tls_config),
            enable_gzip_encoding: args.enable_gzip_encoding,
            use_apiserver_cache: args.use_apiserver_cache,
            object_limit: args.object_limit,
            kubeconfig: non_empty_path(&args.kubeconfig),
            apiserver: args.apiserver.clone().filter(|s| !s.is_empty()),
            auth_filter: args.auth_filter,
            timeouts: ServerTimeouts {
                read: args.server_read_timeout,
                write: args.server_write_timeout,
                idle: args.server_idle_timeout,
                read_header: args.server_read_header_timeout,
            },
            origin: Origin {
                file: None,
                overridden: BTreeSet::new(),
            },
        })
    }

    /// Lays the file over the flags, key by key (see the `options` module docs for the exact rules).
    pub(super) fn apply(&mut self, name: &str, f: &ConfigFile) -> Result<(), OptionsError> {
        self.origin.file = Some(name.to_owned());
        let o = &mut self.origin.overridden;
        macro_rules! set {
            ($field:ident, $flag:literal, $value:expr) => {
                if let Some(v) = $value {
                    self.$field = v;
                    o.insert($flag);
                }
            };
        }
        let set_of = |s: &Option<NameSet>| {
            s.as_ref()
                .filter(|s| !s.0.is_empty())
                .map(|s| split_set(&s.0))
        };
        set!(resources, "--resources", set_of(&f.resources));
        set!(
            metric_allowlist,
            "--metric-allowlist",
            set_of(&f.metric_allowlist)
        );
        set!(
            metric_denylist,
            "--metric-denylist",
            set_of(&f.metric_denylist)
        );
        set!(
            metric_opt_in_list,
            "--metric-opt-in-list",
            set_of(&f.metric_opt_in_list)
        );
        set!(
            labels_allowlist,
            "--metric-labels-allowlist",
            f.labels_allow_list.clone()
        );
        set!(
            annotations_allowlist,
            "--metric-annotations-allowlist",
            f.annotations_allow_list.clone()
        );
        set!(
            namespaces,
            "--namespaces",
            f.namespaces.as_deref().map(split_list)
        );
        set!(
            namespaces_denylist,
            "--namespaces-denylist",
            f.namespaces_denylist.as_deref().map(split_list)
        );
        set!(shard, "--shard", f.shard);
        set!(total_shards, "--total-shards", f.total_shards);
        set!(pod, "--pod", f.pod.clone());
        set!(pod_namespace, "--pod-namespace", f.namespace.clone());
        set!(node, "--node", f.node.clone());
        set!(
            track_unscheduled_pods,
            "--track-unscheduled-pods",
            f.track_unscheduled_pods
        );
        set!(
            server_side_sharding,
            "--server-side-sharding",
            f.server_side_sharding
        );
        set!(
            crs_inline,
            "--custom-resource-state-config",
            f.custom_resource_config.clone()
        );
        set!(
            crs_file,
            "--custom-resource-state-config-file",
            f.custom_resource_state_config_file
                .as_ref()
                .map(|p| Some(PathBuf::from(p)).filter(|p| !p.as_os_str().is_empty()))
        );
        if self.crs_file.is_none() {
            set!(
                crs_file,
                "--custom-resource-state-config-file",
                f.custom_resource_config_file
                    .as_ref()
                    .filter(|p| !p.is_empty())
                    .map(|p| Some(PathBuf::from(p)))
            );
        }
        set!(
            crs_only,
            "--custom-resource-state-only",
            f.custom_resources_only
        );
        set!(
            crs_continue,
            "--continue-without-custom-resource-state-config-file",
            f.continue_without_custom_resource_state_config_file
        );
        set!(
            continue_without_config,
            "--continue-without-config",
            f.continue_without_config
        );
        set!(host, "--host", f.host.clone());
        set!(port, "--port", f.port);
        set!(telemetry_host, "--telemetry-host", f.telemetry_host.clone());
        set!(telemetry_port, "--telemetry-port", f.telemetry_port);
        set!(
            tls_config,
            "--tls-config",
            f.tls_config
                .as_ref()
                .map(|p| Some(PathBuf::from(p)).filter(|p| !p.as_os_str().is_empty()))
        );
        set!(
            enable_gzip_encoding,
            "--enable-gzip-encoding",
            f.enable_gzip_encoding
        );
        set!(
            use_apiserver_cache,
            "--use-apiserver-cache",
            f.use_api_server_cache
        );
        set!(object_limit, "--object-limit", f.object_limit);
        set!(
            kubeconfig,
            "--kubeconfig",
            f.kubeconfig
                .as_ref()
                .map(|p| Some(PathBuf::from(p)).filter(|p| !p.as_os_str().is_empty()))
        );
        set!(
            apiserver,
            "--apiserver",
            f.apiserver
                .as_ref()
                .map(|s| Some(s.clone()).filter(|s| !s.is_empty()))
        );
        set!(auth_filter, "--auth-filter", f.auth_filter);

        let duration = |key: &'static str,
                        v: &Option<String>|
         -> Result<Option<Duration>, OptionsError> {
            v.as_ref()
                .map(|s| parse_go_duration(s).map_err(|m| invalid(format!("{name}: {key}"), s, m)))
                .transpose()
        };
        if let Some(d) = duration("server_read_timeout", &f.server_read_timeout)? {
            self.timeouts.read = d;
        }
        if let Some(d) = duration("server_write_timeout", &f.server_write_timeout)? {
            self.timeouts.write = d;
        }
        if let Some(d) = duration("server_idle_timeout", &f.server_idle_timeout)? {
            self.timeouts.idle = d;
        }
        if let Some(d) = duration("server_read_header_timeout", &f.server_read_header_timeout)? {
            self.timeouts.read_header = d;
        }
        for (key, list) in [
            ("labels_allow_list", &f.labels_allow_list),
            ("annotations_allow_list", &f.annotations_allow_list),
        ] {
            for (resource, keys) in list.iter().flatten() {
                check_wildcards(keys)
                    .map_err(|m| invalid(format!("{name}: {key}.{resource}"), keys.join(","), m))?;
            }
        }
        Ok(())
    }
}
