//! ksm's --config file and custom-resource-state config, and the values a custom resource
//! holds.
#![no_main]
use ferrocrane_ksm::custom_resource::config::CustomResourceStateConfig;
use ferrocrane_ksm::custom_resource::value::to_float64;
use ferrocrane_ksm::options::file::ConfigFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = ConfigFile::parse("fuzz.yaml", s);
    let _ = CustomResourceStateConfig::parse("fuzz.yaml", s);
    let _ = to_float64(Some(&serde_json::Value::String(s.to_owned())), false);
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(s) {
        let _ = to_float64(Some(&value), false);
        let _ = to_float64(Some(&value), true);
    }
});
