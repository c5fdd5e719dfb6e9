//! craned's recommendation configuration, recommender settings and the OOM-record ConfigMap.
#![no_main]
use ferrocrane_craned::recommender::config::{
    RecommendationConfiguration, parse_crane_duration, parse_duration_secs,
};
use ferrocrane_craned::recommender::resource::parse_specifications;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    if let Ok(c) = RecommendationConfiguration::parse("fuzz.yaml", s) {
        let _ = c;
    }
    let _ = parse_crane_duration(s);
    let _ = parse_duration_secs(s);
    let _ = parse_specifications(s);
    let _ = ferrocrane_craned::oom::decode(s);
    let _ = ferrocrane_craned::controller::parse_run_interval(s);
});
