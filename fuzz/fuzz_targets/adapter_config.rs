//! prometheus-adapter's config file.
//! The body is `ferrocrane_fuzz_targets::adapter::config`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::adapter::config(input));
