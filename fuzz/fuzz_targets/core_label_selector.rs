//! Kubernetes label selectors as the adapter and ksm read them from requests and flags.
#![no_main]
use ferrocrane_core::promql::{parse_label_selector, parse_object_label_selector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = parse_label_selector(s);
    let _ = parse_object_label_selector(s);
});
