//! ksm's settings: its flags and `--config` file, merged and validated into [`Options`].
//!
//! Names, defaults and list syntax are kube-state-metrics v2.20's. One job per file: [`args`]
//! (the clap flags), [`syntax`] and [`duration`] (Go's syntax for flag values), [`file`](mod@file) (the
//! `--config` schema), `merge` (the file laid over the flags), `validate` (checks, into
//! [`Options`]) and [`settings`] (what the runtime reads).
//!
//! Flow: clap parses [`Args`]; [`resolve`] (flags only) or [`resolve_with_config`] (flags plus a
//! parsed [`ConfigFile`]) turns them into [`Options`]; [`load`] does the one piece of I/O
//! (reading `--config`), and [`config_loader`] plugs the same merge into
//! `ferrocrane_core::config::ConfigWatcher::start_with` for hot reload. Everything except
//! [`load`] is pure.
//!
//! # The `--config` file
//! Its keys are upstream's `Options` YAML tags (`resources`, `metric_allowlist`,
//! `labels_allow_list`, `namespaces`, `total_shards`, `use_api_server_cache`,
//! `auto-gomemlimit-ratio`, ...; see [`ConfigFile`]). Sets are mappings of names to `{}`
//! (`resources: {pods: {}}`, what upstream reads); a list of names is accepted too.
//! Durations are Go duration strings (`90s`, `1m30s`). Unknown keys are errors.
//!
//! **The file overrides the flags**, key by key, as upstream does: a key present in the file
//! wins over its flag; a key absent from the file leaves the flag's value. As upstream, an
//! empty set (`resources: {}`) does not override, while an empty `namespaces: []` or
//! `labels_allow_list: {}` does (they become "all namespaces" / "no labels").
//!
//! # Differences from upstream (deliberate)
//! * A reload merges the new file over the **original flags**; upstream unmarshals each reload
//!   over the previous merge, so a key deleted from the file kept its old value.
//! * Validation runs on the merged result every time (upstream validates flags only, before the
//!   file is read) and is complete: `--shard` must be below `--total-shards`; `--total-shards`
//!   at least 1; `--object-limit` not negative; `--pod` and `--pod-namespace` together or not at
//!   all; `--node` / `--track-unscheduled-pods` only with `--resources=pods` (upstream skips the
//!   check when `--resources` is not given and then fails every non-pod watch).
//! * Unknown resources in `--resources` are rejected at startup, not when the store is built.
//! * `--metric-labels-allowlist` rejects malformed text upstream silently drops (a trailing
//!   `nodes` without `=[...]`, an unclosed `[`), and drops empty keys (`pods=[ ]`).
//! * Allow/deny regexes are RE2-style (`regex` crate) rather than ECMAScript: lookaround and
//!   backreferences are rejected with a clear error.
//! * `--auto-gomemlimit`, `--auto-gomemlimit-ratio` are accepted and ignored (Go runtime
//!   knobs), and so are klog's `--v` and `--logtostderr` (use `--log-level` / `--log-format`);
//!   klog's other flags are refused. `--version` is a flag (upstream: a `version` subcommand).

pub mod args;
pub mod duration;
pub mod file;
mod merge;
pub mod settings;
pub mod syntax;
mod validate;

use std::path::PathBuf;

use ferrocrane_core::config::{ConfigError, ValidationError, utf8_text};

pub use crate::field_selector::{
    merge_field_selectors, namespace_denylist_field_selector, node_field_selector,
};
pub use crate::registry::{ALL_RESOURCES, DEFAULT_RESOURCES, OPTIONAL_RESOURCES};
pub use args::Args;
pub use duration::parse_go_duration;
pub use file::{ConfigFile, NameSet};
pub use settings::{
    CustomResourceConfig, Options, OptionsError, ServerTimeouts, ShardingMode, is_all_namespaces,
    join_host_port,
};
pub use syntax::{parse_go_bool, parse_labels_allowlist, split_list, split_set};

use merge::Raw;

/// Flags only (ignores `--config`'s content, but records the path in
/// [`Options::config_file`]).
pub fn resolve(args: &Args) -> Result<Options, OptionsError> {
    Raw::from_args(args)?.validate(args.log.clone(), non_empty_path(&args.config))
}

/// Flags with a parsed config file laid over them; `name` (the file's path) appears in errors.
pub fn resolve_with_config(
    args: &Args,
    name: &str,
    file: &ConfigFile,
) -> Result<Options, OptionsError> {
    let mut raw = Raw::from_args(args)?;
    raw.apply(name, file)?;
    raw.validate(args.log.clone(), non_empty_path(&args.config))
}

/// Startup: [`resolve`], or with `--config`, read the file and [`resolve_with_config`]. A
/// missing or invalid file is an error unless `--continue-without-config`, in which case the
/// flags alone are used (the runtime keeps watching the file, as upstream).
pub fn load(args: &Args) -> Result<Options, OptionsError> {
    let Some(path) = non_empty_path(&args.config) else {
        return resolve(args);
    };
    let name = path.display().to_string();
    let parsed = std::fs::read(&path)
        .map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })
        .and_then(|bytes| utf8_text(&name, bytes))
        .and_then(|text| ConfigFile::parse(&name, &text));
    match parsed {
        Ok(file) => resolve_with_config(args, &name, &file),
        Err(_) if args.continue_without_config => resolve(args),
        Err(e) => Err(e.into()),
    }
}

/// A loader for `ConfigWatcher::start_with(config_path, watch_options, config_loader(args))`:
/// every (re)load merges the file over the original flags and validates the result, so a bad
/// edit is reported with file and key and the last good [`Options`] stay in force.
pub fn config_loader(
    args: Args,
) -> impl Fn(&str, Vec<u8>) -> Result<Options, ConfigError> + Send + Sync + 'static {
    move |name, bytes| {
        let text = utf8_text(name, bytes)?;
        let file = ConfigFile::parse(name, &text)?;
        resolve_with_config(&args, name, &file).map_err(|e| match e {
            OptionsError::Config(c) => c,
            other => ConfigError::Invalid {
                file: name.to_owned(),
                error: ValidationError::new("", other.to_string()),
            },
        })
    }
}

fn non_empty_path(p: &Option<PathBuf>) -> Option<PathBuf> {
    p.clone().filter(|p| !p.as_os_str().is_empty())
}

// What the tests (written against the former single-file module) name unqualified.
#[cfg(test)]
use {
    crate::filters::LabelsAllowList,
    crate::sharding::Sharding,
    clap::Parser,
    ferrocrane_core::config::Validate,
    std::time::Duration,
    syntax::{ALLOWLIST_FORMAT, ALLOWLIST_WILDCARDS},
};

#[cfg(test)]
mod tests;
