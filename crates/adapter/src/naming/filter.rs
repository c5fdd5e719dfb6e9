//! `seriesFilters` entries: a regex that must (`is`) or must not (`isNot`) match the series name.

use regex::Regex;

use super::regex_error;
use crate::config::RegexFilter;

/// A compiled series filter. Matching is unanchored, as Go's `MatchString`.
#[derive(Debug, Clone)]
pub struct ReMatcher {
    regex: Regex,
    positive: bool,
}

impl ReMatcher {
    /// Compiles a filter; errors carry upstream's wording.
    pub fn new(cfg: &RegexFilter) -> Result<Self, String> {
        let (raw, positive) = match (cfg.is.is_empty(), cfg.is_not.is_empty()) {
            (false, false) => {
                return Err(format!(
                    "cannot have both an `is` ({}) and `isNot` ({}) expression in a single filter",
                    super::quote(&cfg.is),
                    super::quote(&cfg.is_not)
                ));
            }
            (true, true) => {
                return Err("must have either an `is` or `isNot` expression in a filter".into());
            }
            (false, true) => (&cfg.is, true),
            (true, false) => (&cfg.is_not, false),
        };
        let regex = Regex::new(raw).map_err(|e| {
            format!(
                "unable to compile series filter {}: {}",
                super::quote(raw),
                regex_error(&e)
            )
        })?;
        Ok(ReMatcher { regex, positive })
    }

    /// Whether `name` passes the filter.
    pub fn matches(&self, name: &str) -> bool {
        self.regex.is_match(name) == self.positive
    }
}
