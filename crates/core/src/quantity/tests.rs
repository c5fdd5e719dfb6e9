use proptest::prelude::*;

use super::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn parses_every_suffix_kind() {
    assert_eq!(q("100m").milli_value(), 100);
    assert_eq!(q("1").milli_value(), 1000);
    assert_eq!(q("1.5").milli_value(), 1500);
    assert_eq!(q("2k").value(), 2000);
    assert_eq!(q("1Ki").value(), 1024);
    assert_eq!(q("1.5Gi").value(), 1_610_612_736);
    assert_eq!(q("128Mi").value(), 134_217_728);
    assert_eq!(q("1e3").value(), 1000);
    assert_eq!(q("1E-3").milli_value(), 1);
    assert_eq!(q("500u").milli_value(), 1);
    assert_eq!(q("-1").value(), -1);
    assert_eq!(q("+2").value(), 2);
    assert_eq!(q(".5").milli_value(), 500);
    assert_eq!(q("0").value(), 0);
}

#[test]
fn rounds_up_like_apimachinery() {
    // Value() and MilliValue() round towards +infinity.
    assert_eq!(q("100m").value(), 1);
    assert_eq!(q("1n").milli_value(), 1);
    assert_eq!(q("1001m").value(), 2);
    assert_eq!(q("-1500m").value(), -1);
    assert_eq!(q("0.1").value(), 1);
}

#[test]
fn keeps_nanos_rounded_away_from_zero_like_parse_quantity() {
    assert_eq!(q("0.1n"), q("1n"));
    assert_eq!(q("1.0000000001").to_string(), "1.000000001");
    // -0.9999999999 is kept as -1, so it rounds up to -1 rather than to 0.
    assert_eq!(q("-0.9999999999").value(), -1);
    // Sub-nano digits beyond any i128 still parse.
    assert_eq!(
        q(&format!("1.{}", "1".repeat(60))).to_string(),
        "1.111111112"
    );
}

#[test]
fn floats() {
    assert_eq!(q("250m").as_f64(), 0.25);
    assert_eq!(q("1Gi").as_f64(), 1073741824.0);
    assert_eq!(q("1.5e2").as_f64(), 150.0);
}

#[test]
fn saturates_instead_of_overflowing() {
    assert_eq!(q("9E").value(), 9_000_000_000_000_000_000);
    assert_eq!(q("100E").value(), i64::MAX);
    assert_eq!(q("100Ei").milli_value(), i64::MAX);
    assert_eq!(q("1e-300").value(), 1);
}

#[test]
fn binary_si_is_capped_like_parse_quantity() {
    assert_eq!(q("16Ei"), q("9223372036854775807"));
    assert_eq!(q("-16Ei").value(), -i64::MAX);
    assert_eq!(q("16E").to_string(), "16000000000000000000");
}

#[test]
fn rejects_garbage_with_a_reason() {
    for bad in ["", "abc", "1.2.3", "1Xi", "--1", "1e", "1ee2"] {
        let e = Quantity::parse(bad).expect_err(bad);
        assert!(e.to_string().contains("invalid quantity"), "{e}");
    }
}

#[test]
fn accepts_what_parse_quantity_accepts() {
    // Zero upstream, though they look like garbage.
    for zero in [".", "+", "-", "k", "0.Ki"] {
        assert_eq!(q(zero), q("0"), "{zero}");
    }
    assert_eq!(q("5."), q("5"));
    // Decoded from JSON, so surrounding whitespace is trimmed as UnmarshalJSON does.
    assert_eq!(q(" 1Gi\n"), q("1Gi"));
}

#[test]
fn refuses_absurd_input_without_allocating_for_it() {
    // A scale, not two billion zeros.
    let huge = q("1234567890123456789e2147483647");
    assert_eq!(huge.value(), i64::MAX);
    assert_eq!(huge.as_f64(), f64::INFINITY);
    assert_eq!(q("-1e2147483647").milli_value(), i64::MIN);
    for (bad, reason) in [
        ("1e2147483648", "exponent out of range"),
        ("1000e2147483647", "exponent out of range"),
        ("1e99999999999999999999", "bad exponent"),
        (
            &"9".repeat(40),
            "more significant digits than an i128 holds",
        ),
        (&"1".repeat(2000), "too long"),
    ] {
        let e = Quantity::parse(bad).expect_err(bad);
        assert_eq!(e.reason, reason, "{bad}");
        assert!(e.input.len() < 100, "{}", e.input);
    }
}

#[test]
fn display_round_trips() {
    for s in [
        "100m", "1.5Gi", "3", "2e3", "-7Ki", "0.001", "-0.5Mi", "1e30",
    ] {
        let parsed = q(s);
        assert_eq!(q(&parsed.to_string()), parsed, "{s}");
    }
}

/// Text shaped like a quantity: sign, digits, fraction, any suffix or exponent.
fn quantity_text() -> impl Strategy<Value = String> {
    "[+-]?[0-9]{0,24}(\\.[0-9]{0,24})?([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]{1,11})?"
}

/// Ordinary quantities: at most 15 significant digits, exponents a float holds well.
fn ordinary_quantity_text() -> impl Strategy<Value = String> {
    "-?[1-9][0-9]{0,7}(\\.[0-9]{1,6})?([numkMGTPE]|[KMGTPE]i|e-?[0-9])?"
}

fn any_format() -> impl Strategy<Value = QuantityFormat> {
    prop_oneof![
        Just(QuantityFormat::DecimalSi),
        Just(QuantityFormat::BinarySi)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn parsing_never_panics(s in any::<String>(), t in quantity_text()) {
        for text in [&s, &t] {
            let _ = Quantity::parse(text).map(|q| (q.value(), q.milli_value(), q.as_f64(), q.to_string()));
            let _ = approximate_f64(text);
        }
    }

    #[test]
    fn display_parses_back_to_the_same_value(t in quantity_text()) {
        if let Ok(parsed) = Quantity::parse(&t) {
            prop_assert_eq!(Quantity::parse(&parsed.to_string()), Ok(parsed));
        }
    }

    #[test]
    fn canonical_milli_text_parses_back(milli in any::<i64>(), format in any_format()) {
        let text = format_milli(milli, format);
        prop_assert_eq!(q(&text).milli_value(), milli, "{}", text);
    }

    #[test]
    fn canonical_text_parses_back(value in any::<i64>(), format in any_format()) {
        let text = format_value(value, format);
        prop_assert_eq!(q(&text).value(), value, "{}", text);
    }

    #[test]
    fn canonical_text_of_round_numbers(base in -9999i64..9999, power in 0u32..5, format in any_format()) {
        let value = base * 1000i64.pow(power);
        let text = format_value(value, format);
        prop_assert_eq!(q(&text).value(), value, "{}", text);
    }

    #[test]
    fn approximation_agrees_with_the_exact_value(t in ordinary_quantity_text()) {
        let exact = q(&t).as_f64();
        let approx = approximate_f64(&t).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let tolerance = exact.abs() * 1e-12 + 1e-18;
        prop_assert!((approx - exact).abs() <= tolerance, "{t}: {approx} vs {exact}");
    }
}
