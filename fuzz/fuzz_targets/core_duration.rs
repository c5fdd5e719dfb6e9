//! Go durations (`1h30m`, `1.5s`, `-2us`), parsed and printed back.
#![no_main]
use ferrocrane_core::duration::GoDuration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    if let Ok(d) = GoDuration::parse(s) {
        let printed = d.to_string();
        assert_eq!(GoDuration::parse(&printed).ok(), Some(d), "{s:?} printed as {printed:?}");
    }
});
