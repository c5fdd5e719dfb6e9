//! Kubernetes label selectors as the adapter and ksm read them.
//! The body is `ferrocrane_fuzz_targets::core::label_selector`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::core::label_selector(input));
