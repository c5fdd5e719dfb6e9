//! Prometheus HTTP API answers, as any backend or proxy sends them.
//! The body is `ferrocrane_fuzz_targets::core::prometheus_response`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| ferrocrane_fuzz_targets::core::prometheus_response(input));
