//! Every object of a kind, kept in memory by a watch that retries with backoff: what a
//! service reads on each request or scrape instead of listing.

use futures::StreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};

/// Starts watching every `K` the client may see; the store fills once the first list is in.
pub fn reflected<K>(client: &kube::Client) -> Store<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let stream = watcher(
        kube::Api::<K>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(writer)
    .for_each(|event| {
        if let Err(error) = event {
            tracing::warn!(%error, kind = %K::kind(&()), "watch failed; retrying");
        }
        futures::future::ready(())
    });
    tokio::spawn(stream);
    store
}

/// Whether the API server serves `K` now (its CRD is installed and established).
pub async fn served<K: kube::Resource<DynamicType = ()>>(client: &kube::Client) -> bool {
    let ar = kube::core::ApiResource::erase::<K>(&());
    client
        .list_api_group_resources(&ar.api_version)
        .await
        .is_ok_and(|list| list.resources.iter().any(|r| r.name == ar.plural))
}
