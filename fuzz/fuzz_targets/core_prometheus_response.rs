//! Prometheus HTTP API answers (query, series, errors), as any backend or proxy sends them.
#![no_main]
use ferrocrane_core::prometheus::{decode_query, decode_series, decode_series_shapes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let _ = decode_query(body);
    let _ = decode_series(body);
    let _ = decode_series_shapes(body);
});
