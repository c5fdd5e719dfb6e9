//! A `labelSelector` request parameter as a matcher over object labels, with apimachinery's
//! semantics: what the API server would select, evaluated on objects held in memory (the
//! resource-metrics listers and the custom-metrics object cache).

use std::collections::BTreeMap;

use ferrocrane_core::promql::{OrderingRequirement, Requirement, parse_object_label_selector};

use crate::status::Status;

/// A parsed `labelSelector` (`!=` and `notin` also match objects without the label; `>`/`<`
/// compare integers).
#[derive(Debug, Clone, Default)]
pub struct ObjectSelector {
    requirements: Vec<Requirement>,
    orderings: Vec<OrderingRequirement>,
}

impl ObjectSelector {
    /// Whether an object whose labels `label` looks up is selected.
    pub fn matches_by<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(label(&r.key)))
            && self.orderings.iter().all(|o| o.matches(label(&o.key)))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_by(|k| labels.get(k).map(String::as_str))
    }
}

/// Parses a `labelSelector` parameter; a malformed one is a BadRequest.
pub fn label_selector(selector: &str) -> Result<ObjectSelector, Status> {
    let (requirements, orderings) =
        parse_object_label_selector(selector).map_err(|e| Status::bad_request(e.to_string()))?;
    Ok(ObjectSelector {
        requirements,
        orderings,
    })
}

/// Object labels from literal pairs, for tests.
#[cfg(test)]
pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors_match_like_apimachinery() {
        let web = labels(&[("app", "web"), ("tier", "a"), ("rank", "2")]);
        let bare = labels(&[]);
        for (sel, on_web, on_bare) in [
            ("", true, true),
            ("app=web", true, false),
            ("app==web", true, false),
            ("app!=web", false, true),
            ("tier in (a,b)", true, false),
            ("tier notin (a)", false, true),
            ("app", true, false),
            ("!app", false, true),
            ("app=web,tier=b", false, false),
            ("rank>1", true, false),
            ("rank<2", false, false),
            ("rank>1,app=web", true, false),
        ] {
            let s = label_selector(sel).unwrap();
            assert_eq!(s.matches(&web), on_web, "{sel} on web");
            assert_eq!(s.matches(&bare), on_bare, "{sel} on bare");
        }
        for bad in ["app in (", "rank>x", "rank>"] {
            let e = label_selector(bad).unwrap_err();
            assert_eq!(e.code, 400, "{bad}");
        }
    }
}
