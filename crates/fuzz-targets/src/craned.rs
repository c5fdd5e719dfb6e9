//! Targets for craned's configuration and RecommendationRules.

use std::collections::BTreeMap;

use ferrocrane_craned::crd::RecommendationRule;
use ferrocrane_craned::prediction::Sample;
use ferrocrane_craned::recommender::config::{
    RecommendationConfiguration, parse_crane_duration, parse_duration_secs,
};
use ferrocrane_craned::recommender::resource::{
    ContainerInput, ResourceConfig, ResourceRecommender, parse_specifications,
};
use ferrocrane_craned::recommender::{Config, hpa, idlenode, replicas, service};

/// craned's recommendation configuration, recommender settings and the OOM-record ConfigMap.
pub fn config(s: &str) {
    let _ = RecommendationConfiguration::parse("fuzz.yaml", s);
    let _ = parse_crane_duration(s);
    let _ = parse_duration_secs(s);
    let _ = parse_specifications(s);
    let _ = ferrocrane_craned::oom::decode(s);
    let _ = ferrocrane_craned::controller::recommendation_rule::parse_run_interval(s);
}

const NOW: i64 = 1_700_000_000;

/// A RecommendationRule as the API server hands it over, and the recommender settings a rule
/// carries (`key=value` lines): every recommender reads them, and a Resource configuration
/// that passes validation is run over a short usage series (where a bucket size of `1e-18`
/// once crashed craned).
pub fn rule(s: &str) {
    let _ = serde_json::from_str::<RecommendationRule>(s);
    let map: BTreeMap<String, String> = s
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let config = Config::new(map);
    let _ = hpa::HpaConfig::from_config(&config);
    let _ = replicas::ReplicasConfig::from_config(&config);
    let _ = idlenode::IdleNodeConfig::from_config(&config);
    let _ = service::ServiceConfig::from_config(&config);
    let Ok(resource) = ResourceConfig::from_config(&config) else {
        return;
    };
    let Ok(mut recommender) = ResourceRecommender::new(resource) else {
        return;
    };
    let series: Vec<Sample> = (0..48)
        .map(|i| Sample {
            timestamp: NOW - 3600 * i,
            value: 0.25 + (i % 7) as f64,
        })
        .collect();
    let usage = [series.as_slice()];
    let input = ContainerInput {
        name: "app",
        current_cpu_millis: Some(100),
        current_memory_bytes: Some(1 << 20),
        cpu_usage: &usage,
        memory_usage: &usage,
    };
    let _ = recommender.recommend(&[input], &[], NOW);
}
