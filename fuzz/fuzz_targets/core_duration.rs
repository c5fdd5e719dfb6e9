//! Go durations, parsed and printed back.
//! The body is `ferrocrane_fuzz_targets::core::duration`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::core::duration(input));
