//! What every differential test shares: running the Go original beside ours is each test's
//! own business; judging what came out is this module's. A difference fails the test unless
//! the service's migration guide documents it, and every documented difference must still be
//! in the guide (so neither the list nor the guide can drift from the other).
//!
//! - [`Verdict`] sorts each difference into documented or not, prints the summary line and
//!   fails with every undocumented difference in full.
//! - [`Documented`] ties a test's own description of a difference (`K`: which family, which
//!   request, which recommendation...) to a phrase of the guide's entry.
//! - [`json`] puts JSON answers in a canonical form; [`exposition`] compares metric
//!   expositions family by family.

pub mod exposition;
pub mod json;

use anyhow::{Result, bail};

use crate::process::repo_root;

/// A difference the migration guide documents: what it covers, in the test's own terms, and
/// `doc`, a phrase of the guide's entry.
pub struct Documented<K> {
    pub covers: K,
    pub doc: &'static str,
}

/// One original compared with ours, and the guide that explains where they differ.
pub struct Verdict<'a, K: 'static> {
    /// The Go original and its version, as the summary names it ("Crane v0.11.0").
    pub original: &'static str,
    /// The migration guide, from the repository root.
    pub guide: &'static str,
    pub documented: &'a [Documented<K>],
    explained: usize,
    undocumented: Vec<String>,
}

impl<'a, K> Verdict<'a, K> {
    pub fn new(
        original: &'static str,
        guide: &'static str,
        documented: &'a [Documented<K>],
    ) -> Self {
        Self {
            original,
            guide,
            documented,
            explained: 0,
            undocumented: Vec::new(),
        }
    }

    /// Fails unless the guide holds every documented difference's phrase.
    pub fn check_guide(&self) -> Result<()> {
        let text = std::fs::read_to_string(repo_root().join(self.guide))?;
        let missing: Vec<&str> = self
            .documented
            .iter()
            .map(|d| d.doc)
            .filter(|doc| !text.contains(doc))
            .collect();
        if !missing.is_empty() {
            bail!(
                "{} no longer documents these differences: {missing:?}",
                self.guide
            );
        }
        Ok(())
    }

    /// The first documented difference `covers` accepts.
    pub fn find(&self, covers: impl Fn(&K) -> bool) -> Option<&'a Documented<K>> {
        self.documented.iter().find(|d| covers(&d.covers))
    }

    /// One difference: explained by the guide when `covers` accepts a documented difference,
    /// otherwise `report` (rendered only then) is kept for the failure.
    pub fn differ(&mut self, covers: impl Fn(&K) -> bool, report: impl FnOnce() -> String) {
        if self.find(covers).is_some() {
            self.explained += 1;
        } else {
            self.undocumented.push(report());
        }
    }

    /// Differences the guide explains, so far.
    pub fn explained(&self) -> usize {
        self.explained
    }

    pub fn undocumented(&self) -> &[String] {
        &self.undocumented
    }

    /// Prints the summary line (`what` says what was compared, and how much) and fails
    /// listing every undocumented difference.
    pub fn judge(&self, what: &str) -> Result<()> {
        println!(
            "{what} vs {}: {} differences ({} documented, {} undocumented)",
            self.original,
            self.explained + self.undocumented.len(),
            self.explained,
            self.undocumented.len()
        );
        if !self.undocumented.is_empty() {
            bail!(
                "{} undocumented differences from {} ({what}; fix them or list them in {}):\n\n{}",
                self.undocumented.len(),
                self.original,
                self.guide,
                self.undocumented.join("\n\n")
            );
        }
        Ok(())
    }
}

/// `text` indented by four spaces, cut after 400 lines, for a report.
pub fn indent(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines.iter().take(400).map(|l| format!("    {l}")).collect();
    if lines.len() > 400 {
        out.push(format!("    ... {} more lines", lines.len() - 400));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOCS: &[Documented<&str>] = &[Documented {
        covers: "known",
        doc: "the guide says so",
    }];

    #[test]
    fn documented_differences_pass_and_others_fail_with_their_report() {
        let mut v = Verdict::new("Original v1", "docs/x.md", DOCS);
        v.differ(
            |k| *k == "known",
            || unreachable!("a documented difference needs no report"),
        );
        assert!(v.judge("ours").is_ok());
        v.differ(|k| *k == "new", || "new: ours 1, original 2".into());
        let err = v.judge("ours").unwrap_err().to_string();
        assert!(
            err.contains("1 undocumented differences from Original v1"),
            "{err}"
        );
        assert!(err.contains("new: ours 1, original 2"), "{err}");
        assert_eq!(v.explained(), 1);
    }

    #[test]
    fn indent_cuts_long_reports() {
        let long = "x\n".repeat(450);
        let shown = indent(&long);
        assert_eq!(shown.lines().count(), 401);
        assert!(shown.ends_with("... 50 more lines"));
    }
}
