//! ksm's --config file and custom-resource-state config.
//! The body is `ferrocrane_fuzz_targets::ksm::config`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::ksm::config(input));
