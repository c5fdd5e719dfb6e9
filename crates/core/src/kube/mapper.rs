//! Group-resource ↔ kind mapping from API discovery, like client-go's RESTMapper.
//!
//! prometheus-adapter turns series labels (`pod`, `deployment`, `namespace`) into resources
//! and back, and craned resolves `kind`/`apiVersion` selectors; both need the API server's
//! view of which resources exist. Upstream fills its mapper once at startup, so CRDs created
//! later are never found; here a background task refreshes it and keeps the last good copy
//! when discovery fails.

use std::{collections::HashMap, sync::Arc, time::Duration};

use ::kube::{Client, core::gvk::GroupVersionKind, discovery::ApiResource};
use futures::future::join_all;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroup, APIResourceList};
use tokio::{sync::watch, task::JoinHandle};

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

/// A handle to the latest mapping, refreshed in the background by [`spawn_refresh`].
/// Cloning is cheap; lookups take a snapshot and never block the refresher.
#[derive(Debug, Clone)]
pub struct SharedMapper {
    rx: watch::Receiver<Arc<ResourceMapper>>,
}

impl SharedMapper {
    /// A mapper that never changes, for tests and for callers that discovered once.
    pub fn fixed(mapper: ResourceMapper) -> Self {
        let (tx, rx) = watch::channel(Arc::new(mapper));
        // Keeping the sender alive is unnecessary: receivers still read the last value.
        drop(tx);
        Self { rx }
    }

    /// The current snapshot (empty until the first successful discovery).
    pub fn current(&self) -> Arc<ResourceMapper> {
        self.rx.borrow().clone()
    }

    /// Waits until a snapshot from a successful discovery is available, e.g. to hold a
    /// readiness gate. Returns at once if one already is. Errors only if the refresher
    /// stopped before ever succeeding.
    pub async fn ready(&self) -> Result<Arc<ResourceMapper>, KubeError> {
        let mut rx = self.rx.clone();
        let snapshot = rx
            .wait_for(|m| !m.is_empty())
            .await
            .map_err(|_| KubeError::Discovery("resource mapper refresher stopped".into()))?;
        Ok(snapshot.clone())
    }

    /// Waits for the next refresh that changed the snapshot.
    pub async fn changed(&mut self) -> Result<Arc<ResourceMapper>, KubeError> {
        self.rx
            .changed()
            .await
            .map_err(|_| KubeError::Discovery("resource mapper refresher stopped".into()))?;
        Ok(self.rx.borrow_and_update().clone())
    }
}

/// Discovers now and then every `interval`, publishing each successful result. A failed run
/// is logged and the previous snapshot kept. The task ends when every [`SharedMapper`] clone
/// is dropped.
pub fn spawn_refresh(client: Client, interval: Duration) -> SharedMapper {
    spawn_refresh_with(interval, move || {
        let client = client.clone();
        async move { ResourceMapper::discover(&client).await }
    })
    .0
}

/// [`spawn_refresh`] with the discovery step supplied by the caller, which is how the refresh
/// policy is tested without an API server. Also returns the task handle.
pub fn spawn_refresh_with<F, Fut>(
    interval: Duration,
    mut discover: F,
) -> (SharedMapper, JoinHandle<()>)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<ResourceMapper, KubeError>> + Send + 'static,
{
    let (tx, rx) = watch::channel(Arc::new(ResourceMapper::default()));
    let handle = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(1)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = tx.closed() => return,
                _ = ticker.tick() => {}
            }
            match discover().await {
                Ok(mapper) => {
                    tracing::debug!(resources = mapper.all().len(), "resource mapping refreshed");
                    tx.send_if_modified(|current| {
                        if current.resources == mapper.resources
                            && current.failed_groups == mapper.failed_groups
                        {
                            false
                        } else {
                            *current = Arc::new(mapper);
                            true
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "resource discovery failed; keeping the last mapping");
                }
            }
        }
    });
    (SharedMapper { rx }, handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
    use std::sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    };

    fn res(
        name: &str,
        singular: &str,
        kind: &str,
        namespaced: bool,
        short: &[&str],
    ) -> APIResource {
        APIResource {
            name: name.into(),
            singular_name: singular.into(),
            kind: kind.into(),
            namespaced,
            short_names: (!short.is_empty()).then(|| short.iter().map(|s| s.to_string()).collect()),
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            ..Default::default()
        }
    }

    fn sub(name: &str, kind: &str) -> APIResource {
        APIResource {
            name: name.into(),
            kind: kind.into(),
            namespaced: true,
            verbs: vec!["get".into(), "update".into()],
            ..Default::default()
        }
    }

    fn list(gv: &str, resources: Vec<APIResource>) -> APIResourceList {
        APIResourceList {
            group_version: gv.into(),
            resources,
        }
    }

    fn cluster() -> Vec<DiscoveredGroup> {
        vec![
            DiscoveredGroup {
                name: "apps".into(),
                preferred_version: Some("v1".into()),
                resource_lists: vec![list(
                    "apps/v1",
                    vec![
                        res("deployments", "deployment", "Deployment", true, &["deploy"]),
                        sub("deployments/scale", "Scale"),
                        sub("deployments/status", "Deployment"),
                        res("statefulsets", "statefulset", "StatefulSet", true, &["sts"]),
                        sub("statefulsets/scale", "Scale"),
                        res("daemonsets", "daemonset", "DaemonSet", true, &["ds"]),
                    ],
                )],
            },
            DiscoveredGroup {
                name: "events.k8s.io".into(),
                preferred_version: Some("v1".into()),
                resource_lists: vec![list(
                    "events.k8s.io/v1",
                    vec![res("events", "event", "Event", true, &["ev"])],
                )],
            },
            DiscoveredGroup {
                name: "autoscaling".into(),
                preferred_version: Some("v2".into()),
                resource_lists: vec![
                    list(
                        "autoscaling/v2",
                        vec![res(
                            "horizontalpodautoscalers",
                            "horizontalpodautoscaler",
                            "HorizontalPodAutoscaler",
                            true,
                            &["hpa"],
                        )],
                    ),
                    list(
                        "autoscaling/v1",
                        vec![res(
                            "horizontalpodautoscalers",
                            "horizontalpodautoscaler",
                            "HorizontalPodAutoscaler",
                            true,
                            &["hpa"],
                        )],
                    ),
                ],
            },
            DiscoveredGroup {
                name: "example.com".into(),
                preferred_version: Some("v1".into()),
                resource_lists: vec![
                    list(
                        "example.com/v1",
                        vec![res("widgets", "", "Widget", false, &[])],
                    ),
                    list(
                        "example.com/v1alpha1",
                        vec![
                            res("widgets", "", "Widget", false, &[]),
                            res("gadgets", "gadget", "Gadget", true, &["deploy"]),
                        ],
                    ),
                ],
            },
            // Core last on purpose: it must still take priority.
            DiscoveredGroup {
                name: String::new(),
                preferred_version: Some("v1".into()),
                resource_lists: vec![list(
                    "v1",
                    vec![
                        res("pods", "pod", "Pod", true, &["po"]),
                        sub("pods/log", "Pod"),
                        res("namespaces", "namespace", "Namespace", false, &["ns"]),
                        res("nodes", "node", "Node", false, &["no"]),
                        res("events", "event", "Event", true, &["ev"]),
                        res(
                            "replicationcontrollers",
                            "replicationcontroller",
                            "ReplicationController",
                            true,
                            &["rc"],
                        ),
                        sub("replicationcontrollers/scale", "Scale"),
                    ],
                )],
            },
        ]
    }

    #[test]
    fn resource_lookup_by_any_name_case_insensitive() {
        let m = ResourceMapper::from_discovery(&cluster());
        for name in ["pods", "pod", "po", "Pod", "PODS"] {
            let r = m.by_resource("", name).unwrap();
            assert_eq!(r.group_resource(), "pods", "{name}");
        }
        let d = m.by_resource("", "deployment").unwrap();
        assert_eq!(d.group_resource(), "deployments.apps");
        assert_eq!(d.api_version(), "apps/v1");
        assert!(d.namespaced);
        assert!(d.has_scale);
        assert_eq!(
            m.by_resource("apps", "deploy").unwrap().plural,
            "deployments"
        );
        assert_eq!(
            m.by_resource("APPS", "Deployments").unwrap().plural,
            "deployments"
        );
        assert!(m.by_resource("apps", "pods").is_none());
        assert!(m.by_resource("", "nothing").is_none());

        let ns = m.by_resource("", "namespace").unwrap();
        assert!(!ns.namespaced);
        assert!(!ns.has_scale);
        assert!(!m.by_resource("", "daemonsets").unwrap().has_scale);
        assert!(m.by_resource("", "rc").unwrap().has_scale);
    }

    #[test]
    fn core_group_wins_without_group() {
        let m = ResourceMapper::from_discovery(&cluster());
        assert_eq!(m.by_resource("", "events").unwrap().group, "");
        assert_eq!(
            m.by_resource("events.k8s.io", "events").unwrap().group,
            "events.k8s.io"
        );
        assert_eq!(m.all()[0].group, "");
        assert_eq!(m.by_kind("", "Event").unwrap().group, "");
    }

    #[test]
    fn plural_beats_other_resources_short_name() {
        // example.com's gadgets claims short name "deploy"; within apps it is still deployments,
        // and across groups the first group in priority order (apps) keeps it.
        let m = ResourceMapper::from_discovery(&cluster());
        assert_eq!(m.by_resource("", "deploy").unwrap().plural, "deployments");
        assert_eq!(
            m.by_resource("example.com", "deploy").unwrap().plural,
            "gadgets"
        );
    }

    #[test]
    fn preferred_version_and_fallback() {
        let m = ResourceMapper::from_discovery(&cluster());
        let hpa = m.by_resource("autoscaling", "hpa").unwrap();
        assert_eq!(hpa.version, "v2");
        assert_eq!(hpa.versions, vec!["v2", "v1"]);

        let w = m.by_resource("example.com", "widget").unwrap();
        assert_eq!(w.version, "v1");
        assert_eq!(
            w.singular, "widget",
            "empty singular falls back to lower-case kind"
        );
        // Only served by a non-preferred version.
        let g = m.by_kind("example.com", "gadget").unwrap();
        assert_eq!(g.version, "v1alpha1");
        assert_eq!(
            g.gvk(),
            GroupVersionKind::gvk("example.com", "v1alpha1", "Gadget")
        );
    }

    #[test]
    fn kind_lookup() {
        let m = ResourceMapper::from_discovery(&cluster());
        let d = m.by_kind("apps", "Deployment").unwrap();
        assert_eq!(d.plural, "deployments");
        assert_eq!(m.by_kind("", "deployment").unwrap().group, "apps");
        assert!(m.by_kind("apps", "Pod").is_none());
        let ar = d.api_resource();
        assert_eq!(ar.api_version, "apps/v1");
        assert_eq!(ar.plural, "deployments");
    }

    #[test]
    fn group_resource_strings() {
        let m = ResourceMapper::from_discovery(&cluster());
        assert_eq!(m.by_group_resource("pods").unwrap().kind, "Pod");
        assert_eq!(
            m.by_group_resource("deployments.apps").unwrap().kind,
            "Deployment"
        );
        assert_eq!(
            m.by_group_resource("deployment.apps").unwrap().kind,
            "Deployment"
        );
        assert_eq!(
            m.by_group_resource("hpa.v1.autoscaling").unwrap().plural,
            "horizontalpodautoscalers"
        );
        assert!(m.by_group_resource("hpa.v3.autoscaling").is_none());
        assert_eq!(
            m.by_group_resource("widgets.example.com").unwrap().kind,
            "Widget"
        );
        assert!(m.by_group_resource("pods.apps").is_none());
    }

    #[test]
    fn subresources_are_not_resources() {
        let m = ResourceMapper::from_discovery(&cluster());
        assert!(m.all().iter().all(|r| !r.plural.contains('/')));
        assert_eq!(m.all().len(), 12);
    }

    /// One scripted discovery outcome.
    type Script = Result<Vec<DiscoveredGroup>, ()>;

    #[tokio::test(start_paused = true)]
    async fn refresh_keeps_last_good_and_picks_up_new_resources() {
        let calls = Arc::new(AtomicUsize::new(0));
        let script: Arc<Mutex<Vec<Script>>> = Arc::new(Mutex::new(vec![
            Err(()),
            Ok(cluster()),
            Err(()),
            Ok({
                let mut c = cluster();
                c.push(DiscoveredGroup {
                    name: "analysis.crane.io".into(),
                    preferred_version: Some("v1alpha1".into()),
                    resource_lists: vec![list(
                        "analysis.crane.io/v1alpha1",
                        vec![res(
                            "recommendations",
                            "recommendation",
                            "Recommendation",
                            true,
                            &[],
                        )],
                    )],
                });
                c
            }),
        ]));
        let (mut shared, handle) = spawn_refresh_with(Duration::from_secs(60), {
            let calls = calls.clone();
            let script = script.clone();
            move || {
                calls.fetch_add(1, Ordering::SeqCst);
                let next = {
                    let mut s = script.lock().unwrap();
                    if s.is_empty() { Err(()) } else { s.remove(0) }
                };
                async move {
                    next.map(|g| ResourceMapper::from_discovery(&g))
                        .map_err(|()| KubeError::Discovery("boom".into()))
                }
            }
        });

        assert!(shared.current().is_empty());
        let first = shared.ready().await.unwrap();
        assert!(first.by_resource("", "pods").is_some());
        assert!(first.by_resource("", "recommendation").is_none());

        // Third run fails: the snapshot stays.
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!(shared.current().by_resource("", "pods").is_some());

        // Fourth run sees the CRD.
        loop {
            let updated = shared.changed().await.unwrap();
            if updated.by_resource("", "recommendation").is_some() {
                break;
            }
        }
        assert_eq!(calls.load(Ordering::SeqCst), 4);

        // Dropping every handle stops the task.
        drop(shared);
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert!(handle.is_finished());
    }

    #[tokio::test]
    async fn fixed_mapper() {
        let shared = SharedMapper::fixed(ResourceMapper::from_discovery(&cluster()));
        assert!(shared.ready().await.unwrap().by_kind("", "Pod").is_some());
    }
}
