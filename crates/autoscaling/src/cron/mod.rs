//! Cron windows as Crane v0.11 evaluates them (its metric-adapter and collector, with robfig
//! cron's standard parser): a window opens at each `start` and closes at the next `end`; it is
//! open at `now` when the next end comes no later than the next start. Several open windows
//! ask for the largest target, and none asks for minReplicas.
//!
//! Schedules are five fields (minute, hour, day of month, month, day of week) with `*`, `?`,
//! lists, ranges, steps and names (`JAN`, `MON`), the descriptors `@yearly`, `@annually`,
//! `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly` and `@every <duration>`, and an
//! optional `TZ=` or `CRON_TZ=` prefix. "Next" is strictly after now, to the minute, in the
//! schedule's time zone.

mod schedule;
mod window;

pub use schedule::{Schedule, ScheduleError};
pub use window::{CronError, CronWindow, DefaultZone, replicas_for};
