//! The exposition format: a float written by our writer parses back to itself, and the
//! strict reader never panics on a document.
#![no_main]
use ferrocrane_core::exposition::format_float;
use ferrocrane_core::exposition::parse::{parse_document, parse_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() >= 8 {
        let mut bits = [0u8; 8];
        bits.copy_from_slice(&data[..8]);
        let v = f64::from_le_bytes(bits);
        let text = format_float(v);
        let back = parse_value(&text).unwrap_or_else(|e| panic!("{v:?} as {text:?}: {e}"));
        assert!(back == v || (back.is_nan() && v.is_nan()), "{v:?} as {text:?} read {back:?}");
    }
    if let Ok(doc) = std::str::from_utf8(data) {
        let _ = parse_document(doc);
    }
});
