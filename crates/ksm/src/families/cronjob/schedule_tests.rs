//! Cron parsing and next-run times, checked against robfig/cron's answers.

use super::*;

fn next(spec: &str, tz: Option<&str>, t: &str) -> i64 {
    let t: Timestamp = t.parse().expect("timestamp");
    parse_schedule(spec, tz)
        .expect("valid schedule")
        .next(t.as_second())
}

fn at(t: &str) -> i64 {
    t.parse::<Timestamp>().expect("timestamp").as_second()
}

#[test]
fn standard_fields() {
    assert_eq!(
        next("0 */6 * * *", None, "2018-03-11T04:34:56Z"),
        at("2018-03-11T06:00:00Z")
    );
    assert_eq!(
        next("25 * * * *", None, "2018-03-11T10:34:56Z"),
        at("2018-03-11T11:25:00Z")
    );
    assert_eq!(
        next("*/15 * * * *", None, "2024-12-31T23:59:00Z"),
        at("2025-01-01T00:00:00Z")
    );
    assert_eq!(
        next("0 0 29 2 *", None, "2023-03-01T00:00:00Z"),
        at("2024-02-29T00:00:00Z")
    );
    assert_eq!(
        next("30 9 * JAN-mar mon-FRI", None, "2024-03-29T10:00:00Z"),
        at("2025-01-01T09:30:00Z")
    );
    // Day of month AND day of week (go-cron's default, unlike Vixie cron).
    assert_eq!(
        next("0 0 13 * 5", None, "2024-01-01T00:00:00Z"),
        at("2024-09-13T00:00:00Z")
    );
    // Sunday as 7, wraparound ranges.
    assert_eq!(
        next("0 12 * * 7", None, "2024-06-03T00:00:00Z"),
        at("2024-06-09T12:00:00Z")
    );
    assert_eq!(
        next("0 22-2/2 * * *", None, "2024-06-03T01:00:00Z"),
        at("2024-06-03T02:00:00Z")
    );
    assert_eq!(
        next("0 22-2/2 * * *", None, "2024-06-03T03:00:00Z"),
        at("2024-06-03T22:00:00Z")
    );
}

#[test]
fn descriptors() {
    assert_eq!(
        next("@hourly", None, "2024-06-03T01:00:00Z"),
        at("2024-06-03T02:00:00Z")
    );
    assert_eq!(
        next("@daily", None, "2024-06-03T01:00:00Z"),
        at("2024-06-04T00:00:00Z")
    );
    assert_eq!(
        next("@weekly", None, "2024-06-03T01:00:00Z"),
        at("2024-06-09T00:00:00Z")
    );
    assert_eq!(
        next("@monthly", None, "2024-06-03T01:00:00Z"),
        at("2024-07-01T00:00:00Z")
    );
    assert_eq!(
        next("@yearly", None, "2024-06-03T01:00:00Z"),
        at("2025-01-01T00:00:00Z")
    );
    assert_eq!(
        next("@every 1h30m", None, "2024-06-03T01:00:00Z"),
        at("2024-06-03T02:30:00Z")
    );
    assert_eq!(
        next("@every 1.5s", None, "2024-06-03T01:00:00Z"),
        at("2024-06-03T01:00:01Z")
    );
    assert_eq!(next("@manual", None, "2024-06-03T01:00:00Z"), GO_ZERO_UNIX);
    // February 30th never comes.
    assert_eq!(
        next("0 0 30 2 *", None, "2024-06-03T01:00:00Z"),
        GO_ZERO_UNIX
    );
}

#[test]
fn invalid_schedules() {
    for spec in [
        "",
        "* * * *",
        "* * * * * *",
        "60 * * * *",
        "* 24 * * *",
        "* * 0 * *",
        "* * L * *",
        "* * * * FRI#3",
        "H * * * *",
        "*/0 * * * *",
        "0-59/60 * * * *",
        "1-2-3 * * * *",
        "@every 500ms",
        "@every 1h ",
        "@reboot",
        "TZ=Bad/Zone 0 * * * *",
        "TZ=UTC",
        "TZ=UTC ",
    ] {
        assert!(
            parse_schedule(spec, None).is_err(),
            "{spec:?} should be invalid"
        );
    }
    assert!(parse_schedule("0 * * * *", Some("")).is_err());
    assert!(parse_schedule("0 * * * *", Some("Not/AZone")).is_err());
    assert!(parse_schedule("0 * * * *", Some("../etc/passwd")).is_err());
    assert!(parse_schedule("0 * * * *", Some("UTC")).is_ok());
    assert!(parse_schedule("TZ=\"UTC\" 0 * * * *", None).is_ok());
}

/// Zone-dependent cases need the system zoneinfo, as Go would.
#[test]
fn named_zones_with_go_gap_resolution() {
    for zone in ["America/New_York", "Asia/Shanghai"] {
        assert!(
            load_location(zone).is_ok(),
            "zoneinfo for {zone} missing: install Debian's tzdata (hack/setup.sh does)"
        );
    }
    // Upstream's test case: 2018-03-11 12:34:56 in Shanghai -> 18:00 Shanghai.
    assert_eq!(
        next("0 */6 * * *", Some("Asia/Shanghai"), "2018-03-11T04:34:56Z"),
        at("2018-03-11T10:00:00Z")
    );
    // 02:30 does not exist on 2024-03-10 in New York; Go's time.Date resolves
    // it to 01:30 EST, after which the hour loop detects the skipped hour.
    assert_eq!(
        next(
            "30 2 * * *",
            Some("America/New_York"),
            "2024-03-10T05:00:00Z"
        ),
        at("2024-03-10T07:30:00Z")
    );
    assert_eq!(
        date(
            2024,
            3,
            10,
            2,
            30,
            0,
            &load_location("America/New_York").expect("zone")
        ),
        at("2024-03-10T06:30:00Z")
    );
    // 01:30 happens twice on 2024-11-03; the first one is next.
    assert_eq!(
        next(
            "30 1 * * *",
            Some("America/New_York"),
            "2024-11-03T04:00:00Z"
        ),
        at("2024-11-03T05:30:00Z")
    );
}
