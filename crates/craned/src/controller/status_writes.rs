//! Where craned writes status: on `/status` (ferrocrane's CRDs declare the subresource), or
//! with the object itself when the installed CRDs are Crane's own, which declare none (Crane
//! writes its status with plain creates and updates). A user who swaps craned's image keeps
//! Crane's CRDs; craned then works as is, and says once how to switch to ferrocrane's.

use kube::api::{Api, Patch, PatchParams};
use kube::core::ApiResource;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::FIELD_MANAGER;
use crate::crd::Recommendation;

/// The field manager of status written with the object: not craned's, so that applying only
/// the status never drops the fields craned's spec apply owns.
pub const STATUS_FIELD_MANAGER: &str = "craned-status";

/// How status is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusWrites {
    /// Server-side apply on `/status`.
    Subresource,
    /// Server-side apply of `status` on the object (the CRD has no status subresource).
    WithObject,
}

impl StatusWrites {
    /// From the names discovery lists for the CRDs' group-version (`recommendations`,
    /// `recommendations/status`, ...).
    pub fn from_discovered(names: &[String]) -> Self {
        if names.iter().any(|n| n == "recommendations/status") {
            StatusWrites::Subresource
        } else {
            StatusWrites::WithObject
        }
    }

    /// Asks discovery; when it cannot answer, assumes ferrocrane's CRDs.
    pub async fn detect(client: &kube::Client) -> Self {
        let ar = ApiResource::erase::<Recommendation>(&());
        let names: Vec<String> = match client.list_api_group_resources(&ar.api_version).await {
            Ok(list) => list.resources.into_iter().map(|r| r.name).collect(),
            Err(error) => {
                tracing::warn!(%error, group_version = %ar.api_version, "discovery of the CRDs failed; writing status on /status");
                return StatusWrites::Subresource;
            }
        };
        let mode = Self::from_discovered(&names);
        if mode == StatusWrites::WithObject {
            tracing::warn!(
                "the installed {} CRDs declare no status subresource (Crane's own CRDs): writing status with each object, as Crane does; for ferrocrane's CRDs run `kubectl apply --server-side -f deploy/crds`",
                ar.group
            );
        }
        mode
    }

    /// Applies `status` to the object `name` of `api`.
    pub async fn apply<K>(self, api: &Api<K>, name: &str, status: &Value) -> kube::Result<K>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let mut body = json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "status": status,
        });
        match self {
            StatusWrites::Subresource => {
                let pp = PatchParams::apply(FIELD_MANAGER).force();
                api.patch_status(name, &pp, &Patch::Apply(&body)).await
            }
            StatusWrites::WithObject => {
                body["metadata"] = json!({ "name": name });
                let pp = PatchParams::apply(STATUS_FIELD_MANAGER).force();
                api.patch(name, &pp, &Patch::Apply(&body)).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_subresource_decides() {
        let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            StatusWrites::from_discovered(&names(&[
                "recommendations",
                "recommendations/status",
                "recommendationrules",
                "recommendationrules/status"
            ])),
            StatusWrites::Subresource
        );
        assert_eq!(
            StatusWrites::from_discovered(&names(&["recommendations", "recommendationrules"])),
            StatusWrites::WithObject
        );
    }
}
