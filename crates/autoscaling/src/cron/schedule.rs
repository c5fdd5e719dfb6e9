//! One cron schedule: parsed once, asked for the next time it fires after an instant.

use ferrocrane_core::duration::GoDuration;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

/// A schedule that cannot be parsed, with the part that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("empty schedule")]
    Empty,
    #[error("expected 5 fields (minute hour day-of-month month day-of-week), found {0}: {1:?}")]
    FieldCount(usize, String),
    #[error("{field}: {reason} in {text:?}")]
    Field {
        field: &'static str,
        text: String,
        reason: String,
    },
    #[error(
        "unknown descriptor {0:?} (known: @yearly @annually @monthly @weekly @daily @midnight @hourly @every)"
    )]
    Descriptor(String),
    #[error("@every {0:?}: {1}")]
    Every(String, String),
    #[error("unknown time zone {0:?}")]
    TimeZone(String),
}

/// When a schedule fires.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
    /// From a `TZ=`/`CRON_TZ=` prefix; otherwise the window's zone applies.
    zone: Option<TimeZone>,
}

#[derive(Debug, Clone)]
enum Kind {
    Fields(Fields),
    /// `@every`: a fixed delay after each instant, whole seconds.
    Every(SignedDuration),
}

/// The allowed values of each field, as bit sets; `*`/`?` in day of month or day of week
/// changes how the two combine (either may match, or both must).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fields {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    dom_star: bool,
    dow_star: bool,
}

struct Bounds {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Bounds = Bounds {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Bounds = Bounds {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Bounds = Bounds {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Bounds = Bounds {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAY_OF_WEEK: Bounds = Bounds {
    name: "day of week",
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// How far ahead a schedule is searched (robfig's limit): a schedule that does not fire in
/// five years (`0 0 30 2 *`) never fires.
const SEARCH_YEARS: i16 = 5;

impl Schedule {
    pub fn parse(text: &str) -> Result<Schedule, ScheduleError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ScheduleError::Empty);
        }
        let (zone, rest) = match text
            .strip_prefix("CRON_TZ=")
            .or_else(|| text.strip_prefix("TZ="))
        {
            Some(prefixed) => {
                let (name, rest) = prefixed
                    .split_once(char::is_whitespace)
                    .unwrap_or((prefixed, ""));
                let zone =
                    TimeZone::get(name).map_err(|_| ScheduleError::TimeZone(name.to_owned()))?;
                (Some(zone), rest.trim())
            }
            None => (None, text),
        };
        let kind = if let Some(descriptor) = rest.strip_prefix('@') {
            descriptor_kind(descriptor)?
        } else {
            Kind::Fields(parse_fields(rest)?)
        };
        Ok(Schedule { kind, zone })
    }

    /// The first time after `after` (strictly) the schedule fires, in `zone` unless the
    /// schedule names its own; `None` when it does not fire within five years.
    pub fn next(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        match &self.kind {
            Kind::Every(delay) => {
                let next = after.checked_add(*delay).ok()?;
                // Whole seconds, as robfig truncates.
                Timestamp::from_second(next.as_second()).ok()
            }
            Kind::Fields(fields) => fields.next(after, self.zone.as_ref().unwrap_or(zone)),
        }
    }
}

fn descriptor_kind(descriptor: &str) -> Result<Kind, ScheduleError> {
    let fields = match descriptor.to_ascii_lowercase().as_str() {
        "yearly" | "annually" => "0 0 1 1 *",
        "monthly" => "0 0 1 * *",
        "weekly" => "0 0 * * 0",
        "daily" | "midnight" => "0 0 * * *",
        "hourly" => "0 * * * *",
        other => {
            let Some(duration) = other.strip_prefix("every ") else {
                return Err(ScheduleError::Descriptor(format!("@{descriptor}")));
            };
            let raw = descriptor["every ".len()..].trim();
            let delay = GoDuration::parse(raw)
                .map_err(|e| ScheduleError::Every(duration.to_owned(), e.to_string()))?;
            if delay.is_negative() {
                return Err(ScheduleError::Every(
                    duration.to_owned(),
                    "negative delay".into(),
                ));
            }
            // robfig: less than a second becomes a second; otherwise whole seconds.
            let seconds = delay.whole_seconds().max(1);
            return Ok(Kind::Every(SignedDuration::from_secs(seconds)));
        }
    };
    Ok(Kind::Fields(parse_fields(fields)?))
}

fn parse_fields(text: &str) -> Result<Fields, ScheduleError> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [minute, hour, dom, month, dow] = parts[..] else {
        return Err(ScheduleError::FieldCount(parts.len(), text.to_owned()));
    };
    let (minutes, _) = parse_field(minute, &MINUTE)?;
    let (hours, _) = parse_field(hour, &HOUR)?;
    let (days_of_month, dom_star) = parse_field(dom, &DAY_OF_MONTH)?;
    let (months, _) = parse_field(month, &MONTH)?;
    let (days_of_week, dow_star) = parse_field(dow, &DAY_OF_WEEK)?;
    Ok(Fields {
        minutes,
        hours,
        days_of_month,
        months,
        days_of_week,
        dom_star,
        dow_star,
    })
}

/// A field's bit set, and whether it was a bare `*`/`?` (a star with a step is not one).
fn parse_field(text: &str, bounds: &Bounds) -> Result<(u64, bool), ScheduleError> {
    let error = |reason: String| ScheduleError::Field {
        field: bounds.name,
        text: text.to_owned(),
        reason,
    };
    let mut bits = 0u64;
    let mut star = false;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| error(format!("invalid step {step:?}")))?;
                if step == 0 {
                    return Err(error("step must be positive".into()));
                }
                (range, Some(step))
            }
            None => (part, None),
        };
        let (low, high) = if range == "*" || range == "?" {
            // A star stepped by more than one is a list, not a star (robfig's rule).
            if step.is_none_or(|s| s == 1) {
                star = true;
            }
            (bounds.min, bounds.max)
        } else if let Some((low, high)) = range.split_once('-') {
            (value(low, bounds, &error)?, value(high, bounds, &error)?)
        } else {
            let low = value(range, bounds, &error)?;
            // `a/step` runs from a to the maximum.
            (low, if step.is_some() { bounds.max } else { low })
        };
        if low > high {
            return Err(error(format!("{low} is after {high}")));
        }
        let step = step.unwrap_or(1);
        let mut v = low;
        while v <= high {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

fn value(
    text: &str,
    bounds: &Bounds,
    error: &dyn Fn(String) -> ScheduleError,
) -> Result<u32, ScheduleError> {
    let lower = text.to_ascii_lowercase();
    let v = match bounds.names.iter().position(|n| *n == lower) {
        Some(i) => u32::try_from(i).unwrap_or(0) + bounds.min,
        None => text
            .parse()
            .map_err(|_| error(format!("invalid value {text:?}")))?,
    };
    if v < bounds.min || v > bounds.max {
        return Err(error(format!(
            "{v} is outside {}-{}",
            bounds.min, bounds.max
        )));
    }
    Ok(v)
}

fn has(bits: u64, v: impl Into<i64>) -> bool {
    u32::try_from(v.into()).is_ok_and(|v| v < 64 && bits & (1 << v) != 0)
}

impl Fields {
    fn day_matches(&self, date: Date) -> bool {
        let dom = has(self.days_of_month, date.day());
        let dow = has(self.days_of_week, date.weekday().to_sunday_zero_offset());
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    fn next(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let local = after.to_zoned(zone.clone()).datetime();
        let first_day = local.date();
        let last_day = first_day
            .checked_add(jiff::Span::new().years(SEARCH_YEARS))
            .ok()?;
        let mut day = first_day;
        while day <= last_day {
            if has(self.months, day.month())
                && self.day_matches(day)
                && let Some(t) = self.first_in_day(day, after, zone)
            {
                return Some(t);
            }
            day = day.tomorrow().ok()?;
        }
        None
    }

    /// The first matching minute of `day` (local) that is after `after`.
    fn first_in_day(&self, day: Date, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        for hour in 0..24i8 {
            if !has(self.hours, hour) {
                continue;
            }
            for minute in 0..60i8 {
                if !has(self.minutes, minute) {
                    continue;
                }
                let civil = DateTime::from_parts(day, Time::new(hour, minute, 0, 0).ok()?);
                // A local time skipped by a DST change fires at the same wall-clock offset
                // after it; a repeated one fires at its first occurrence.
                let Ok(zoned) = zone.to_ambiguous_zoned(civil).compatible() else {
                    continue;
                };
                let t = zoned.timestamp();
                if t > after {
                    return Some(t);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn next(schedule: &str, after: &str) -> Option<String> {
        Schedule::parse(schedule)
            .unwrap()
            .next(at(after), &TimeZone::UTC)
            .map(|t| t.to_string())
    }

    #[test]
    fn next_is_strictly_after_and_to_the_minute() {
        assert_eq!(
            next("0 6 * * *", "2024-03-01T05:59:59Z").unwrap(),
            "2024-03-01T06:00:00Z"
        );
        assert_eq!(
            next("0 6 * * *", "2024-03-01T06:00:00Z").unwrap(),
            "2024-03-02T06:00:00Z"
        );
        assert_eq!(
            next("*/15 * * * *", "2024-03-01T06:00:30Z").unwrap(),
            "2024-03-01T06:15:00Z"
        );
        assert_eq!(
            next("0 6 ? * *", "2024-03-01T07:00:00Z").unwrap(),
            "2024-03-02T06:00:00Z"
        );
    }

    #[test]
    fn lists_ranges_steps_and_names() {
        // Weekdays at 09:30: Friday 2024-03-01, then Monday.
        assert_eq!(
            next("30 9 * * MON-FRI", "2024-03-01T10:00:00Z").unwrap(),
            "2024-03-04T09:30:00Z"
        );
        assert_eq!(
            next("0 0 1 jan,jul *", "2024-03-01T00:00:00Z").unwrap(),
            "2024-07-01T00:00:00Z"
        );
        assert_eq!(
            next("5/20 * * * *", "2024-03-01T00:06:00Z").unwrap(),
            "2024-03-01T00:25:00Z"
        );
        assert_eq!(
            next("0 8-18/5 * * *", "2024-03-01T09:00:00Z").unwrap(),
            "2024-03-01T13:00:00Z"
        );
    }

    #[test]
    fn day_of_month_and_day_of_week_match_either_unless_one_is_a_star() {
        // The 13th, or any Friday: Friday 2024-03-08 comes before the 13th.
        assert_eq!(
            next("0 0 13 * 5", "2024-03-02T00:00:00Z").unwrap(),
            "2024-03-08T00:00:00Z"
        );
        // Any day of the month, Fridays only.
        assert_eq!(
            next("0 0 * * 5", "2024-03-02T00:00:00Z").unwrap(),
            "2024-03-08T00:00:00Z"
        );
        // A stepped star is not a star: the 1st, 3rd... or a Friday.
        assert_eq!(
            next("0 0 */2 * 5", "2024-03-01T12:00:00Z").unwrap(),
            "2024-03-03T00:00:00Z"
        );
    }

    #[test]
    fn descriptors_every_and_impossible_dates() {
        assert_eq!(
            next("@daily", "2024-03-01T12:00:00Z").unwrap(),
            "2024-03-02T00:00:00Z"
        );
        assert_eq!(
            next("@weekly", "2024-03-01T12:00:00Z").unwrap(),
            "2024-03-03T00:00:00Z"
        );
        assert_eq!(
            next("@hourly", "2024-03-01T12:00:00Z").unwrap(),
            "2024-03-01T13:00:00Z"
        );
        assert_eq!(
            next("@yearly", "2024-03-01T12:00:00Z").unwrap(),
            "2025-01-01T00:00:00Z"
        );
        assert_eq!(
            next("@every 90s", "2024-03-01T12:00:00.5Z").unwrap(),
            "2024-03-01T12:01:30Z"
        );
        assert_eq!(
            next("@every 1h30m", "2024-03-01T12:00:00Z").unwrap(),
            "2024-03-01T13:30:00Z"
        );
        assert_eq!(next("0 0 30 2 *", "2024-03-01T00:00:00Z"), None);
    }

    #[test]
    fn a_time_zone_prefix_or_the_window_zone_decides_the_wall_clock() {
        // 06:00 in Shanghai (UTC+8) is 22:00 UTC the day before.
        assert_eq!(
            next("CRON_TZ=Asia/Shanghai 0 6 * * *", "2024-03-01T00:00:00Z").unwrap(),
            "2024-03-01T22:00:00Z"
        );
        let shanghai = TimeZone::get("Asia/Shanghai").unwrap();
        let t = Schedule::parse("0 6 * * *")
            .unwrap()
            .next(at("2024-03-01T00:00:00Z"), &shanghai)
            .unwrap();
        assert_eq!(t.to_string(), "2024-03-01T22:00:00Z");
        // Berlin springs forward at 02:00 on 2024-03-31: 02:30 does not exist that day.
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let t = Schedule::parse("30 2 * * *")
            .unwrap()
            .next(at("2024-03-30T12:00:00Z"), &berlin)
            .unwrap();
        assert_eq!(t.to_string(), "2024-03-31T01:30:00Z");
    }

    #[test]
    fn bad_schedules_say_what_is_wrong() {
        let err = |s: &str| Schedule::parse(s).unwrap_err().to_string();
        assert_eq!(err(""), "empty schedule");
        assert!(err("0 6 * *").starts_with("expected 5 fields"));
        assert!(
            err("0 6 * * * *").starts_with("expected 5 fields"),
            "seconds are not taken"
        );
        assert_eq!(err("60 6 * * *"), "minute: 60 is outside 0-59 in \"60\"");
        assert_eq!(err("0 6 * * 7"), "day of week: 7 is outside 0-6 in \"7\"");
        assert_eq!(
            err("0 6 * FOO *"),
            "month: invalid value \"FOO\" in \"FOO\""
        );
        assert_eq!(err("0 9-6 * * *"), "hour: 9 is after 6 in \"9-6\"");
        assert_eq!(
            err("*/0 * * * *"),
            "minute: step must be positive in \"*/0\""
        );
        assert!(err("@fortnightly").starts_with("unknown descriptor"));
        assert!(err("@every 5x").starts_with("@every"));
        assert_eq!(
            err("TZ=Mars/Olympus 0 6 * * *"),
            "unknown time zone \"Mars/Olympus\""
        );
    }
}
