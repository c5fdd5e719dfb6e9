//! A RecommendationRule and the recommender settings it carries.
//! The body is `ferrocrane_fuzz_targets::craned::rule`, which the corpus replay tests run too.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| ferrocrane_fuzz_targets::craned::rule(input));
