//! Leader election between craned replicas: a standby waits while the leader holds the Lease
//! and takes over when the leader releases it (SIGTERM); a leader killed without releasing
//! it is replaced once the Lease expires (15 s); rounds are written once, by the leader.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ferrocrane_e2e::craned::*;
use ferrocrane_e2e::{ServiceProcess, wait_until};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;

use crate::bed::Bed;

fn holder(lease: &Lease) -> String {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default()
}

/// Waits until the Lease is held by someone other than `previous`; the new holder.
async fn new_holder(
    leases: &Api<Lease>,
    previous: &str,
    what: &str,
    timeout: Duration,
) -> Result<String> {
    wait_until(what, timeout, || async {
        let h = holder(&leases.get("craned").await?);
        Ok((!h.is_empty() && h != previous).then_some(h))
    })
    .await
}

/// Another replica of the bed's craned, started and ready.
async fn replica(bed: &Bed) -> Result<ServiceProcess> {
    bed.launch.replica()?.start().await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standby_takes_over_a_released_lease_and_a_killed_leaders_after_it_expires() -> Result<()>
{
    let mut bed = Bed::start("craned-leader", "0.15").await?;
    wait_ready_recommendation(&bed.recs, &mut bed.craned, "web", Duration::from_secs(90)).await?;
    let leases: Api<Lease> = Api::namespaced(bed.client.clone(), &bed.ns.name);
    let first_holder = holder(&leases.get("craned").await?);
    assert!(!first_holder.is_empty());

    // The standby waits while the leader holds the Lease: give it a round's worth of time
    // (a round, triggered now, is run by the leader alone), then check it never led.
    let standby = replica(&bed).await?;
    bed.next_round("while-standby-waits", "a round while the standby waits")
        .await?;
    assert_eq!(holder(&leases.get("craned").await?), first_holder);
    assert!(
        !standby.logs().contains("became leader"),
        "{}",
        standby.logs()
    );

    // The leader stops (SIGTERM releases the Lease): the standby takes it.
    bed.craned.signal("TERM")?;
    bed.craned.wait_exit(Duration::from_secs(30)).await?;
    let second_holder = new_holder(
        &leases,
        &first_holder,
        "the standby takes the lease",
        Duration::from_secs(30),
    )
    .await
    .with_context(|| format!("standby log:\n{}", standby.logs()))?;
    // The lease is written before the line is logged: wait for the line, do not race it.
    wait_until(
        "the standby logs that it became leader",
        Duration::from_secs(10),
        || {
            let logged = standby.logs().contains("became leader");
            async move { Ok(logged.then_some(())) }
        },
    )
    .await
    .with_context(|| {
        format!(
            "lease holder {second_holder}; standby log:\n{}",
            standby.logs()
        )
    })?;
    bed.next_round("standby", "a round by the new leader")
        .await
        .with_context(|| format!("standby log:\n{}", standby.logs()))?;

    // The leader is killed (no chance to release the Lease): a third replica takes over once
    // the Lease expires, and the next round is written once, by it.
    let mut third = replica(&bed).await?;
    standby.signal("KILL")?;
    let killed_at = Instant::now();
    let taken = new_holder(
        &leases,
        &second_holder,
        "the third replica takes the lease of the killed leader",
        Duration::from_secs(40),
    )
    .await
    .with_context(|| format!("third replica log:\n{}", third.logs()))?;
    let takeover = killed_at.elapsed();
    eprintln!("leader killed: {taken} took the lease after {takeover:?}");
    assert!(
        takeover <= Duration::from_secs(15 + 2 + 5),
        "the takeover took {takeover:?}, more than the 15 s lease and a 2 s retry (+5 s slack)"
    );
    bed.next_round("third", "a round by the replica that took over")
        .await
        .with_context(|| format!("third replica log:\n{}", third.logs()))?;
    let web_recs = recommendations_of(&bed.recs, "web").await?;
    assert_eq!(
        web_recs.len(),
        1,
        "one Recommendation for web after three leaders: {:#?}",
        web_recs
            .iter()
            .map(|r| &r.metadata.name)
            .collect::<Vec<_>>()
    );
    third.ensure_running()
}
