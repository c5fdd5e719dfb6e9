//! Scheduling of rounds and the status a run leaves behind (pure).

use std::time::{Duration, SystemTime};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use crate::crd::{RecommendationStatus, actions, recommenders};
use crate::recommender::{Proposal, RecommendError};

/// The condition type Crane sets.
pub const READY: &str = "Ready";

/// What a rule should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Start a round.
    Run,
    /// The next round is due in this long.
    Wait(Duration),
    /// A run-once rule that has run: nothing until it changes or is triggered.
    Done,
}

/// `run_interval`: `None` for an empty runInterval (run once). Crane never runs a rule with an
/// empty interval (its `ParseDuration("")` fails); here it runs once, and again when triggered.
pub fn plan(
    run_interval: Option<Duration>,
    last_update: Option<Timestamp>,
    triggered: bool,
    now: Timestamp,
) -> Plan {
    if triggered {
        return Plan::Run;
    }
    let Some(last) = last_update else {
        return Plan::Run;
    };
    let Some(interval) = run_interval else {
        return Plan::Done;
    };
    let elapsed = now.duration_since(last);
    let elapsed = Duration::try_from(elapsed).unwrap_or_default();
    if elapsed >= interval {
        Plan::Run
    } else {
        Plan::Wait(interval - elapsed)
    }
}

/// Why a run produced no value, as the Ready condition's reason.
pub fn failure_reason(e: &RunError) -> &'static str {
    match e {
        RunError::Recommend(RecommendError::NotApplicable(_)) => "NotApplicable",
        RunError::Recommend(RecommendError::InsufficientData(_)) => "InsufficientData",
        RunError::Recommend(RecommendError::Config(_)) => "InvalidConfiguration",
        RunError::DataSource(_) => "PrometheusUnavailable",
        RunError::Target(_) => "TargetUnreadable",
        RunError::NotConfigured(_) => "RecommenderNotConfigured",
        RunError::Panicked(_) => "InternalError",
    }
}

/// A failed run of one recommender on one target.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Recommend(#[from] RecommendError),
    #[error("{0}")]
    DataSource(String),
    #[error("{0}")]
    Target(String),
    #[error("{0}")]
    NotConfigured(String),
    /// A bug met by this target's input: the round goes on with the other targets.
    #[error("the recommender panicked (a craned bug; please report it with this message): {0}")]
    Panicked(String),
}

/// A proposal counts as a result when it has a value — or, for the recommenders whose answer is
/// only an action (IdleNode, Service, Volume: "delete this"), an action and a description.
/// Crane marks Recommendations Ready with nothing in them (#566); craned does not.
pub fn has_result(recommender: &str, p: &Proposal) -> bool {
    if !p.recommended_value.trim().is_empty() {
        return true;
    }
    matches!(
        recommender,
        recommenders::IDLE_NODE | recommenders::SERVICE | recommenders::VOLUME
    ) && p.action == actions::DELETE
        && !p.description.is_empty()
}

fn set_condition(
    conditions: &mut Vec<Condition>,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let c = conditions.iter_mut().find(|c| c.type_ == READY);
    match c {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = Time(now);
            }
            c.status = status.into();
            c.reason = reason.into();
            c.message = message.into();
        }
        None => conditions.push(Condition {
            type_: READY.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(now),
            observed_generation: None,
        }),
    }
}

/// The status after a run. On failure the previous value is kept (a Prometheus outage must not
/// erase a good recommendation) and Ready turns False with the reason.
pub fn next_status(
    previous: Option<&RecommendationStatus>,
    recommender: &str,
    outcome: &Result<Proposal, RunError>,
    now: Timestamp,
) -> RecommendationStatus {
    let mut s = previous.cloned().unwrap_or_default();
    s.last_update_time = Some(Time(now));
    match outcome {
        Ok(p) if has_result(recommender, p) => {
            s.recommended_value = p.recommended_value.clone();
            s.recommended_info = p.recommended_info.clone();
            s.current_info = p.current_info.clone();
            s.action = p.action.to_string();
            s.description = p.description.clone();
            set_condition(
                &mut s.conditions,
                "True",
                "RecommendationReady",
                "Recommendation is ready",
                now,
            );
        }
        Ok(_) => set_condition(
            &mut s.conditions,
            "False",
            "EmptyRecommendation",
            "the recommender returned no value",
            now,
        ),
        Err(e) => {
            if matches!(e, RunError::Recommend(RecommendError::NotApplicable(_))) {
                // The target no longer qualifies: an old proposal would mislead.
                s.recommended_value.clear();
                s.recommended_info.clear();
                s.current_info.clear();
                s.action.clear();
                s.description = e.to_string();
            }
            set_condition(
                &mut s.conditions,
                "False",
                failure_reason(e),
                &e.to_string(),
                now,
            );
        }
    }
    s
}

/// The first retry of a Recommendation whose run failed because Prometheus was unavailable.
pub const RETRY_MIN: Duration = Duration::from_secs(30);
/// The longest wait between retries (the rule's own interval still applies when shorter).
pub const RETRY_MAX: Duration = Duration::from_secs(600);

/// When a Recommendation whose last run found Prometheus unavailable should run again, before
/// its rule's next round: `Some(ZERO)` now, `Some(d)` in `d`, `None` when it did not fail so
/// (Crane waits for the next round, a day by default, with the value stale and not Ready).
///
/// The wait doubles with each failed attempt without storing a count: it is the time the
/// Recommendation has already been failing (since Ready turned False), between 30 s and 10 min.
pub fn prometheus_retry_in(s: &RecommendationStatus, now: Timestamp) -> Option<Duration> {
    let ready = s.conditions.iter().find(|c| c.type_ == READY)?;
    if ready.status != "False"
        || ready.reason != failure_reason(&RunError::DataSource(String::new()))
    {
        return None;
    }
    let last_try = s.last_update_time.as_ref()?.0;
    let failing = Duration::try_from(last_try.duration_since(ready.last_transition_time.0))
        .unwrap_or_default();
    let wait = failing.clamp(RETRY_MIN, RETRY_MAX);
    let waited = Duration::try_from(now.duration_since(last_try)).unwrap_or_default();
    Some(wait.saturating_sub(waited))
}

/// Whether a status is Ready.
pub fn is_ready(s: &RecommendationStatus) -> bool {
    s.conditions
        .iter()
        .any(|c| c.type_ == READY && c.status == "True")
}

/// A Kubernetes timestamp as the clock type the metrics use (before 1970 reads as 1970).
pub fn to_system(t: Timestamp) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(t.as_second().max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn failed(first: &str, last_try: &str, reason: &str) -> RecommendationStatus {
        RecommendationStatus {
            last_update_time: Some(Time(ts(last_try))),
            conditions: vec![Condition {
                type_: READY.into(),
                status: "False".into(),
                reason: reason.into(),
                message: "connection refused".into(),
                last_transition_time: Time(ts(first)),
                observed_generation: None,
            }],
            ..RecommendationStatus::default()
        }
    }

    #[test]
    fn prometheus_failures_are_retried_with_a_doubling_wait() {
        let first = "2024-01-01T00:00:00Z";
        // Failed once just now: the first retry 30 s later.
        let s = failed(first, first, "PrometheusUnavailable");
        assert_eq!(
            prometheus_retry_in(&s, ts("2024-01-01T00:00:10Z")),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            prometheus_retry_in(&s, ts("2024-01-01T00:00:30Z")),
            Some(Duration::ZERO)
        );
        // Failing for 2 minutes at the last try: the next one 2 minutes after it.
        let s = failed(first, "2024-01-01T00:02:00Z", "PrometheusUnavailable");
        assert_eq!(
            prometheus_retry_in(&s, ts("2024-01-01T00:03:00Z")),
            Some(Duration::from_secs(60))
        );
        // Never more than 10 minutes apart.
        let s = failed(first, "2024-01-01T05:00:00Z", "PrometheusUnavailable");
        assert_eq!(
            prometheus_retry_in(&s, ts("2024-01-01T05:00:00Z")),
            Some(RETRY_MAX)
        );
        // Other failures wait for the round: the data will not appear by retrying.
        let s = failed(first, first, "InsufficientData");
        assert_eq!(prometheus_retry_in(&s, ts("2024-01-01T01:00:00Z")), None);
        assert_eq!(
            prometheus_retry_in(&RecommendationStatus::default(), ts(first)),
            None
        );
    }

    #[test]
    fn scheduling() {
        let now = ts("2024-01-01T01:00:00Z");
        let hour = Some(Duration::from_secs(3600));
        assert_eq!(plan(hour, None, false, now), Plan::Run);
        assert_eq!(
            plan(hour, Some(ts("2024-01-01T00:30:00Z")), false, now),
            Plan::Wait(Duration::from_secs(1800))
        );
        assert_eq!(
            plan(hour, Some(ts("2024-01-01T00:00:00Z")), false, now),
            Plan::Run
        );
        // Run once: runs when never run, then only when triggered.
        assert_eq!(plan(None, None, false, now), Plan::Run);
        assert_eq!(plan(None, Some(now), false, now), Plan::Done);
        assert_eq!(plan(None, Some(now), true, now), Plan::Run);
        assert_eq!(
            plan(hour, Some(ts("2024-01-01T00:59:00Z")), true, now),
            Plan::Run
        );
    }

    fn proposal(value: &str) -> Proposal {
        Proposal {
            recommended_value: value.into(),
            action: actions::PATCH,
            ..Default::default()
        }
    }

    #[test]
    fn never_ready_without_a_value() {
        let now = ts("2024-01-01T00:00:00Z");
        let s = next_status(None, "Resource", &Ok(proposal("")), now);
        assert!(!is_ready(&s));
        let s = next_status(None, "Resource", &Ok(proposal("x: 1\n")), now);
        assert!(is_ready(&s));
        assert_eq!(s.recommended_value, "x: 1\n");
        // Delete-only recommenders are ready with an action and a description.
        let del = Proposal {
            action: actions::DELETE,
            description: "It is an Orphan Volumes".into(),
            ..Default::default()
        };
        assert!(is_ready(&next_status(None, "Volume", &Ok(del), now)));
    }

    #[test]
    fn failures_keep_the_last_value_and_say_why() {
        let t0 = ts("2024-01-01T00:00:00Z");
        let t1 = ts("2024-01-01T01:00:00Z");
        let good = next_status(None, "Resource", &Ok(proposal("v\n")), t0);
        let failed = next_status(
            Some(&good),
            "Resource",
            &Err(RunError::DataSource(
                "prometheus: connection refused".into(),
            )),
            t1,
        );
        assert!(!is_ready(&failed));
        assert_eq!(failed.recommended_value, "v\n");
        let c = &failed.conditions[0];
        assert_eq!(c.reason, "PrometheusUnavailable");
        assert!(c.message.contains("connection refused"));
        assert_eq!(c.last_transition_time, Time(t1));
        let na = next_status(
            Some(&good),
            "Replicas",
            &Err(RecommendError::NotApplicable("too few pods".into()).into()),
            t1,
        );
        assert!(na.recommended_value.is_empty());
        assert_eq!(na.conditions[0].reason, "NotApplicable");
        // Back to Ready: transition time moves, a repeated Ready does not.
        let again = next_status(Some(&failed), "Resource", &Ok(proposal("v\n")), t1);
        let again2 = next_status(
            Some(&again),
            "Resource",
            &Ok(proposal("v\n")),
            ts("2024-01-01T02:00:00Z"),
        );
        assert_eq!(again2.conditions[0].last_transition_time, Time(t1));
    }
}
