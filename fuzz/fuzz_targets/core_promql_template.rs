//! prometheus-adapter's Go-template queries and resource label templates.
#![no_main]
use ferrocrane_core::promql::{QueryTemplate, ResourceLabelTemplate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = QueryTemplate::parse(s);
    let _ = ResourceLabelTemplate::parse(s);
});
