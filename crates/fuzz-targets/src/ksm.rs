//! Targets for ksm's flags and config files.

use clap::Parser;
use ferrocrane_ksm::custom_resource::config::CustomResourceStateConfig;
use ferrocrane_ksm::custom_resource::value::to_float64;
use ferrocrane_ksm::options::file::ConfigFile;
use ferrocrane_ksm::options::{Args, resolve};

/// ksm's --config file and custom-resource-state config, and the values a custom resource
/// holds.
pub fn config(s: &str) {
    let _ = ConfigFile::parse("fuzz.yaml", s);
    let _ = CustomResourceStateConfig::parse("fuzz.yaml", s);
    let _ = to_float64(Some(&serde_json::Value::String(s.to_owned())), false);
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(s) {
        let _ = to_float64(Some(&value), false);
        let _ = to_float64(Some(&value), true);
    }
}

/// ksm's command line: every flag's syntax (lists, `resource=[labels]` allowlists, Go booleans
/// and durations, regexes), one argument per line, then the whole validation of the result.
pub fn flags(s: &str) {
    let argv = std::iter::once("kube-state-metrics").chain(s.lines());
    if let Ok(args) = Args::try_parse_from(argv) {
        let _ = resolve(&args);
    }
}
