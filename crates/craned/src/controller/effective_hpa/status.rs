//! An EHPA's status (pure): the HPA's wanted and current replicas and its conditions, the
//! EHPA's own `Ready` and `PredictionReady`; a condition's transition time moves only when
//! its status does (Crane moves it on every reconcile, so every reconcile writes).

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::crd::autoscaling::{EffectiveHorizontalPodAutoscalerStatus, ReplicasSource, conditions};

/// Crane's reason of a working EHPA.
pub const READY_REASON: &str = "EffectiveHorizontalPodAutoscalerReady";

/// A condition to set: (type, True/False, reason, message).
pub struct Set<'a> {
    pub type_: &'a str,
    pub ok: bool,
    pub reason: &'a str,
    pub message: String,
}

/// What a reconcile found, to build the status from.
pub struct Found<'a> {
    /// The HPA's status, when there is an HPA.
    pub hpa: Option<&'a HorizontalPodAutoscalerStatus>,
    /// The workload's replicas, when known without the HPA.
    pub current_replicas: Option<i32>,
    /// When the EHPA scaled the workload itself (Preview's specificReplicas).
    pub last_scale: Option<Time>,
    /// What sets the replicas, once the HPA has evaluated its metrics.
    pub source: Option<ReplicasSource>,
}

/// The status after a reconcile: what it `found`, and the EHPA's own conditions `set`.
pub fn build(
    previous: Option<&EffectiveHorizontalPodAutoscalerStatus>,
    found: Found<'_>,
    set: &[Set<'_>],
    now: &Time,
) -> EffectiveHorizontalPodAutoscalerStatus {
    let Found {
        hpa,
        current_replicas,
        last_scale,
        source,
    } = found;
    let mut out: Vec<Condition> = Vec::new();
    for c in hpa
        .and_then(|h| h.conditions.as_ref())
        .into_iter()
        .flatten()
    {
        out.push(Condition {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c
                .reason
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| c.type_.clone()),
            message: c.message.clone().unwrap_or_default(),
            last_transition_time: c
                .last_transition_time
                .clone()
                .unwrap_or_else(|| now.clone()),
            observed_generation: None,
        });
    }
    for s in set {
        out.retain(|c| c.type_ != s.type_);
        out.push(Condition {
            type_: s.type_.to_owned(),
            status: if s.ok { "True" } else { "False" }.to_owned(),
            reason: s.reason.to_owned(),
            message: s.message.clone(),
            last_transition_time: now.clone(),
            observed_generation: None,
        });
    }
    // A condition that kept its status keeps its transition time.
    for c in &mut out {
        if let Some(before) = previous
            .into_iter()
            .flat_map(|p| &p.conditions)
            .find(|b| b.type_ == c.type_ && b.status == c.status)
        {
            c.last_transition_time = before.last_transition_time.clone();
        }
    }
    out.sort_by(|a, b| {
        order(&a.type_)
            .cmp(&order(&b.type_))
            .then(a.type_.cmp(&b.type_))
    });
    EffectiveHorizontalPodAutoscalerStatus {
        expect_replicas: hpa
            .map(|h| h.desired_replicas)
            .or(previous.and_then(|p| p.expect_replicas)),
        current_replicas: hpa.and_then(|h| h.current_replicas).or(current_replicas),
        last_scale_time: last_scale
            .or_else(|| hpa.and_then(|h| h.last_scale_time.clone()))
            .or_else(|| previous.and_then(|p| p.last_scale_time.clone())),
        conditions: out,
        replicas_source: source.or_else(|| previous.and_then(|p| p.replicas_source.clone())),
    }
}

/// Ready first, then PredictionReady, then the HPA's.
fn order(type_: &str) -> u8 {
    match type_ {
        conditions::READY => 0,
        conditions::PREDICTION_READY => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition;

    fn time(s: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap())
    }

    fn hpa() -> HorizontalPodAutoscalerStatus {
        HorizontalPodAutoscalerStatus {
            desired_replicas: 4,
            current_replicas: Some(2),
            last_scale_time: Some(time(50)),
            conditions: Some(vec![HorizontalPodAutoscalerCondition {
                type_: "AbleToScale".into(),
                status: "True".into(),
                reason: Some("SucceededRescale".into()),
                message: Some("the HPA controller was able to update the target scale to 4".into()),
                last_transition_time: Some(time(50)),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn replicas_and_conditions_come_from_the_hpa_and_times_move_only_on_change() {
        let ready = || Set {
            type_: conditions::READY,
            ok: true,
            reason: READY_REASON,
            message: "Effective HPA is ready".into(),
        };
        let status = hpa();
        let found = || Found {
            hpa: Some(&status),
            current_replicas: None,
            last_scale: None,
            source: None,
        };
        let first = build(None, found(), &[ready()], &time(100));
        assert_eq!(
            (first.expect_replicas, first.current_replicas),
            (Some(4), Some(2))
        );
        assert_eq!(
            first.last_scale_time,
            Some(time(50)),
            "copied in Auto too (Crane never does)"
        );
        let types: Vec<&str> = first.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "AbleToScale"]);
        assert_eq!(first.conditions[0].last_transition_time, time(100));
        let again = build(Some(&first), found(), &[ready()], &time(200));
        assert_eq!(again, first);
        let failed = build(
            Some(&first),
            Found {
                hpa: None,
                current_replicas: Some(3),
                last_scale: None,
                source: None,
            },
            &[Set {
                type_: conditions::READY,
                ok: false,
                reason: "FailedGetScale",
                message: "no".into(),
            }],
            &time(300),
        );
        assert_eq!(failed.conditions[0].last_transition_time, time(300));
        assert_eq!(failed.expect_replicas, Some(4), "kept from before");
        assert_eq!(failed.current_replicas, Some(3));
    }
}
