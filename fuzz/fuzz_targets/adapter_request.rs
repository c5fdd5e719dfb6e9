//! The adapter's request paths and query strings, as the aggregator forwards them.
#![no_main]
use ferrocrane_adapter::auth::RequestInfo;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: (&str, Option<&str>)| {
    let (path, query) = data;
    let _ = RequestInfo::parse(&http::Method::GET, path, query);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let _ = ferrocrane_adapter::api::custom::parse_path(&segments);
    let _ = ferrocrane_adapter::api::external::parse_path(&segments);
    let _ = ferrocrane_adapter::api::parse_params(query);
});
