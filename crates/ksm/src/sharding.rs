//! Horizontal sharding: which of N kube-state-metrics instances owns an object.
//!
//! kube-state-metrics hashes an object's UID with 64-bit FNV-1a and maps the hash onto the
//! shards with Google's jump consistent hash (the `dgryski/go-jump` implementation). Its README
//! talks about md5, but the code (`pkg/sharding/listwatch.go`) is FNV-1a + jump, and that is
//! what decides which instance exports an object; we reproduce it bit for bit so a fleet can
//! mix Go and Rust instances during a migration without losing or duplicating objects.
//!
//! Auto-sharding (`--pod` + `--pod-namespace`) takes the shard from the StatefulSet ordinal
//! of the pod and the total from the StatefulSet's replicas. The runtime does the API calls;
//! the functions here are the pure part.

/// Why a shard assignment cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardingError {
    #[error("total shards {total} is invalid: must be at least 1")]
    InvalidTotal { total: i32 },

    #[error(
        "shard {shard} is out of range: must be at least 0 and less than the {total} total shards"
    )]
    OutOfRange { shard: i32, total: i32 },

    /// The pod is not `<statefulset>-<ordinal>`.
    #[error(
        "cannot detect the shard of pod {pod:?} of StatefulSet {statefulset:?}: \
         expected a pod named \"{statefulset}-<ordinal>\""
    )]
    NoOrdinal { statefulset: String, pod: String },
}

const FNV64_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a, as Go's `hash/fnv.New64a`.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV64_OFFSET_BASIS, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV64_PRIME)
    })
}

/// Jump consistent hash (Lamping & Veach 2014), exactly as `github.com/dgryski/go-jump`'s
/// `Hash`: a bucket in `0..buckets`. With `buckets < 1` it returns -1, as Go does, so no
/// shard matches.
#[allow(
    clippy::cast_possible_truncation,
    reason = "proved inline: the product stays below 2^62 and b < buckets <= i32::MAX"
)]
pub fn jump_hash(mut key: u64, buckets: i32) -> i32 {
    let mut b: i64 = -1;
    let mut j: i64 = 0;
    while j < i64::from(buckets) {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        // Go converts through float64 the same way; the product stays below 2^62, so the
        // float-to-int conversion never saturates.
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    // b < buckets <= i32::MAX, so this never truncates.
    b as i32
}

/// This instance's place among the shards: it owns the objects whose UID hashes to `shard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharding {
    /// Zero-based index of this instance.
    pub shard: i32,
    /// Number of instances; 1 disables sharding.
    pub total: i32,
}

impl Default for Sharding {
    fn default() -> Self {
        Sharding::NONE
    }
}

impl Sharding {
    /// One instance owning everything.
    pub const NONE: Sharding = Sharding { shard: 0, total: 1 };

    /// A validated assignment: `total >= 1` and `0 <= shard < total`.
    pub fn new(shard: i32, total: i32) -> Result<Self, ShardingError> {
        if total < 1 {
            return Err(ShardingError::InvalidTotal { total });
        }
        if !(0..total).contains(&shard) {
            return Err(ShardingError::OutOfRange { shard, total });
        }
        Ok(Sharding { shard, total })
    }

    /// Whether objects are split at all (upstream skips hashing for shard 0 of 1).
    pub fn is_sharded(&self) -> bool {
        !(self.shard == 0 && self.total == 1)
    }

    /// Whether the object with this UID belongs to this shard.
    pub fn owns(&self, uid: &str) -> bool {
        if !self.is_sharded() {
            return true;
        }
        jump_hash(fnv1a_64(uid.as_bytes()), self.total) == self.shard
    }
}

/// The StatefulSet ordinal of a pod named `<anything>-<ordinal>`: the decimal digits after the
/// last `-`. `None` when there is no `-` or the suffix is not a non-negative 32-bit number.
///
/// When the StatefulSet's name is known, prefer [`ordinal_from_statefulset_pod`], which is
/// what upstream does (it strips `<statefulset>-`).
pub fn ordinal_from_pod_name(pod: &str) -> Option<i32> {
    let (_, suffix) = pod.rsplit_once('-')?;
    parse_ordinal(suffix)
}

/// The ordinal of `pod` within `statefulset`: the pod must be named `<statefulset>-<ordinal>`.
pub fn ordinal_from_statefulset_pod(statefulset: &str, pod: &str) -> Result<i32, ShardingError> {
    pod.strip_prefix(statefulset)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(parse_ordinal)
        .ok_or_else(|| ShardingError::NoOrdinal {
            statefulset: statefulset.to_owned(),
            pod: pod.to_owned(),
        })
}

fn parse_ordinal(s: &str) -> Option<i32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Auto-sharding: this pod's shard from its StatefulSet ordinal, the total from the
/// StatefulSet's `spec.replicas` (unset means 1, as the API server defaults it).
///
/// A pod whose ordinal is not below the replica count (it is being scaled away) gets
/// [`ShardingError::OutOfRange`]; upstream keeps such a pod running with a shard that matches
/// no object, so the runtime should then export nothing rather than exit.
pub fn sharding_from_statefulset(
    statefulset: &str,
    replicas: Option<i32>,
    pod: &str,
) -> Result<Sharding, ShardingError> {
    let shard = ordinal_from_statefulset_pod(statefulset, pod)?;
    Sharding::new(shard, replicas.unwrap_or(1))
}

/// What the auto-sharding runtime uses: [`sharding_from_statefulset`], except that a pod
/// outside the replica count (being scaled away, or replicas 0) gets an assignment that owns
/// no object instead of an error, as upstream (it keeps the numbers and nothing hashes to
/// them). Fails only when the pod name carries no ordinal.
pub fn auto_sharding(
    statefulset: &str,
    replicas: Option<i32>,
    pod: &str,
) -> Result<Sharding, ShardingError> {
    match sharding_from_statefulset(statefulset, replicas, pod) {
        Ok(s) => Ok(s),
        Err(ShardingError::OutOfRange { shard, total }) => Ok(Sharding { shard, total }),
        Err(ShardingError::InvalidTotal { total }) => Ok(Sharding {
            shard: ordinal_from_statefulset_pod(statefulset, pod)?,
            total,
        }),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn auto_sharding_follows_replicas_and_owns_nothing_when_scaled_away() {
        let s = auto_sharding("ksm", Some(3), "ksm-2").unwrap();
        assert_eq!(s, Sharding { shard: 2, total: 3 });
        let uids: Vec<String> = (0..200).map(|i| format!("uid-{i}")).collect();
        assert!(uids.iter().any(|u| s.owns(u)));
        // Scaled from 3 to 2: pod 2 is going away and must export nothing.
        let gone = auto_sharding("ksm", Some(2), "ksm-2").unwrap();
        assert!(uids.iter().all(|u| !gone.owns(u)));
        let zero = auto_sharding("ksm", Some(0), "ksm-0").unwrap();
        assert!(uids.iter().all(|u| !zero.owns(u)));
        // Scaled up: pods 0 and 1 of 2 split everything.
        let a = auto_sharding("ksm", Some(2), "ksm-0").unwrap();
        let b = auto_sharding("ksm", Some(2), "ksm-1").unwrap();
        assert!(uids.iter().all(|u| a.owns(u) != b.owns(u)));
        assert!(auto_sharding("ksm", Some(2), "other-0").is_err());
        assert_eq!(auto_sharding("ksm", None, "ksm-0").unwrap(), Sharding::NONE);
    }

    #[test]
    fn fnv1a_64_known_vectors() {
        // Reference values of the FNV-1a 64-bit specification.
        assert_eq!(fnv1a_64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn jump_hash_matches_go_jump_vectors() {
        // go-jump's own test table, generated from the paper's reference C++ code:
        // bucket for numBuckets = 1, 2, 3, ...
        let table: &[(u64, &[i32])] = &[
            (0, &[0; 20]),
            (
                1,
                &[0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 17, 17],
            ),
            (
                0xdeadbeef,
                &[0, 1, 2, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 16, 16, 16],
            ),
            (
                0x0ddc0ffeebadf00d,
                &[0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 15, 15, 15, 15],
            ),
        ];
        for (key, buckets) in table {
            for (i, want) in buckets.iter().enumerate() {
                let n = i32::try_from(i + 1).expect("small");
                assert_eq!(jump_hash(*key, n), *want, "key {key:#x} buckets {n}");
            }
        }
    }

    #[test]
    fn jump_hash_without_buckets_is_minus_one() {
        assert_eq!(jump_hash(42, 0), -1);
        assert_eq!(jump_hash(42, -3), -1);
    }

    #[test]
    fn upstream_test_uid_goes_to_shard_zero_of_two() {
        // pkg/sharding/listwatch_test.go TestSharding.
        assert!(Sharding::new(0, 2).unwrap().owns("test_uid"));
        assert!(!Sharding::new(1, 2).unwrap().owns("test_uid"));
    }

    #[test]
    fn unsharded_owns_everything() {
        assert!(Sharding::NONE.owns(""));
        assert!(Sharding::default().owns("anything"));
        assert!(!Sharding::NONE.is_sharded());
        assert!(Sharding::new(0, 2).unwrap().is_sharded());
    }

    #[test]
    fn new_validates() {
        assert_eq!(
            Sharding::new(0, 0),
            Err(ShardingError::InvalidTotal { total: 0 })
        );
        assert_eq!(
            Sharding::new(2, 2),
            Err(ShardingError::OutOfRange { shard: 2, total: 2 })
        );
        assert_eq!(
            Sharding::new(-1, 2),
            Err(ShardingError::OutOfRange {
                shard: -1,
                total: 2
            })
        );
        assert_eq!(Sharding::new(1, 2), Ok(Sharding { shard: 1, total: 2 }));
    }

    #[test]
    fn growing_the_fleet_moves_few_objects() {
        // The point of jump hash: going from 4 to 5 shards only moves objects to the new one.
        for i in 0..2000 {
            let h = fnv1a_64(format!("uid-{i}").as_bytes());
            let before = jump_hash(h, 4);
            let after = jump_hash(h, 5);
            assert!(
                after == before || after == 4,
                "uid-{i}: {before} -> {after}"
            );
        }
    }

    #[test]
    fn ordinal_from_pod_name_cases() {
        assert_eq!(ordinal_from_pod_name("kube-state-metrics-0"), Some(0));
        assert_eq!(ordinal_from_pod_name("kube-state-metrics-12"), Some(12));
        assert_eq!(ordinal_from_pod_name("ksm-2147483647"), Some(i32::MAX));
        assert_eq!(ordinal_from_pod_name("ksm-2147483648"), None);
        assert_eq!(ordinal_from_pod_name("ksm"), None);
        assert_eq!(ordinal_from_pod_name("ksm-"), None);
        assert_eq!(ordinal_from_pod_name("ksm-7d9f8-abcde"), None);
        assert_eq!(ordinal_from_pod_name("ksm-+1"), None);
    }

    #[test]
    fn ordinal_from_statefulset_pod_needs_the_prefix() {
        assert_eq!(
            ordinal_from_statefulset_pod("kube-state-metrics", "kube-state-metrics-3"),
            Ok(3)
        );
        // A hyphenated suffix is not an ordinal even though the tail is numeric.
        let e = ordinal_from_statefulset_pod("ksm", "ksm-shard-3").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot detect the shard of pod \"ksm-shard-3\" of StatefulSet \"ksm\": \
             expected a pod named \"ksm-<ordinal>\""
        );
        assert!(ordinal_from_statefulset_pod("other", "ksm-1").is_err());
        assert!(ordinal_from_statefulset_pod("ksm", "ksm1").is_err());
    }

    #[test]
    fn sharding_from_statefulset_cases() {
        assert_eq!(
            sharding_from_statefulset("ksm", Some(3), "ksm-2"),
            Ok(Sharding { shard: 2, total: 3 })
        );
        assert_eq!(
            sharding_from_statefulset("ksm", None, "ksm-0"),
            Ok(Sharding::NONE)
        );
        // Scale-down in progress: ksm-3 of 3 replicas owns nothing.
        assert_eq!(
            sharding_from_statefulset("ksm", Some(3), "ksm-3"),
            Err(ShardingError::OutOfRange { shard: 3, total: 3 })
        );
        assert_eq!(
            sharding_from_statefulset("ksm", Some(0), "ksm-0"),
            Err(ShardingError::InvalidTotal { total: 0 })
        );
    }

    proptest! {
        #[test]
        fn exactly_one_shard_owns_each_uid(uid in "\\PC{0,40}", total in 1i32..64) {
            let owners = (0..total)
                .filter(|&s| Sharding::new(s, total).unwrap().owns(&uid))
                .count();
            prop_assert_eq!(owners, 1);
        }

        #[test]
        fn jump_hash_is_in_range(key: u64, buckets in 1i32..100_000) {
            let b = jump_hash(key, buckets);
            prop_assert!((0..buckets).contains(&b));
        }

        #[test]
        fn ordinal_round_trips(name in "[a-z]([a-z0-9-]{0,20}[a-z0-9])?", ordinal in 0i32..100_000) {
            let pod = format!("{name}-{ordinal}");
            prop_assert_eq!(ordinal_from_pod_name(&pod), Some(ordinal));
            prop_assert_eq!(ordinal_from_statefulset_pod(&name, &pod), Ok(ordinal));
        }
    }
}
