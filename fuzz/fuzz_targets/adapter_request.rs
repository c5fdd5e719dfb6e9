//! The adapter's request paths and query strings.
//! The body is `ferrocrane_fuzz_targets::adapter::request`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, Option<&str>)| ferrocrane_fuzz_targets::adapter::request(input));
