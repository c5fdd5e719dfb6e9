//! A small map whose entries expire, each after its own lifetime.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bounded so a flood of distinct tokens or requests cannot grow it without limit: when full,
/// expired entries go first, and everything goes if that is not enough. The time is always
/// passed in, so tests drive the clock.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    max_entries: usize,
    entries: Mutex<HashMap<K, Entry<V>>>,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    stored_at: Instant,
    ttl: Duration,
}

impl<V> Entry<V> {
    fn fresh(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.stored_at) < self.ttl
    }
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub fn new(max_entries: usize) -> Self {
        TtlCache {
            max_entries: max_entries.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The value stored for `key`, unless it has expired by `now`.
    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|e| e.fresh(now))
            .map(|e| e.value.clone())
    }

    /// Remembers `value` for `ttl` from `now`; a zero `ttl` remembers nothing.
    pub fn insert(&self, key: K, value: V, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.max_entries && !entries.contains_key(&key) {
            entries.retain(|_, e| e.fresh(now));
            if entries.len() >= self.max_entries {
                entries.clear();
            }
        }
        entries.insert(
            key,
            Entry {
                value,
                stored_at: now,
                ttl,
            },
        );
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TEN_S: Duration = Duration::from_secs(10);

    #[test]
    fn ttl_cache_expires_and_stays_bounded() {
        let cache = TtlCache::new(2);
        let t0 = Instant::now();
        cache.insert("a", 1, TEN_S, t0);
        assert_eq!(cache.get(&"a", t0 + Duration::from_secs(9)), Some(1));
        assert_eq!(cache.get(&"a", t0 + Duration::from_secs(10)), None);
        cache.insert("b", 2, TEN_S, t0);
        cache.insert("c", 3, TEN_S, t0);
        assert!(cache.len() <= 2);
        assert_eq!(cache.get(&"c", t0), Some(3));
    }

    #[test]
    fn each_entry_keeps_its_own_lifetime() {
        let cache = TtlCache::new(10);
        let t0 = Instant::now();
        cache.insert("allowed", true, Duration::from_secs(60), t0);
        cache.insert("refused", false, TEN_S, t0);
        let later = t0 + Duration::from_secs(30);
        assert_eq!(cache.get(&"allowed", later), Some(true));
        assert_eq!(cache.get(&"refused", later), None);
    }

    #[test]
    fn a_full_cache_drops_expired_entries_first() {
        let cache = TtlCache::new(2);
        let t0 = Instant::now();
        cache.insert("old", 1, Duration::from_secs(1), t0);
        cache.insert("kept", 2, TEN_S, t0);
        let t1 = t0 + Duration::from_secs(5);
        cache.insert("new", 3, TEN_S, t1);
        assert_eq!(cache.get(&"kept", t1), Some(2));
        assert_eq!(cache.get(&"new", t1), Some(3));
        assert_eq!(cache.len(), 2);
        // Replacing a key of a full cache evicts nothing.
        cache.insert("new", 4, TEN_S, t1);
        assert_eq!(cache.get(&"kept", t1), Some(2));
    }

    #[test]
    fn zero_ttl_and_clock_going_back_are_harmless() {
        let cache = TtlCache::new(2);
        let t0 = Instant::now() + Duration::from_secs(100);
        cache.insert("a", 1, Duration::ZERO, t0);
        assert!(cache.is_empty());
        cache.insert("a", 1, TEN_S, t0);
        assert_eq!(cache.get(&"a", t0 - Duration::from_secs(5)), Some(1));
    }

    proptest! {
        #[test]
        fn never_holds_more_than_its_bound(
            max in 1usize..8,
            ops in proptest::collection::vec((0u8..16, 0u64..20, 0u64..40), 0..64),
        ) {
            let cache = TtlCache::new(max);
            let t0 = Instant::now();
            for (key, ttl, at) in ops {
                let now = t0 + Duration::from_secs(at);
                cache.insert(key, at, Duration::from_secs(ttl), now);
                prop_assert!(cache.len() <= max);
                if ttl > 0 {
                    prop_assert_eq!(cache.get(&key, now), Some(at));
                }
            }
        }
    }
}
