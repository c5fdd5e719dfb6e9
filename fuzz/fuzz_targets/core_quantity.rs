//! Kubernetes quantities: parse, the exact form and apimachinery's float.
#![no_main]
use ferrocrane_core::quantity::{Quantity, approximate_f64};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    if let Ok(q) = Quantity::parse(s) {
        let _ = q.to_string();
    }
    let _ = approximate_f64(s);
});
