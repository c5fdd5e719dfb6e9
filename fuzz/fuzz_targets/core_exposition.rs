//! The exposition format: floats written and read back, documents read.
//! The body is `ferrocrane_fuzz_targets::core::exposition`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| ferrocrane_fuzz_targets::core::exposition(input));
