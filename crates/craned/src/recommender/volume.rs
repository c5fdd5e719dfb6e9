//! The Volume recommender: PersistentVolumes no pod uses.
//!
//! Crane: a PV is orphaned when no pod in its claim's namespace mounts its claim →
//! "It is an Orphan Volumes". Difference, on purpose: a PV without a claimRef is orphaned
//! (Crane dereferences the nil claimRef and panics).

use super::{Proposal, RecommendError};
use crate::crd::actions;

/// `claim`: the PV's claimRef name; `pod_claims`: the claim names mounted by pods of the
/// claim's namespace.
pub fn recommend<'a>(
    volume: &str,
    claim: Option<&str>,
    pod_claims: impl IntoIterator<Item = &'a str>,
) -> Result<Proposal, RecommendError> {
    if let Some(claim) = claim
        && pod_claims.into_iter().any(|c| c == claim)
    {
        return Err(RecommendError::NotApplicable(format!(
            "Volume {volume} is not an orphan volume"
        )));
    }
    Ok(Proposal {
        action: actions::DELETE,
        description: "It is an Orphan Volumes".into(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphan_when_no_pod_mounts_the_claim() {
        assert!(recommend("pv1", Some("data"), ["data", "logs"]).is_err());
        assert_eq!(
            recommend("pv1", Some("data"), ["logs"]).unwrap().action,
            "Delete"
        );
        assert_eq!(
            recommend("pv1", None, ["logs"]).unwrap().description,
            "It is an Orphan Volumes"
        );
    }
}
