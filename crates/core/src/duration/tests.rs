//! Go's own answers (testdata, from hack/tools/testdata/duration), the hand-picked cases of the
//! copies this module replaced, and property tests against those copies.

mod old_copies;

use std::time::Duration;

use proptest::prelude::*;

use super::*;

const HOUR: i64 = 3_600_000_000_000;

fn nanos(text: &str) -> Result<i64, ParseDurationError> {
    GoDuration::parse(text).map(GoDuration::as_nanos)
}

fn unhex(hex: &str) -> String {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect();
    String::from_utf8(bytes).expect("utf-8 input")
}

/// The `input <TAB> Go's answer` lines of a testdata file.
fn go_vectors(data: &str) -> Vec<(&str, &str)> {
    data.lines()
        .map(|line| line.split_once('\t').expect("input, tab, Go's answer"))
        .collect()
}

#[test]
fn parses_like_go() {
    let vectors = go_vectors(include_str!("testdata/go_parse.txt"));
    assert!(vectors.len() >= 3000);
    for (hex, want) in vectors {
        let input = unhex(hex);
        let got = match nanos(&input) {
            Ok(v) => format!("ok {v}"),
            Err(e) => format!("err {e}"),
        };
        assert_eq!(got, want, "input {input:?}");
    }
}

#[test]
fn formats_like_go() {
    let vectors = go_vectors(include_str!("testdata/go_format.txt"));
    assert!(vectors.len() >= 1000);
    for (value, want) in vectors {
        let value: i64 = value.parse().expect("nanoseconds");
        assert_eq!(GoDuration::from_nanos(value).to_string(), want);
    }
}

/// Was the test of crates/ksm/src/families/cronjob/schedule.rs' copy.
#[test]
fn go_durations() {
    let parse_go_duration = |s: &str| nanos(s).map_err(drop);
    assert_eq!(parse_go_duration("1h30m"), Ok(5_400_000_000_000));
    assert_eq!(parse_go_duration("1.5h"), Ok(5_400_000_000_000));
    assert_eq!(parse_go_duration(".5s"), Ok(500_000_000));
    assert_eq!(parse_go_duration("2\u{b5}s"), Ok(2_000));
    assert_eq!(parse_go_duration("-1s"), Ok(-1_000_000_000));
    assert_eq!(parse_go_duration("0"), Ok(0));
    assert!(parse_go_duration("1").is_err());
    assert!(parse_go_duration(".s").is_err());
    assert!(parse_go_duration("9999999999h").is_err());
}

/// Was the test of crates/adapter/src/resource_metrics/model.rs' `go_duration`.
#[test]
fn go_duration_strings() {
    let go_duration = |d: Duration| GoDuration::from_std_saturating(d).to_string();
    for (d, want) in [
        (Duration::ZERO, "0s"),
        (Duration::from_secs(300), "5m0s"),
        (Duration::from_secs(30), "30s"),
        (Duration::from_secs(90), "1m30s"),
        (Duration::from_secs(3600), "1h0m0s"),
        (Duration::from_millis(1500), "1.5s"),
        (Duration::from_millis(500), "500ms"),
        (Duration::from_micros(1500), "1.5ms"),
        (Duration::from_nanos(1500), "1.5µs"),
        (Duration::from_nanos(15), "15ns"),
        (Duration::from_millis(3_723_250), "1h2m3.25s"),
    ] {
        assert_eq!(go_duration(d), want, "{d:?}");
    }
}

#[test]
fn errors_say_what_go_says() {
    let message = |s: &str| nanos(s).unwrap_err().to_string();
    assert_eq!(message(""), r#"time: invalid duration """#);
    assert_eq!(message("60"), r#"time: missing unit in duration "60""#);
    assert_eq!(message("7d"), r#"time: unknown unit "d" in duration "7d""#);
    assert_eq!(
        message("1\"x"),
        r#"time: unknown unit "\"x" in duration "1\"x""#
    );
    assert_eq!(
        message("1\u{b5}"),
        r#"time: unknown unit "\xc2\xb5" in duration "1\xc2\xb5""#
    );
    assert_eq!(message("3000000h"), r#"time: invalid duration "3000000h""#);
    assert!(matches!(
        GoDuration::parse("3000000h"),
        Err(ParseDurationError::OutOfRange { .. })
    ));
    assert!(matches!(
        GoDuration::parse("1h1"),
        Err(ParseDurationError::MissingUnit { .. })
    ));
    assert_eq!(GoDuration::parse("1x").unwrap_err().input(), "1x");
}

/// Go wraps two components of 2^63 ns around to zero; here that is out of range.
#[test]
fn overflow_never_wraps() {
    for text in [
        "9223372036854775808ns9223372036854775808ns",
        "-9223372036854775808ns9223372036854775808ns",
        "-9223372036854775808ns1ns",
    ] {
        assert!(
            matches!(
                GoDuration::parse(text),
                Err(ParseDurationError::OutOfRange { .. })
            ),
            "{text}"
        );
    }
    assert_eq!(nanos("-9223372036854775808ns"), Ok(i64::MIN));
    assert_eq!(nanos("-2562047h47m16.854775808s"), Ok(i64::MIN));
}

#[test]
fn conversions() {
    let d = |s: &str| GoDuration::parse(s).unwrap();
    assert_eq!(d("1.5s").to_std(), Ok(Duration::from_millis(1500)));
    assert_eq!(Duration::try_from(d("0")), Ok(Duration::ZERO));
    let e = d("-5s").to_std().unwrap_err();
    assert_eq!(e.to_string(), "negative duration -5s");
    assert_eq!(d("1m59.9s").whole_seconds(), 119);
    assert_eq!(d("-1.9s").whole_seconds(), -1);
    assert!(d("-1ns").is_negative());
    assert_eq!(
        GoDuration::from_std_saturating(Duration::MAX),
        GoDuration::MAX
    );
    assert_eq!(
        "2h".parse::<GoDuration>(),
        Ok(GoDuration::from_nanos(2 * HOUR))
    );
    assert_eq!(GoDuration::MIN.to_string(), "-2562047h47m16.854775808s");
}

/// `<integer>[.<fraction>]<unit>` with the integer below `max_integer` and up to
/// `max_fraction_digits` fraction digits.
fn components(
    units: &'static [&'static str],
    max_integer: u64,
    max_fraction_digits: usize,
) -> impl Strategy<Value = String> {
    let fraction = proptest::collection::vec(0u8..10, 0..=max_fraction_digits);
    let component = (0..max_integer, fraction, proptest::sample::select(units)).prop_map(
        |(integer, fraction, unit)| {
            let mut text = integer.to_string();
            if !fraction.is_empty() {
                text.push('.');
                text.extend(fraction.iter().map(|d| char::from(b'0' + d)));
            }
            text + unit
        },
    );
    proptest::collection::vec(component, 1..=4).prop_map(|parts| parts.concat())
}

const GO_UNITS: &[&str] = &["ns", "us", "\u{b5}s", "\u{3bc}s", "ms", "s", "m", "h"];

/// Mostly Go-shaped text with overlong numbers, stray points and unknown units.
const NEARLY_GO: &str = "[-+]?([0-9]{0,20}(\\.[0-9]{0,22})?(ns|us|µs|μs|ms|s|m|h|d|x|)){1,5}";

proptest! {
    #[test]
    fn parse_never_panics(text in "\\PC*") {
        let _ = GoDuration::parse(&text);
    }

    #[test]
    fn parse_never_panics_near_go(text in NEARLY_GO) {
        let _ = GoDuration::parse(&text);
    }

    #[test]
    fn format_then_parse_round_trips(value in any::<i64>()) {
        let d = GoDuration::from_nanos(value);
        prop_assert_eq!(GoDuration::parse(&d.to_string()), Ok(d));
    }

    /// The `@every` copy was a faithful port, so it agrees everywhere it does not overflow u64
    /// (20-digit integers could).
    #[test]
    fn agrees_with_cronjob_copy(text in "[-+]?([0-9]{0,17}(\\.[0-9]{0,22})?(ns|us|µs|μs|ms|s|m|h|d|)){1,5}") {
        prop_assert_eq!(nanos(&text).ok(), old_copies::ksm_cronjob(&text).ok());
    }

    /// ksm's flag copy did exact integer arithmetic on fractions where Go uses a float64; they
    /// agree where the float is exact enough, up to three fraction digits.
    #[test]
    fn agrees_with_ksm_options_copy(text in components(GO_UNITS, 100_000, 3), plus in any::<bool>()) {
        let text = if plus { format!("+{text}") } else { text };
        let new = GoDuration::parse(&text).ok().map(|d| d.to_std());
        prop_assert_eq!(new, Some(Ok(old_copies::ksm_options(&text).unwrap())));
        // Negative durations were cut to zero by the copy; ksm still does that itself.
        let negative = format!("-{}", text.trim_start_matches('+'));
        prop_assert!(GoDuration::parse(&negative).unwrap().as_nanos() <= 0);
        prop_assert_eq!(old_copies::ksm_options(&negative), Ok(Duration::ZERO));
    }

    /// ksm's flag copy rejected what Go rejects.
    #[test]
    fn rejects_what_ksm_options_copy_rejected(text in "\\+?([0-9]{0,12}(\\.[0-9]{0,12})?(ns|us|µs|ms|s|m|h|d|x|)){1,5}") {
        prop_assert_eq!(GoDuration::parse(&text).is_err(), old_copies::ksm_options(&text).is_err());
    }

    /// craned summed float seconds; with whole numbers of seconds, minutes and hours that is
    /// exact, and the whole seconds agree (below Go's limit: past 2562047h craned kept going).
    #[test]
    fn agrees_with_craned_copy(text in components(&["s", "m", "h"], 100_000, 0), sign in "[-+]?") {
        let text = format!("{sign}{text}");
        prop_assert_eq!(
            GoDuration::parse(&text).ok().map(GoDuration::whole_seconds),
            old_copies::craned_whole_seconds(&text)
        );
    }

    #[test]
    fn agrees_with_adapter_formatter(value in 0..=i64::MAX) {
        let std = Duration::from_nanos(value.unsigned_abs());
        prop_assert_eq!(
            GoDuration::from_nanos(value).to_string(),
            old_copies::adapter_format(std)
        );
    }
}
