//! Leader election with a `coordination.k8s.io/v1` Lease (the lock controller-runtime uses; the
//! name is Crane's `craned`), so two replicas never both write.
//!
//! kube-runtime has no leader election, so this is a small loop in client-go's shape: every
//! retry period a candidate reads the Lease; it takes it when free or expired (renewTime +
//! leaseDurationSeconds in the past), the holder renews it. Updates carry the resourceVersion
//! read, so two candidates racing for an expired Lease cannot both win. A leader that could
//! not renew within the renew deadline stops being leader *before* its Lease expires for the
//! others (renew deadline < lease duration), so there is never a moment with two writers.
//! Writers check [`LeaderState::is_leader`] right before each write.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(test)]
use std::time::Duration;
use std::time::Instant;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;

use crate::options::LeaseSettings;

/// The Lease name (Crane's `LeaderElectionID`).
pub const LEASE_NAME: &str = "craned";

/// Whether this replica may write. Cheap to clone and to check.
#[derive(Debug, Clone)]
pub struct LeaderState {
    flag: Arc<AtomicBool>,
    changes: watch::Receiver<bool>,
}

impl LeaderState {
    /// Always leader (leader election off).
    pub fn always() -> Self {
        let (tx, rx) = watch::channel(true);
        drop(tx);
        LeaderState {
            flag: Arc::new(AtomicBool::new(true)),
            changes: rx,
        }
    }

    pub fn is_leader(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Waits until this replica leads.
    pub async fn wait_leader(&self) {
        let mut rx = self.changes.clone();
        let _ = rx.wait_for(|l| *l).await;
    }

    /// A stream that yields each time leadership changes (a controller reconciles everything
    /// then, so a new leader picks up at once).
    pub fn changes(self) -> impl futures::Stream<Item = ()> + Send + 'static {
        futures::stream::unfold(self, |mut l| async move {
            l.changed().await?;
            Some(((), l))
        })
    }

    /// Resolves when leadership changes, with the new state; `None` once it can no longer
    /// change (leader election off).
    pub async fn changed(&mut self) -> Option<bool> {
        self.changes.changed().await.ok()?;
        Some(*self.changes.borrow_and_update())
    }
}

/// What the candidate should do with the Lease it read (pure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// We hold it: renew.
    Renew,
    /// Free or expired: take it.
    Acquire,
    /// Someone else holds a live Lease.
    Follow,
}

pub fn decide(spec: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Acquire;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == identity {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::Acquire;
    }
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(15).max(1));
    let renewed = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .map(|t| t.0);
    match renewed {
        Some(r) if now.as_second() - r.as_second() <= duration => Decision::Follow,
        _ => Decision::Acquire,
    }
}

fn spec_for(
    identity: &str,
    settings: &LeaseSettings,
    acquired: Option<&LeaseSpec>,
    now: Timestamp,
) -> LeaseSpec {
    let keep = acquired.filter(|s| s.holder_identity.as_deref() == Some(identity));
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(
            i32::try_from(settings.duration.as_secs().max(1)).unwrap_or(i32::MAX),
        ),
        acquire_time: Some(
            keep.and_then(|s| s.acquire_time.clone())
                .unwrap_or(MicroTime(now)),
        ),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(match (acquired, keep) {
            (Some(s), None) => s.lease_transitions.unwrap_or(0) + 1,
            (Some(s), Some(_)) => s.lease_transitions.unwrap_or(0),
            (None, _) => 0,
        }),
        ..Default::default()
    }
}

/// One attempt: read, decide, write. Ok(true) when we hold the Lease afterwards.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    identity: &str,
    settings: &LeaseSettings,
) -> Result<bool, kube::Error> {
    let now = Timestamp::now();
    let current = api.get_opt(LEASE_NAME).await?;
    match current {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(LEASE_NAME.into()),
                    ..Default::default()
                },
                spec: Some(spec_for(identity, settings, None, now)),
            };
            api.create(&PostParams::default(), &lease).await?;
            Ok(true)
        }
        Some(mut lease) => match decide(lease.spec.as_ref(), identity, now) {
            Decision::Follow => Ok(false),
            Decision::Renew | Decision::Acquire => {
                lease.spec = Some(spec_for(identity, settings, lease.spec.as_ref(), now));
                // `replace` sends the resourceVersion read: a concurrent writer makes it 409.
                api.replace(LEASE_NAME, &PostParams::default(), &lease)
                    .await?;
                Ok(true)
            }
        },
    }
}

/// Gives the Lease up (holder cleared, 1 s duration) so a successor need not wait for it to
/// expire, as controller-runtime's `ReleaseOnCancel` does.
async fn release(api: &Api<Lease>, identity: &str) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(LEASE_NAME).await? else {
        return Ok(());
    };
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(());
    };
    if spec.holder_identity.as_deref() != Some(identity) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    api.replace(LEASE_NAME, &PostParams::default(), &lease)
        .await?;
    Ok(())
}

/// Starts the election loop; the returned state flips as leadership is gained and lost. When
/// `stop` completes, writing stops and the Lease is released.
pub fn spawn(
    client: Client,
    namespace: &str,
    identity: String,
    settings: LeaseSettings,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> LeaderState {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    let flag = Arc::new(AtomicBool::new(false));
    let (tx, rx) = watch::channel(false);
    let state = LeaderState {
        flag: flag.clone(),
        changes: rx,
    };
    tokio::spawn(async move {
        let mut last_renew: Option<Instant> = None;
        let mut stop = std::pin::pin!(stop);
        loop {
            match try_acquire_or_renew(&api, &identity, &settings).await {
                Ok(true) => last_renew = Some(Instant::now()),
                // Someone else holds a live Lease: stop at once.
                Ok(false) => last_renew = None,
                // The API server is unreachable or we lost a race: keep leading until the
                // renew deadline, which expires before the Lease does for the others.
                Err(e) => tracing::warn!(error = %e, "leader election: lease update failed"),
            }
            let leading = last_renew.is_some_and(|t| t.elapsed() < settings.renew_deadline);
            if leading != flag.load(Ordering::Acquire) {
                flag.store(leading, Ordering::Release);
                let _ = tx.send(leading);
                if leading {
                    tracing::info!(%identity, "became leader");
                } else {
                    tracing::warn!(%identity, "lost leadership; stopped writing");
                }
            }
            if tx.is_closed() {
                return;
            }
            tokio::select! {
                () = &mut stop => {
                    flag.store(false, Ordering::Release);
                    let _ = tx.send(false);
                    if last_renew.is_some() {
                        match release(&api, &identity).await {
                            Ok(()) => tracing::info!(%identity, "released the lease"),
                            Err(e) => tracing::warn!(error = %e, "releasing the lease failed"),
                        }
                    }
                    return;
                }
                () = tokio::time::sleep(settings.retry_period) => {}
            }
        }
    });
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn lease(holder: &str, renewed: &str) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(ts(renewed))),
            ..Default::default()
        }
    }

    #[test]
    fn decisions() {
        let now = ts("2024-01-01T00:00:20Z");
        assert_eq!(decide(None, "a", now), Decision::Acquire);
        assert_eq!(
            decide(Some(&lease("a", "2024-01-01T00:00:00Z")), "a", now),
            Decision::Renew
        );
        assert_eq!(
            decide(Some(&lease("b", "2024-01-01T00:00:10Z")), "a", now),
            Decision::Follow
        );
        assert_eq!(
            decide(Some(&lease("b", "2024-01-01T00:00:00Z")), "a", now),
            Decision::Acquire
        );
        assert_eq!(
            decide(Some(&lease("", "2024-01-01T00:00:19Z")), "a", now),
            Decision::Acquire
        );
    }

    #[test]
    fn transitions_count_holder_changes() {
        let s = LeaseSettings {
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        };
        let now = ts("2024-01-01T00:00:20Z");
        let mut old = lease("b", "2024-01-01T00:00:00Z");
        old.lease_transitions = Some(3);
        let taken = spec_for("a", &s, Some(&old), now);
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        let renewed = spec_for("a", &s, Some(&taken), ts("2024-01-01T00:00:22Z"));
        assert_eq!(renewed.lease_transitions, Some(4));
        assert_eq!(renewed.acquire_time, Some(MicroTime(now)));
        assert_eq!(renewed.lease_duration_seconds, Some(15));
    }
}
