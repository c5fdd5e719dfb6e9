//! Targets for the metrics adapter's config file and requests.

use ferrocrane_adapter::api;
use ferrocrane_adapter::auth::RequestInfo;

/// prometheus-adapter's config file (rules, resourceRules, externalRules).
pub fn config(s: &str) {
    let _ = ferrocrane_adapter::loader::parse_str("fuzz.yaml", s);
}

/// The adapter's request paths and query strings, as the aggregator forwards them.
pub fn request((path, query): (&str, Option<&str>)) {
    let _ = RequestInfo::parse(&http::Method::GET, path, query);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let _ = api::custom::parse_path(&segments);
    let _ = api::external::parse_path(&segments);
    let _ = api::parse_params(query);
}
