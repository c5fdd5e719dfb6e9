//! The front-proxy authenticator under arbitrary headers.
//! The body is `ferrocrane_fuzz_targets::core::front_proxy`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, Vec<(&[u8], &[u8])>)| ferrocrane_fuzz_targets::core::front_proxy(input));
