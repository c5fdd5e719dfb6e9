//! The committed corpora (`fuzz/corpus/TARGET/`) as ordinary tests: every input a campaign
//! kept, and every seed, runs through its target on each `hack/test.sh`, without libFuzzer,
//! nightly flags or an instrumented build.

use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};

/// Runs `body` on `bytes` decoded as libfuzzer-sys decodes a typed target's input: inputs
/// shorter than the type's minimum size, or that do not decode, are skipped, as the fuzzer
/// skips them. Returns whether `body` ran.
pub fn typed<'a, T: Arbitrary<'a>>(bytes: &'a [u8], body: fn(T)) -> bool {
    if bytes.len() < T::size_hint(0).0 {
        return false;
    }
    match T::arbitrary_take_rest(Unstructured::new(bytes)) {
        Ok(input) => {
            body(input);
            true
        }
        Err(_) => false,
    }
}

/// `fuzz/` in this checkout.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The corpus files of `target`, sorted so a failure names the same file every run.
pub fn corpus_files(target: &str) -> std::io::Result<Vec<PathBuf>> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()?;
    files.retain(|p| p.is_file());
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::*;
    use crate::TARGETS;

    /// Runs every corpus file of `name` through its target.
    fn replay(name: &str) {
        let target = TARGETS
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not in TARGETS"));
        let files =
            corpus_files(name).unwrap_or_else(|e| panic!("reading fuzz/corpus/{name}: {e}"));
        replay_files(name, target.run, &files);
    }

    /// Runs `files` through `run`: a panic names the file that caused it; a corpus that is
    /// empty, or none of whose files reaches the target, fails too.
    fn replay_files(name: &str, run: fn(&[u8]) -> bool, files: &[PathBuf]) {
        assert!(
            !files.is_empty(),
            "fuzz/corpus/{name} is empty: commit at least one seed"
        );
        let mut reached = 0;
        for file in files {
            let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            match catch_unwind(AssertUnwindSafe(|| run(&bytes))) {
                Ok(true) => reached += 1,
                Ok(false) => {}
                Err(_) => {
                    panic!(
                        "fuzz target {name} failed on {} (cd fuzz && cargo fuzz fmt -O -a -s none {name} {} prints it)",
                        file.display(),
                        file.display()
                    );
                }
            }
        }
        assert!(
            reached > 0,
            "no file of fuzz/corpus/{name} decodes into the target's input"
        );
    }

    macro_rules! replay_tests {
        ($($name:ident)*) => {
            $(#[test] fn $name() { replay(stringify!($name)); })*
            const REPLAYED: &[&str] = &[$(stringify!($name)),*];
        };
    }

    replay_tests! {
        core_quantity core_duration core_label_selector core_prometheus_response core_exposition
        core_promql_template core_front_proxy adapter_config adapter_request ksm_config ksm_flags
        craned_config craned_rule
    }

    fn names(it: impl IntoIterator<Item = String>) -> BTreeSet<String> {
        it.into_iter().collect()
    }

    /// A target added to fuzz/ without its function here, its corpus or its replay test would
    /// never run in CI; the four lists must agree.
    #[test]
    fn every_fuzz_target_has_a_corpus_and_a_replay() {
        let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
        let bins = names(manifest.lines().filter_map(|l| {
            let v = l.strip_prefix("name = \"")?.strip_suffix('"')?;
            (v != "ferrocrane-fuzz").then(|| v.to_owned())
        }));
        let corpora = names(
            std::fs::read_dir(fuzz_dir().join("corpus"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned()),
        );
        let targets = names(TARGETS.iter().map(|t| t.name.to_owned()));
        let replayed = names(REPLAYED.iter().map(|n| (*n).to_owned()));
        assert!(bins.len() >= 13, "fuzz/Cargo.toml lists only {bins:?}");
        assert_eq!(bins, corpora, "fuzz/Cargo.toml's targets vs fuzz/corpus/");
        assert_eq!(bins, targets, "fuzz/Cargo.toml's targets vs TARGETS");
        assert_eq!(
            bins, replayed,
            "fuzz/Cargo.toml's targets vs the replay tests"
        );
    }

    /// The replay decodes as libFuzzer's entry point does: a `&str` target takes the bytes'
    /// valid UTF-8 prefix, so a seed written as text reaches the target whole.
    #[test]
    fn typed_inputs_decode_as_the_fuzzer_decodes_them() {
        fn expect_whole(s: &str) {
            assert_eq!(s, "1h30m");
        }
        assert!(typed(b"1h30m", expect_whole));
        fn expect_prefix(s: &str) {
            assert_eq!(s, "ok");
        }
        assert!(typed(b"ok\xff", expect_prefix));
    }

    /// A target that panics fails its replay with the file's name, so a crash found by a
    /// campaign and committed to the corpus fails CI until it is fixed.
    #[test]
    fn a_panicking_target_fails_the_replay_naming_the_file() {
        let files = corpus_files("core_duration").unwrap();
        let caught = catch_unwind(|| replay_files("core_duration", |_| panic!("finding"), &files));
        let message = caught.unwrap_err();
        let message = message.downcast_ref::<String>().unwrap();
        assert!(
            message.contains(&files[0].display().to_string()),
            "{message}"
        );
    }

    /// A corpus none of whose files decodes tests nothing, and says so.
    #[test]
    fn a_corpus_that_never_reaches_its_target_fails() {
        let files = corpus_files("core_duration").unwrap();
        assert!(catch_unwind(|| replay_files("core_duration", |_| false, &files)).is_err());
    }
}
