//! The subset of `github.com/netresearch/go-cron` v0.15 that kube-state-metrics uses:
//! `ParseStandard` (5 fields or a descriptor, optional `TZ=`/`CRON_TZ=` prefix) and
//! `Schedule.Next`, computed with Go's `time` semantics (`time.Date` normalisation and
//! zone-gap resolution, `Truncate` on absolute time) so results match to the second.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use ferrocrane_core::duration::GoDuration;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::jiff::tz::TimeZone;

use crate::calendar::{civil_from_days, days_from_civil};

/// `time.Time{}.Unix()`: what Go reports for a schedule that never fires.
pub use crate::families::util::GO_ZERO_TIME_UNIX as GO_ZERO_UNIX;

const STAR_BIT: u64 = 1 << 63;
const MAX_SPEC_LENGTH: usize = 1024;
const SEARCH_YEARS: i64 = 5;

#[derive(Clone, Copy)]
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 7,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// A schedule's location: Go's `time.Local` (a CronJob without `timeZone`) or a zone.
/// kube-state-metrics' image has no local zone, so `Local` is UTC here.
#[derive(Clone)]
pub struct Zone(Option<TimeZone>);

impl Zone {
    fn offset(&self, unix: i64) -> i64 {
        match &self.0 {
            None => 0,
            Some(tz) => match Timestamp::from_second(unix) {
                Ok(ts) => i64::from(tz.to_offset(ts).seconds()),
                Err(_) => 0,
            },
        }
    }
}

pub enum Schedule {
    Spec {
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
        zone: Zone,
    },
    /// `@every <duration>`, in whole seconds.
    Every(i64),
    /// `@triggered`, `@manual`, `@none`: never fires.
    Triggered,
}

impl Schedule {
    /// `Schedule.Next(t)` as Unix seconds; `GO_ZERO_UNIX` when it never fires.
    pub fn next(&self, t: i64) -> i64 {
        match self {
            Schedule::Spec {
                minute,
                hour,
                dom,
                month,
                dow,
                zone,
            } => spec_next(*minute, *hour, *dom, *month, *dow, zone, t).unwrap_or(GO_ZERO_UNIX),
            Schedule::Every(secs) => t.saturating_add(*secs),
            Schedule::Triggered => GO_ZERO_UNIX,
        }
    }
}

/// kube-state-metrics' `parseSchedule`: `CRON_TZ=<zone> ` prepended when set.
pub fn parse_schedule(schedule: &str, time_zone: Option<&str>) -> Result<Schedule, ()> {
    match time_zone {
        Some(tz) => parse_standard(&format!("CRON_TZ={tz} {schedule}")),
        None => parse_standard(schedule),
    }
}

fn parse_standard(spec: &str) -> Result<Schedule, ()> {
    if spec.is_empty() || spec.len() > MAX_SPEC_LENGTH {
        return Err(());
    }
    let (zone, spec) = parse_timezone(spec)?;
    if spec.starts_with('@') {
        return parse_descriptor(spec, zone);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(());
    }
    // The seconds field defaults to "0"; the hash check also sees it.
    if fields
        .iter()
        .any(|f| f.split(',').any(|p| p.starts_with('H')))
    {
        return Err(());
    }
    let minute = get_field(fields[0], MINUTES)?;
    let hour = get_field(fields[1], HOURS)?;
    let month = get_field(fields[3], MONTHS)?;
    let upper = fields[2].to_uppercase();
    if upper.contains('L') || upper.contains('W') {
        return Err(());
    }
    let dom = get_field(fields[2], DOM)?;
    if fields[4].contains('#') {
        return Err(());
    }
    let dow = normalize_dow(get_field(fields[4], DOW)?);
    Ok(Schedule::Spec {
        minute,
        hour,
        dom,
        month,
        dow,
        zone,
    })
}

fn parse_timezone(spec: &str) -> Result<(Zone, &str), ()> {
    if !spec.starts_with("TZ=") && !spec.starts_with("CRON_TZ=") {
        return Ok((Zone(None), spec));
    }
    let space = spec.find(' ').ok_or(())?;
    let eq = spec.find('=').ok_or(())?;
    let mut name = spec.get(eq + 1..space).ok_or(())?;
    let b = name.as_bytes();
    if b.len() >= 2
        && ((b[0] == b'"' && b[b.len() - 1] == b'"') || (b[0] == b'\'' && b[b.len() - 1] == b'\''))
    {
        name = &name[1..name.len() - 1];
    }
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+' | ':'))
    {
        return Err(());
    }
    let zone = load_location(name)?;
    let rest = trim_go_space(&spec[space..]);
    if rest.is_empty() {
        return Err(());
    }
    Ok((zone, rest))
}

fn trim_go_space(s: &str) -> &str {
    s.trim_matches(char::is_whitespace)
}

/// `time.LoadLocation` against the system zoneinfo directories Go searches.
fn load_location(name: &str) -> Result<Zone, ()> {
    if name == "UTC" || name == "Local" {
        return Ok(Zone(None));
    }
    if name.starts_with('/') || name.starts_with('\\') || name.contains("..") {
        return Err(());
    }
    static CACHE: OnceLock<Mutex<HashMap<String, Option<TimeZone>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Ok(map) = cache.lock()
        && let Some(hit) = map.get(name)
    {
        return hit.clone().map(|tz| Zone(Some(tz))).ok_or(());
    }
    let loaded = [
        "/usr/share/zoneinfo/",
        "/usr/share/lib/zoneinfo/",
        "/usr/lib/locale/TZ/",
        "/etc/zoneinfo/",
    ]
    .iter()
    .find_map(|dir| {
        std::fs::read(format!("{dir}{name}"))
            .ok()
            .and_then(|data| TimeZone::tzif(name, &data).ok())
    });
    if let Ok(mut map) = cache.lock() {
        map.insert(name.to_string(), loaded.clone());
    }
    loaded.map(|tz| Zone(Some(tz))).ok_or(())
}

fn parse_descriptor(descriptor: &str, zone: Zone) -> Result<Schedule, ()> {
    let all_dow = normalize_dow(all(DOW));
    let spec = |hour, dom, month, dow| Schedule::Spec {
        minute: 1,
        hour,
        dom,
        month,
        dow,
        zone: zone.clone(),
    };
    match descriptor {
        "@yearly" | "@annually" => return Ok(spec(1, 1 << 1, 1 << 1, all_dow)),
        "@monthly" => return Ok(spec(1, 1 << 1, all(MONTHS), all_dow)),
        "@weekly" => return Ok(spec(1, all(DOM), all(MONTHS), 1)),
        "@daily" | "@midnight" => return Ok(spec(1, all(DOM), all(MONTHS), all_dow)),
        "@hourly" => return Ok(spec(all(HOURS), all(DOM), all(MONTHS), all_dow)),
        "@triggered" | "@manual" | "@none" => return Ok(Schedule::Triggered),
        _ => {}
    }
    let duration = descriptor.strip_prefix("@every ").ok_or(())?;
    let every = GoDuration::parse(duration).map_err(drop)?;
    if every.whole_seconds() < 1 {
        return Err(());
    }
    Ok(Schedule::Every(every.whole_seconds()))
}

fn normalize_dow(bits: u64) -> u64 {
    if bits & (1 << 7) != 0 {
        (bits | 1) & !(1 << 7)
    } else {
        bits
    }
}

fn bit(n: u64) -> u64 {
    // A shift of 64 or more is no bit (checked_shl refuses it), however large n is.
    1u64.checked_shl(u32::try_from(n).unwrap_or(u32::MAX))
        .unwrap_or(0)
}

fn all(r: Bounds) -> u64 {
    get_bits(r.min, r.max, 1) | STAR_BIT
}

fn get_field(field: &str, r: Bounds) -> Result<u64, ()> {
    let mut bits = 0;
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        bits |= get_range(expr, r)?;
    }
    Ok(bits)
}

/// `strconv.Atoi` then the non-negative check of go-cron's `mustParseInt`.
fn must_parse_int(expr: &str) -> Result<u64, ()> {
    let n: i64 = expr.parse().map_err(|_| ())?;
    u64::try_from(n).map_err(|_| ())
}

fn parse_int_or_name(expr: &str, names: &[(&str, u64)]) -> Result<u64, ()> {
    let lower = expr.to_lowercase();
    match names.iter().find(|(n, _)| *n == lower) {
        Some((_, v)) => Ok(*v),
        None => must_parse_int(expr),
    }
}

fn get_range(expr: &str, r: Bounds) -> Result<u64, ()> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (r.min, r.max, STAR_BIT)
    } else {
        let start = parse_int_or_name(low_and_high[0], r.names)?;
        match low_and_high.len() {
            1 => (start, start, 0),
            2 => (start, parse_int_or_name(low_and_high[1], r.names)?, 0),
            _ => return Err(()),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = r.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(()),
    };
    // validateRangeParams; every standard field allows wraparound. Go's uint
    // arithmetic wraps, so wrapping ops reproduce its accept/reject decisions.
    if start < r.min || end > r.max || step == 0 {
        return Err(());
    }
    let range_size = if start > end {
        (r.max.wrapping_sub(start).wrapping_add(1))
            .wrapping_add(end.wrapping_sub(r.min).wrapping_add(1))
    } else {
        end - start + 1
    };
    if step > 1 && step >= range_size {
        return Err(());
    }
    if start > end {
        let size = r.max - r.min + 1;
        let extended_end = end + size;
        let mut bits = 0;
        let mut i = start;
        while i <= extended_end {
            let val = if i > r.max {
                (i - r.min) % size + r.min
            } else {
                i
            };
            bits |= bit(val);
            match i.checked_add(step) {
                Some(n) => i = n,
                None => break,
            }
        }
        return Ok(bits | extra);
    }
    Ok(get_bits(start, end, step) | extra)
}

fn get_bits(low: u64, high: u64, step: u64) -> u64 {
    if step == 1 {
        // Out-of-range bounds shift everything out (checked_shl refuses >= 64), as in Go.
        let shift = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        return !(u64::MAX
            .checked_shl(shift(high.saturating_add(1)))
            .unwrap_or(0))
            & u64::MAX.checked_shl(shift(low)).unwrap_or(0);
    }
    let mut bits = 0;
    let mut i = low;
    while i <= high {
        bits |= bit(i);
        match i.checked_add(step) {
            Some(n) => i = n,
            None => break,
        }
    }
    bits
}

// ---- Go `time` semantics on Unix seconds in one zone ----

struct Civil {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    weekday: i64,
}

fn civil(t: i64, zone: &Zone) -> Civil {
    let local = t + zone.offset(t);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: secs / 3600,
        minute: secs % 3600 / 60,
        second: secs % 60,
        weekday: (days + 4).rem_euclid(7),
    }
}

/// `time.Date(y, m, d, h, mi, s, 0, zone)`, including its normalisation of
/// out-of-range values and its choice of offset in gaps and overlaps.
fn date(y: i64, m: i64, d: i64, h: i64, mi: i64, s: i64, zone: &Zone) -> i64 {
    let m0 = m - 1;
    let (y, m) = (y + m0.div_euclid(12), m0.rem_euclid(12) + 1);
    let local = (days_from_civil(y, m, 1) + d - 1) * 86_400 + h * 3600 + mi * 60 + s;
    let guess = zone.offset(local);
    if guess == 0 {
        return local;
    }
    local - zone.offset(local - guess)
}

fn add_date(t: i64, months: i64, days: i64, zone: &Zone) -> i64 {
    let c = civil(t, zone);
    date(
        c.year,
        c.month + months,
        c.day + days,
        c.hour,
        c.minute,
        c.second,
        zone,
    )
}

fn matches(value: i64, bits: u64) -> bool {
    bit(value as u64) & bits != 0
}

/// `SpecSchedule.Next` (seconds always 0, any year, day-of-month AND day-of-week).
fn spec_next(
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    zone: &Zone,
    t: i64,
) -> Option<i64> {
    // A field no value can match never fires: Go searches five years, then gives up.
    if minute & all(MINUTES) & !STAR_BIT == 0
        || hour & all(HOURS) & !STAR_BIT == 0
        || dom & all(DOM) & !STAR_BIT == 0
        || month & all(MONTHS) & !STAR_BIT == 0
        || dow & all(DOW) & !STAR_BIT == 0
    {
        return None;
    }
    let mut t = t.checked_add(1)?;
    let mut added = false;
    let year_limit = civil(t, zone).year + SEARCH_YEARS;
    'wrap: loop {
        if civil(t, zone).year > year_limit {
            return None;
        }
        loop {
            let c = civil(t, zone);
            if matches(c.month, month) {
                break;
            }
            if !added {
                added = true;
                t = date(c.year, c.month, 1, 0, 0, 0, zone);
            }
            t = add_date(t, 1, 0, zone);
            if civil(t, zone).month == 1 {
                continue 'wrap;
            }
        }
        loop {
            let c = civil(t, zone);
            if matches(c.day, dom) && matches(c.weekday, dow) {
                break;
            }
            if !added {
                added = true;
                t = date(c.year, c.month, c.day, 0, 0, 0, zone);
            }
            t = add_date(t, 0, 1, zone);
            // normalizeDSTDay
            let h = civil(t, zone).hour;
            if h > 12 {
                t += (24 - h) * 3600;
            } else if h != 0 {
                t -= h * 3600;
            }
            if civil(t, zone).day == 1 {
                continue 'wrap;
            }
        }
        loop {
            let c = civil(t, zone);
            if matches(c.hour, hour) {
                break;
            }
            if !added {
                added = true;
                t = date(c.year, c.month, c.day, c.hour, 0, 0, zone);
            }
            let prev_hour = civil(t, zone).hour;
            t += 3600;
            let cur_hour = civil(t, zone).hour;
            if cur_hour - prev_hour == 2 && matches(cur_hour - 1, hour) {
                break;
            }
            if cur_hour == 0 {
                continue 'wrap;
            }
        }
        while !matches(civil(t, zone).minute, minute) {
            if !added {
                added = true;
                t -= t.rem_euclid(60);
            }
            t += 60;
            if civil(t, zone).minute == 0 {
                continue 'wrap;
            }
        }
        // Go discards advanceSecond's `added`; times are whole seconds, so its
        // Truncate(time.Second) changes nothing either.
        while !matches(civil(t, zone).second, 1) {
            t += 1;
            if civil(t, zone).second == 0 {
                continue 'wrap;
            }
        }
        return Some(t);
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
