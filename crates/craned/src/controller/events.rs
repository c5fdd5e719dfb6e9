//! Events every controller publishes: only while leading (a standby explains nothing it did
//! not do), with notes cut to what the API server accepts, and a lost Event logged, not fatal.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::FIELD_MANAGER;
use super::leader::LeaderState;

/// Publishes one controller's Events as `craned` (the reporting instance: this replica).
pub struct Events {
    recorder: Recorder,
    leader: LeaderState,
    /// The Event's `action`: what the controller was doing (`Recommend`, `Scale`...).
    action: &'static str,
}

impl Events {
    pub fn new(
        client: Client,
        identity: String,
        leader: LeaderState,
        action: &'static str,
    ) -> Events {
        Events {
            recorder: Recorder::new(
                client,
                Reporter {
                    controller: FIELD_MANAGER.into(),
                    instance: Some(identity),
                },
            ),
            leader,
            action,
        }
    }

    /// Publishes an Event about `regarding` while leading.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        if !self.leader.is_leader() {
            return;
        }
        let ev = Event {
            type_,
            reason: reason.into(),
            note: Some(truncate(&note, 1000)),
            action: self.action.into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, regarding).await {
            tracing::debug!(error = %e, "publishing an event failed");
        }
    }
}

/// The API server refuses Event notes over 1 kB.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_on_a_char_boundary() {
        let s = "é".repeat(600);
        let t = truncate(&s, 1000);
        assert!(t.len() <= 1003);
        assert!(t.ends_with('…'));
    }
}
