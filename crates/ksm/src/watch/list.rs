//! `--use-apiserver-cache` and `--object-limit`: how every list of every watcher is made.

use kube::runtime::watcher;

/// `--use-apiserver-cache` and `--object-limit`, applied to every list of every watcher
/// (built-in and custom resources alike, as upstream's instrumented ListerWatcher does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListSettings {
    /// List with `resourceVersion=0`: served from the API server's watch cache.
    pub use_apiserver_cache: bool,
    /// At most this many objects from each (re)list; objects created later still arrive
    /// through the watch, as upstream (its limit truncates the list, not the watch).
    pub object_limit: Option<u64>,
}

/// Largest page requested when a limit is set: a small limit needs one small request.
const MAX_PAGE: u64 = 500;

impl ListSettings {
    /// The watcher configuration for one list/watch with an optional field selector.
    pub fn watcher_config(&self, fields: Option<&str>) -> watcher::Config {
        let mut config = watcher::Config::default();
        if let Some(f) = fields.filter(|f| !f.is_empty()) {
            config = config.fields(f);
        }
        if self.use_apiserver_cache {
            config = config.any_semantic();
        }
        if let Some(limit) = self.object_limit {
            // Bounded by MAX_PAGE, so the conversion cannot fail.
            config = config.page_size(u32::try_from(limit.clamp(1, MAX_PAGE)).unwrap_or(500));
        }
        config
    }

    /// A fresh budget for one list.
    pub fn budget(&self) -> ListBudget {
        ListBudget {
            limit: self.object_limit,
            admitted: 0,
        }
    }
}

/// Counts the objects of one (re)list against `--object-limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListBudget {
    limit: Option<u64>,
    admitted: u64,
}

impl ListBudget {
    /// Starts counting a new list.
    pub fn restart(&mut self) {
        self.admitted = 0;
    }

    /// Whether one more listed object may be stored.
    pub fn admit(&mut self) -> bool {
        if self.limit.is_some_and(|l| self.admitted >= l) {
            return false;
        }
        self.admitted += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_settings_shape_the_watcher_config() {
        let plain = ListSettings::default().watcher_config(None);
        assert_eq!(plain.field_selector, None);
        assert_eq!(
            plain.initial_list_strategy,
            watcher::InitialListStrategy::ListWatch
        );
        let cached = ListSettings {
            use_apiserver_cache: true,
            object_limit: Some(3),
        }
        .watcher_config(Some("spec.nodeName="));
        assert_eq!(cached.field_selector.as_deref(), Some("spec.nodeName="));
        assert_eq!(cached.list_semantic, watcher::ListSemantic::Any);
        assert_eq!(cached.page_size, Some(3));
        let big = ListSettings {
            use_apiserver_cache: false,
            object_limit: Some(100_000),
        }
        .watcher_config(Some(""));
        assert_eq!(big.field_selector, None);
        assert_eq!(big.page_size, Some(500));
    }

    #[test]
    fn budget_admits_up_to_the_limit_per_list() {
        let mut b = ListSettings {
            use_apiserver_cache: false,
            object_limit: Some(2),
        }
        .budget();
        assert!(b.admit() && b.admit() && !b.admit());
        b.restart();
        assert!(b.admit());
        let mut unlimited = ListSettings::default().budget();
        assert!((0..10_000).all(|_| unlimited.admit()));
    }
}
