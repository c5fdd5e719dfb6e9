//! prometheus-adapter's Go-template queries and resource label templates.
//! The body is `ferrocrane_fuzz_targets::core::promql_template`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::core::promql_template(input));
