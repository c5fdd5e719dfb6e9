//! An EHPA's cron windows, and the replicas they ask for at an instant.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::schedule::{Schedule, ScheduleError};
use crate::crd::autoscaling::CronSpec;

/// Why a cron of an EHPA cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("cron {name:?}: {field} is empty")]
    Missing { name: String, field: &'static str },
    #[error("cron {name:?}: {field} {text:?}: {source}")]
    Schedule {
        name: String,
        field: &'static str,
        text: String,
        source: Box<ScheduleError>,
    },
    #[error("cron {name:?}: unknown time zone {zone:?}")]
    TimeZone { name: String, zone: String },
}

/// The time zone of crons that name none: the process's own (`TZ`, else `/etc/localtime`,
/// else UTC), as Crane's processes use theirs. A container without `TZ` therefore reads
/// crons in UTC, the zone Crane's API documents.
#[derive(Debug, Clone)]
pub struct DefaultZone(pub TimeZone);

impl DefaultZone {
    pub fn system() -> DefaultZone {
        DefaultZone(TimeZone::system())
    }

    pub fn utc() -> DefaultZone {
        DefaultZone(TimeZone::UTC)
    }
}

/// A parsed cron of an EHPA: open from each `start` until the next `end`.
#[derive(Debug, Clone)]
pub struct CronWindow {
    pub name: String,
    start: Schedule,
    end: Schedule,
    zone: TimeZone,
    pub target_replicas: i32,
}

impl CronWindow {
    pub fn parse(spec: &CronSpec, default: &DefaultZone) -> Result<CronWindow, CronError> {
        let name = spec.name.clone();
        let schedule = |field: &'static str, text: &str| {
            if text.trim().is_empty() {
                return Err(CronError::Missing {
                    name: name.clone(),
                    field,
                });
            }
            Schedule::parse(text).map_err(|source| CronError::Schedule {
                name: name.clone(),
                field,
                text: text.to_owned(),
                source: Box::new(source),
            })
        };
        let start = schedule("start", &spec.start)?;
        let end = schedule("end", &spec.end)?;
        let zone = match spec.timezone.as_deref() {
            // Go's LoadLocation: "" and "UTC" are UTC, "Local" the process's zone.
            None => default.0.clone(),
            Some("") | Some("UTC") => TimeZone::UTC,
            Some("Local") => default.0.clone(),
            Some(zone) => TimeZone::get(zone).map_err(|_| CronError::TimeZone {
                name: name.clone(),
                zone: zone.to_owned(),
            })?,
        };
        Ok(CronWindow {
            name,
            start,
            end,
            zone,
            target_replicas: spec.target_replicas,
        })
    }

    /// Open when the next end comes no later than the next start (both strictly after
    /// `now`): `[start, end)` to the minute, overnight when start is after end, and always
    /// when both are the same schedule (the CRD refuses that). A window whose start or end
    /// never comes is closed.
    pub fn is_open(&self, now: Timestamp) -> bool {
        match (
            self.start.next(now, &self.zone),
            self.end.next(now, &self.zone),
        ) {
            (Some(next_start), Some(next_end)) => next_end <= next_start,
            _ => false,
        }
    }
}

/// The replicas an EHPA's crons ask for at `now`: the largest target of the open windows, or
/// `min_replicas` when none is open (not clamped to maxReplicas: the HPA does that). Every
/// cron must parse, as in Crane, so one bad cron is an error and not a silent minimum.
pub fn replicas_for(
    min_replicas: i32,
    crons: &[CronSpec],
    default: &DefaultZone,
    now: Timestamp,
) -> Result<i32, CronError> {
    let mut replicas = min_replicas;
    for spec in crons {
        let window = CronWindow::parse(spec, default)?;
        if window.is_open(now) && window.target_replicas >= replicas {
            replicas = window.target_replicas;
        }
    }
    Ok(replicas)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cron(name: &str, start: &str, end: &str, target: i32, zone: Option<&str>) -> CronSpec {
        CronSpec {
            name: name.into(),
            start: start.into(),
            end: end.into(),
            target_replicas: target,
            timezone: zone.map(Into::into),
            ..CronSpec::default()
        }
    }

    fn open(spec: &CronSpec, now: &str) -> bool {
        CronWindow::parse(spec, &DefaultZone::utc())
            .unwrap()
            .is_open(now.parse().unwrap())
    }

    #[test]
    fn a_window_is_open_from_start_until_end() {
        let day = cron("day", "0 9 * * *", "0 17 * * *", 5, None);
        assert!(!open(&day, "2024-03-01T08:59:59Z"));
        assert!(open(&day, "2024-03-01T09:00:00Z"));
        assert!(open(&day, "2024-03-01T16:59:59Z"));
        assert!(!open(&day, "2024-03-01T17:00:00Z"));
        // Overnight: start after end.
        let night = cron("night", "0 22 * * *", "0 6 * * *", 2, None);
        assert!(open(&night, "2024-03-01T23:00:00Z"));
        assert!(open(&night, "2024-03-02T05:59:00Z"));
        assert!(!open(&night, "2024-03-02T12:00:00Z"));
        // The same schedule twice: Crane's "always open" (the CRD refuses it).
        assert!(open(
            &cron("same", "0 9 * * *", "0 9 * * *", 2, None),
            "2024-03-01T12:00:00Z"
        ));
        // A start that never comes: closed (Crane would say open).
        assert!(!open(
            &cron("never", "0 0 30 2 *", "0 9 * * *", 2, None),
            "2024-03-01T12:00:00Z"
        ));
    }

    #[test]
    fn the_time_zone_moves_the_window() {
        let shanghai = cron("sh", "0 9 * * *", "0 17 * * *", 5, Some("Asia/Shanghai"));
        // 09:00-17:00 in Shanghai is 01:00-09:00 UTC.
        assert!(open(&shanghai, "2024-03-01T01:30:00Z"));
        assert!(!open(&shanghai, "2024-03-01T09:30:00Z"));
        let local = CronWindow::parse(
            &cron("local", "0 9 * * *", "0 17 * * *", 5, None),
            &DefaultZone(TimeZone::get("Asia/Shanghai").unwrap()),
        )
        .unwrap();
        assert!(local.is_open("2024-03-01T01:30:00Z".parse().unwrap()));
        assert!(open(
            &cron("utc", "0 9 * * *", "0 17 * * *", 5, Some("UTC")),
            "2024-03-01T09:30:00Z"
        ));
    }

    #[test]
    fn overlapping_windows_give_the_largest_target_and_none_gives_min() {
        let crons = [
            cron("morning", "0 8 * * *", "0 12 * * *", 4, None),
            cron("peak", "0 10 * * *", "0 11 * * *", 9, None),
            cron("small", "0 9 * * *", "0 13 * * *", 3, None),
        ];
        let at =
            |t: &str| replicas_for(2, &crons, &DefaultZone::utc(), t.parse().unwrap()).unwrap();
        assert_eq!(at("2024-03-01T07:00:00Z"), 2);
        assert_eq!(at("2024-03-01T08:30:00Z"), 4);
        assert_eq!(at("2024-03-01T10:30:00Z"), 9);
        assert_eq!(at("2024-03-01T12:30:00Z"), 3);
        // A target below minReplicas never lowers it.
        let low = [cron("low", "0 0 * * *", "59 23 * * *", 1, None)];
        assert_eq!(
            replicas_for(
                2,
                &low,
                &DefaultZone::utc(),
                "2024-03-01T12:00:00Z".parse().unwrap()
            )
            .unwrap(),
            2
        );
    }

    #[test]
    fn one_bad_cron_is_an_error_that_names_it() {
        let crons = [
            cron("ok", "0 8 * * *", "0 12 * * *", 4, None),
            cron("typo", "0 25 * * *", "0 12 * * *", 4, None),
        ];
        let err = replicas_for(1, &crons, &DefaultZone::utc(), Timestamp::UNIX_EPOCH).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cron \"typo\": start \"0 25 * * *\": hour: 25 is outside 0-23 in \"25\""
        );
        let zone = [cron(
            "tz",
            "0 8 * * *",
            "0 12 * * *",
            4,
            Some("Nowhere/Town"),
        )];
        assert!(replicas_for(1, &zone, &DefaultZone::utc(), Timestamp::UNIX_EPOCH).is_err());
        let empty = [cron("empty", "", "0 12 * * *", 4, None)];
        assert_eq!(
            replicas_for(1, &empty, &DefaultZone::utc(), Timestamp::UNIX_EPOCH)
                .unwrap_err()
                .to_string(),
            "cron \"empty\": start is empty"
        );
    }
}
