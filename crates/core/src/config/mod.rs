//! Configuration files: strict loading, validation, and hot reload.
//!
//! Every ferrocrane service reads a YAML file (adapter rules, recommendation configuration, ksm
//! custom-resource config). This module gives them one behaviour: unknown keys are errors that
//! name file, line and key; semantic checks run through [`Validate`]; and reloads follow
//! Kubernetes ConfigMap updates while never replacing a good config with a bad one.

mod load;
mod watch;

pub use load::{
    ConfigError, Validate, ValidationError, load_and_validate, load_yaml, parse_and_validate_str,
    parse_yaml_str, utf8_text,
};
pub use watch::{ConfigWatcher, ReloadStatus, WatchOptions};
