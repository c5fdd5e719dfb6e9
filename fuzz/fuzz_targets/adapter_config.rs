//! prometheus-adapter's config file (rules, resourceRules, externalRules).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = ferrocrane_adapter::loader::parse_str("fuzz.yaml", s);
});
