//! ksm's command line: every flag's syntax (lists, `resource=[labels]` allowlists, Go booleans
//! and durations, regexes), one argument per line, then the whole validation of the result.
#![no_main]
use clap::Parser;
use ferrocrane_ksm::options::{Args, resolve};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let argv = std::iter::once("kube-state-metrics").chain(s.lines());
    if let Ok(args) = Args::try_parse_from(argv) {
        let _ = resolve(&args);
    }
});
