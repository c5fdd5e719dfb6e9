//! ksm's command line, then the whole validation of the result.
//! The body is `ferrocrane_fuzz_targets::ksm::flags`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::ksm::flags(input));
