//! Kubernetes quantities: parse, the exact form and apimachinery's float.
//! The body is `ferrocrane_fuzz_targets::core::quantity`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::core::quantity(input));
