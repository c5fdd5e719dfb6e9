//! Server-side sharding (`--server-side-sharding`, KEP-5866): kube-apiserver 1.36+ with the
//! alpha `ShardedListAndWatch` feature gate sends each instance only the objects of its shard,
//! selected by the `shardSelector` list/watch parameter over the 64-bit FNV-1a hash of the
//! object's UID. Client-side sharding (upstream's, [`crate::sharding`]) receives and decodes
//! every object in every instance and drops the others' (kube-state-metrics #2688).
//!
//! The assignment is a contiguous hash range per shard: shard `i` of `n` owns the UIDs whose
//! hash `h` satisfies `i·2⁶⁴/n ≤ h < (i+1)·2⁶⁴/n`. It is **not** the jump hash of client-side
//! sharding, so a fleet must not mix the two: an object would be exported by one instance of
//! each kind, or by none. The same ranges also filter on our side, so an API server that
//! ignores the parameter (gate off) costs bandwidth, never correctness.

use crate::sharding::{Sharding, fnv1a_64};
use crate::watch::ObjectOwnership;

/// Shard `shard` of `total` as a hash range `[start, end)` over `0..2⁶⁴`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidRange {
    pub start: u64,
    /// Exclusive; `2⁶⁴` for the last shard, hence `u128`.
    pub end: u128,
}

const HASH_SPACE: u128 = 1 << 64;

impl UidRange {
    /// The range of a validated assignment (`0 <= shard < total`).
    pub fn of(sharding: Sharding) -> UidRange {
        let total = u128::from(sharding.total.max(1).unsigned_abs());
        let shard = u128::from(sharding.shard.max(0).unsigned_abs()).min(total - 1);
        let start = shard * HASH_SPACE / total;
        UidRange {
            // start < 2⁶⁴ because shard < total.
            start: u64::try_from(start).unwrap_or(u64::MAX),
            end: (shard + 1) * HASH_SPACE / total,
        }
    }

    pub fn contains(&self, uid: &str) -> bool {
        let h = fnv1a_64(uid.as_bytes());
        h >= self.start && u128::from(h) < self.end
    }

    /// The `shardSelector` value, in the form KEP-5866 documents.
    pub fn selector(&self) -> String {
        format!(
            "shardRange(object.metadata.uid, '{:#018x}', '{:#x}')",
            self.start, self.end
        )
    }
}

impl ObjectOwnership for UidRange {
    fn owns(&self, uid: &str) -> bool {
        self.contains(uid)
    }

    fn filtered_by_server(&self) -> bool {
        true
    }
}

/// A client that adds `shardSelector=<range>` to every request: the watchers' client, all of
/// whose requests are lists and watches. It goes through `client`, sharing its credentials
/// and its `--kube-api-qps` budget.
pub fn sharded_client(client: &kube::Client, range: UidRange) -> kube::Client {
    let param = format!("shardSelector={}", encode_query_value(&range.selector()));
    let inner = client.clone();
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let with_param = add_query(request.uri(), &param);
        async move {
            *request.uri_mut() = with_param?;
            inner.send(request).await
        }
    });
    kube::Client::new(service, client.default_namespace().to_owned())
}

/// `uri` with `param` (already encoded) appended to its query.
fn add_query(uri: &http::Uri, param: &str) -> Result<http::Uri, kube::Error> {
    let path_and_query = match uri.query() {
        Some(q) if !q.is_empty() => format!("{}?{q}&{param}", uri.path()),
        _ => format!("{}?{param}", uri.path()),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(
        path_and_query
            .parse()
            .map_err(|e: http::uri::InvalidUri| kube::Error::Service(Box::new(e)))?,
    );
    http::Uri::from_parts(parts).map_err(|e| kube::Error::Service(Box::new(e)))
}

/// Percent-encodes a query parameter value (RFC 3986 unreserved characters kept).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(shard: i32, total: i32) -> UidRange {
        UidRange::of(Sharding { shard, total })
    }

    #[test]
    fn selectors_are_the_keps_examples() {
        assert_eq!(
            range(0, 2).selector(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
        );
        assert_eq!(
            range(1, 2).selector(),
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
        );
        assert_eq!(
            range(2, 4).selector(),
            "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"
        );
        assert_eq!(
            range(0, 1).selector(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"
        );
    }

    #[test]
    fn ranges_tile_the_hash_space() {
        for total in 1..=67 {
            let mut next: u128 = 0;
            for shard in 0..total {
                let r = range(shard, total);
                assert_eq!(u128::from(r.start), next, "{shard}/{total}");
                assert!(r.end > u128::from(r.start));
                next = r.end;
            }
            assert_eq!(next, HASH_SPACE, "total {total}");
        }
    }

    #[test]
    fn every_uid_has_exactly_one_shard() {
        for i in 0..2000 {
            let uid = format!("6b8c0e0e-{i:04x}-4f5e-9c1d-0123456789ab");
            for total in [1, 2, 3, 5, 8] {
                let owners = (0..total)
                    .filter(|&s| range(s, total).contains(&uid))
                    .count();
                assert_eq!(owners, 1, "{uid} of {total}");
            }
        }
    }

    /// Random v4-style UIDs, as the API server assigns them (from a fixed-seed generator).
    fn uids(n: usize) -> Vec<String> {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..n)
            .map(|_| {
                let (a, b) = (next(), next());
                format!(
                    "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                    a >> 32,
                    (a >> 16) & 0xffff,
                    a & 0xfff,
                    b >> 48,
                    b & 0xffff_ffff_ffff
                )
            })
            .collect()
    }

    #[test]
    fn shards_get_about_a_third_each() {
        // FNV-1a's high bits spread random UIDs evenly; they would not spread "uid-1",
        // "uid-2"... (short keys differing in the last byte), which the API server never uses.
        let all = uids(3000);
        let counts: Vec<usize> = (0..3)
            .map(|s| all.iter().filter(|u| range(s, 3).contains(u)).count())
            .collect();
        assert!(
            counts.iter().all(|&c| (850..=1150).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn the_parameter_joins_any_query() {
        let sel = "shardSelector=x";
        let add = |u: &str| {
            add_query(&u.parse().expect("uri"), sel)
                .expect("add")
                .to_string()
        };
        assert_eq!(add("/api/v1/pods"), "/api/v1/pods?shardSelector=x");
        assert_eq!(
            add("https://h:6443/api/v1/pods?watch=true&resourceVersion=5"),
            "https://h:6443/api/v1/pods?watch=true&resourceVersion=5&shardSelector=x"
        );
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(
            encode_query_value("shardRange(object.metadata.uid, '0x0', '0x8')"),
            "shardRange%28object.metadata.uid%2C%20%270x0%27%2C%20%270x8%27%29"
        );
    }
}
