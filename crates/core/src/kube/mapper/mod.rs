//! Group-resource ↔ kind mapping from API discovery, like client-go's RESTMapper.
//!
//! prometheus-adapter turns series labels (`pod`, `deployment`, `namespace`) into resources
//! and back, and craned resolves `kind`/`apiVersion` selectors; both need the API server's
//! view of which resources exist. Upstream fills its mapper once at startup, so CRDs created
//! later are never found; here a background task refreshes it and keeps the last good copy
//! when discovery fails.

use std::collections::HashMap;

use ::kube::{Client, core::gvk::GroupVersionKind, discovery::ApiResource};
use futures::future::join_all;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroup, APIResourceList};

use super::KubeError;

/// Everything known about one resource, at the version chosen for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMapping {
    /// API group, empty for the core group.
    pub group: String,
    /// The group's preferred version if it serves this resource, else the first version
    /// (in the server's preference order) that does.
    pub version: String,
    /// Every version serving the resource, in the server's preference order.
    pub versions: Vec<String>,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    /// Whether `<plural>/scale` exists, i.e. the HPA can scale it.
    pub has_scale: bool,
    pub verbs: Vec<String>,
}

impl ResourceMapping {
    /// `pods`, `deployments.apps`: the form kubectl and RBAC use.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `v1`, `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::gvk(&self.group, &self.version, &self.kind)
    }

    /// For `kube::Api::<DynamicObject>::all_with` and friends.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }
}

/// What discovery returned for one API group: kept as the raw API types so that tests can
/// write them by hand and the I/O stays in [`ResourceMapper::discover`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiscoveredGroup {
    /// Group name, empty for the core group.
    pub name: String,
    /// The server's preferred version, if it said.
    pub preferred_version: Option<String>,
    /// One resource list per version, in the server's preference order.
    pub resource_lists: Vec<APIResourceList>,
}

/// An immutable snapshot of the resource mapping.
#[derive(Debug, Clone, Default)]
pub struct ResourceMapper {
    resources: Vec<ResourceMapping>,
    /// (group, lower-case plural/singular/short name) -> index.
    by_name: HashMap<(String, String), usize>,
    /// lower-case name -> index, for lookups without a group; core group first.
    by_name_any_group: HashMap<String, usize>,
    /// (group, lower-case kind) -> index.
    by_kind: HashMap<(String, String), usize>,
    by_kind_any_group: HashMap<String, usize>,
    /// Groups whose discovery failed in the last run (typically an unavailable aggregated
    /// API); their resources are missing from this snapshot.
    failed_groups: Vec<String>,
}

impl ResourceMapper {
    /// Builds the mapping from discovery data. Groups are taken in the given order, except that
    /// the core group always comes first, so that a name without a group resolves like kubectl
    /// does (`events` is the core one, not `events.k8s.io`).
    pub fn from_discovery(groups: &[DiscoveredGroup]) -> Self {
        let mut ordered: Vec<&DiscoveredGroup> =
            groups.iter().filter(|g| g.name.is_empty()).collect();
        ordered.extend(groups.iter().filter(|g| !g.name.is_empty()));

        let mut resources = Vec::new();
        for group in ordered {
            resources.extend(group_mappings(group));
        }
        Self::from_mappings(resources)
    }

    /// Builds the lookup tables over already resolved mappings (given in priority order).
    pub fn from_mappings(resources: Vec<ResourceMapping>) -> Self {
        let mut mapper = Self {
            resources,
            ..Self::default()
        };
        // Plurals first, then singulars, then short names: a plural name always wins over
        // another resource's short name, as in a RESTMapper.
        let passes: [fn(&ResourceMapping) -> Vec<String>; 3] = [
            |r| vec![r.plural.to_lowercase()],
            |r| vec![r.singular.to_lowercase()],
            |r| r.short_names.iter().map(|s| s.to_lowercase()).collect(),
        ];
        for names_of in passes {
            for (i, r) in mapper.resources.iter().enumerate() {
                for name in names_of(r) {
                    if name.is_empty() {
                        continue;
                    }
                    mapper
                        .by_name
                        .entry((r.group.to_lowercase(), name.clone()))
                        .or_insert(i);
                    mapper.by_name_any_group.entry(name).or_insert(i);
                }
            }
        }
        for (i, r) in mapper.resources.iter().enumerate() {
            let kind = r.kind.to_lowercase();
            mapper
                .by_kind
                .entry((r.group.to_lowercase(), kind.clone()))
                .or_insert(i);
            mapper.by_kind_any_group.entry(kind).or_insert(i);
        }
        mapper
    }

    /// Looks a resource up by plural, singular or short name, case-insensitively.
    /// An empty `group` means "any group", preferring the core group.
    pub fn by_resource(&self, group: &str, resource: &str) -> Option<&ResourceMapping> {
        let name = resource.to_lowercase();
        let idx = if group.is_empty() {
            self.by_name_any_group.get(&name)
        } else {
            self.by_name.get(&(group.to_lowercase(), name))
        }?;
        self.resources.get(*idx)
    }

    /// Looks up `pods`, `deployment.apps`, `deployments.v1.apps` style strings (as kubectl
    /// accepts): the part before the first dot is the resource, the rest the group, with an
    /// optional leading version.
    pub fn by_group_resource(&self, group_resource: &str) -> Option<&ResourceMapping> {
        let Some((resource, rest)) = group_resource.split_once('.') else {
            return self.by_resource("", group_resource);
        };
        if let Some(found) = self.by_resource(rest, resource) {
            return Some(found);
        }
        let (version, group) = rest.split_once('.')?;
        self.by_resource(group, resource)
            .filter(|r| r.versions.iter().any(|v| v.eq_ignore_ascii_case(version)))
    }

    /// Looks a resource up by kind, case-insensitively. An empty `group` means "any group",
    /// preferring the core group.
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&ResourceMapping> {
        let kind = kind.to_lowercase();
        let idx = if group.is_empty() {
            self.by_kind_any_group.get(&kind)
        } else {
            self.by_kind.get(&(group.to_lowercase(), kind))
        }?;
        self.resources.get(*idx)
    }

    /// Every resource, core group first.
    pub fn all(&self) -> &[ResourceMapping] {
        &self.resources
    }

    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// Groups missing from this snapshot because their discovery failed.
    pub fn failed_groups(&self) -> &[String] {
        &self.failed_groups
    }

    /// Runs discovery against the API server (`/api`, `/apis` and one request per group
    /// version, concurrently). A group version that fails — an aggregated API whose backend is
    /// down, or the adapter's own group before it serves — is skipped and listed in
    /// [`Self::failed_groups`] rather than failing the whole mapping.
    pub async fn discover(client: &Client) -> Result<Self, KubeError> {
        let core_versions = client
            .list_core_api_versions()
            .await
            .map_err(|e| KubeError::Discovery(format!("/api: {e}")))?;
        let group_list = client
            .list_api_groups()
            .await
            .map_err(|e| KubeError::Discovery(format!("/apis: {e}")))?;

        let core_requests = core_versions.versions.iter().map(|v| async move {
            (
                String::new(),
                v.clone(),
                client.list_core_api_resources(v).await,
            )
        });
        let core_results = join_all(core_requests).await;
        let group_requests = group_list.groups.iter().flat_map(|g| {
            g.versions.iter().map(move |gv| async move {
                (
                    g.name.clone(),
                    gv.group_version.clone(),
                    client.list_api_group_resources(&gv.group_version).await,
                )
            })
        });
        let group_results = join_all(group_requests).await;

        let mut failed = Vec::new();
        let mut lists: HashMap<String, APIResourceList> = HashMap::new();
        for (group, gv, result) in core_results.into_iter().chain(group_results) {
            match result {
                Ok(list) => {
                    lists.insert(gv, list);
                }
                Err(e) => {
                    tracing::warn!(group_version = %gv, error = %e, "discovery of group version failed");
                    if !failed.contains(&group) {
                        failed.push(group);
                    }
                }
            }
        }

        let mut groups = vec![DiscoveredGroup {
            name: String::new(),
            preferred_version: core_versions.versions.first().cloned(),
            resource_lists: core_versions
                .versions
                .iter()
                .filter_map(|v| lists.remove(v))
                .collect(),
        }];
        groups.extend(
            group_list
                .groups
                .iter()
                .map(|g| discovered_group(g, &mut lists)),
        );
        let mut mapper = Self::from_discovery(&groups);
        mapper.failed_groups = failed;
        Ok(mapper)
    }
}

fn discovered_group(
    group: &APIGroup,
    lists: &mut HashMap<String, APIResourceList>,
) -> DiscoveredGroup {
    DiscoveredGroup {
        name: group.name.clone(),
        preferred_version: group.preferred_version.as_ref().map(|v| v.version.clone()),
        resource_lists: group
            .versions
            .iter()
            .filter_map(|v| lists.remove(&v.group_version))
            .collect(),
    }
}

/// The version part of `apps/v1` or `v1`.
fn version_of(group_version: &str) -> &str {
    group_version
        .rsplit_once('/')
        .map_or(group_version, |(_, v)| v)
}

/// Resolves every resource of one group to the version it should be used at.
fn group_mappings(group: &DiscoveredGroup) -> Vec<ResourceMapping> {
    // Preferred version first, then the others in server order.
    let mut lists: Vec<&APIResourceList> = Vec::with_capacity(group.resource_lists.len());
    if let Some(pref) = &group.preferred_version {
        lists.extend(
            group
                .resource_lists
                .iter()
                .filter(|l| version_of(&l.group_version) == pref),
        );
    }
    lists.extend(
        group
            .resource_lists
            .iter()
            .filter(|l| group.preferred_version.as_deref() != Some(version_of(&l.group_version))),
    );

    let mut out: Vec<ResourceMapping> = Vec::new();
    for list in lists {
        let version = version_of(&list.group_version);
        for res in &list.resources {
            if res.name.contains('/') || res.name.is_empty() {
                continue;
            }
            if let Some(existing) = out.iter_mut().find(|m| m.plural == res.name) {
                existing.versions.push(version.to_string());
                continue;
            }
            let has_scale = list
                .resources
                .iter()
                .any(|r| r.name.strip_prefix(res.name.as_str()) == Some("/scale"));
            let singular = if res.singular_name.is_empty() {
                // Older servers and some aggregated APIs leave it empty; kubectl falls back
                // to the lower-cased kind too.
                res.kind.to_lowercase()
            } else {
                res.singular_name.clone()
            };
            out.push(ResourceMapping {
                group: group.name.clone(),
                version: version.to_string(),
                versions: vec![version.to_string()],
                kind: res.kind.clone(),
                plural: res.name.clone(),
                singular,
                short_names: res.short_names.clone().unwrap_or_default(),
                namespaced: res.namespaced,
                has_scale,
                verbs: res.verbs.clone(),
            });
        }
    }
    out
}

mod refresh;
#[cfg(test)]
mod tests;

pub use refresh::{SharedMapper, spawn_refresh, spawn_refresh_with};
