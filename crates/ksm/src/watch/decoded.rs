//! Objects as the API server sends them, whether or not the typed model can hold them.
//!
//! Kubernetes accepts values the Rust model cannot represent (a time up to
//! 9999-12-31T23:59:59Z, past what `jiff` holds). Decoded as the plain type, one such object
//! would fail a whole list — every metric of its resource gone — or a watch event, leaving
//! the object at its old version. Watched as [`Decoded`], it arrives as
//! [`Decoded::Undecodable`] with its identity, so the loop can drop it loudly.

use std::borrow::Cow;

use kube::Resource;
use kube::api::ObjectMeta;
use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::value::RawValue;

#[derive(Debug, Clone)]
pub enum Decoded<K> {
    Object(K),
    /// What could be read of an object the model rejects: its identity, and why.
    Undecodable {
        meta: Box<ObjectMeta>,
        error: String,
    },
}

/// Only the identity of an object, read with plain strings so that nothing in it can fail.
#[derive(Deserialize, Default)]
struct Identity {
    #[serde(default)]
    metadata: IdentityMeta,
}

#[derive(Deserialize, Default)]
struct IdentityMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The raw text is kept aside (a copy, not a parse), so a second, tolerant reading
        // costs nothing unless the first fails.
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        match serde_json::from_str::<K>(raw.get()) {
            Ok(object) => Ok(Decoded::Object(object)),
            Err(error) => {
                let identity: Identity = serde_json::from_str(raw.get()).unwrap_or_default();
                let m = identity.metadata;
                Ok(Decoded::Undecodable {
                    meta: Box::new(ObjectMeta {
                        name: m.name,
                        namespace: m.namespace,
                        uid: m.uid,
                        resource_version: m.resource_version,
                        ..ObjectMeta::default()
                    }),
                    error: error.to_string(),
                })
            }
        }
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Decoded<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            Decoded::Object(k) => k.meta(),
            Decoded::Undecodable { meta, .. } => meta,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Decoded::Object(k) => k.meta_mut(),
            Decoded::Undecodable { meta, .. } => meta,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::ObjectList;

    use super::*;

    const LIST: &str = r#"{"apiVersion":"v1","kind":"LeaseList","metadata":{"resourceVersion":"7"},"items":[
        {"metadata":{"name":"ok","namespace":"n","uid":"u1"},"spec":{"renewTime":"2024-01-01T00:00:00.000000Z"}},
        {"metadata":{"name":"far","namespace":"n","uid":"u2","resourceVersion":"5"},"spec":{"renewTime":"9999-12-31T23:59:59.999999Z"}}
    ]}"#;

    #[test]
    fn one_object_the_model_cannot_hold_does_not_fail_its_list() {
        let list: ObjectList<Decoded<Lease>> = serde_json::from_str(LIST).unwrap();
        assert_eq!(list.items.len(), 2);
        assert!(
            matches!(&list.items[0], Decoded::Object(l) if l.metadata.name.as_deref() == Some("ok"))
        );
        match &list.items[1] {
            Decoded::Undecodable { meta, error } => {
                assert_eq!(meta.uid.as_deref(), Some("u2"));
                assert_eq!(meta.resource_version.as_deref(), Some("5"));
                assert!(!error.is_empty());
            }
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn a_watch_event_carries_an_undecodable_object_too() {
        let line = r#"{"type":"MODIFIED","object":{"metadata":{"name":"far","uid":"u2"},"spec":{"renewTime":"9999-12-31T23:59:59.999999Z"}}}"#;
        let event: kube::api::WatchEvent<Decoded<Lease>> = serde_json::from_str(line).unwrap();
        assert!(matches!(
            event,
            kube::api::WatchEvent::Modified(Decoded::Undecodable { ref meta, .. })
                if meta.uid.as_deref() == Some("u2")
        ));
    }

    #[test]
    fn resource_identity_is_the_inner_types() {
        assert_eq!(Decoded::<Lease>::plural(&()), "leases");
        assert_eq!(Decoded::<Lease>::group(&()), "coordination.k8s.io");
        let d: Decoded<Lease> = serde_json::from_str(r#"{"metadata":{"uid":"x"}}"#).unwrap();
        assert_eq!(d.meta().uid.as_deref(), Some("x"));
    }
}
