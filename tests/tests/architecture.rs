//! shared/ARCHITECTURE.md's rules that the source tree itself can show, checked on every run:
//! no module cycles at any level of any crate, no source file over 600 lines but generated
//! tables (tests, benches and fuzz targets included), and every folder module opening with a
//! line that says what it is for.
//! Run alone: `cargo test -p ferrocrane-e2e --test architecture` (no cluster needed).

use std::fs;
use std::path::{Path, PathBuf};

use ferrocrane_e2e::layout::{module_cycles, rust_files};
use ferrocrane_e2e::repo_root;

/// Generated tables, exempt from the size limit: nobody reads them line by line.
const GENERATED: &[&str] = &["crates/core/src/promql/isprint_table.rs"];
const MAX_LINES: usize = 600;

fn crate_sources() -> Vec<PathBuf> {
    let root = repo_root();
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path().join("src")))
        .filter(|p| p.is_dir())
        .collect();
    dirs.push(root.join("tests/src"));
    dirs.sort();
    dirs
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn no_module_cycles_in_any_crate() {
    let mut found = Vec::new();
    for src in crate_sources() {
        for cycle in module_cycles(&src).expect("sources are readable") {
            found.push(format!("{}: {cycle}", relative(&src)));
        }
    }
    assert!(
        found.is_empty(),
        "module cycles (break them by moving the shared item to the module that owns it):\n{}",
        found.join("\n")
    );
}

/// Every folder of Rust sources: the crates' `src/`, and the test, bench and fuzz-target
/// folders beside them.
fn all_sources() -> Vec<PathBuf> {
    let root = repo_root();
    let mut dirs = crate_sources();
    for krate in fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .flatten()
    {
        dirs.extend(["tests", "benches"].map(|d| krate.path().join(d)));
    }
    dirs.extend([root.join("tests/tests"), root.join("fuzz/fuzz_targets")]);
    dirs.retain(|d| d.is_dir());
    dirs.sort();
    dirs
}

#[test]
fn the_size_limit_covers_tests_benches_and_fuzz_targets() {
    let dirs: Vec<String> = all_sources().iter().map(|d| relative(d)).collect();
    for expected in [
        "tests/tests",
        "tests/src",
        "crates/ksm/tests",
        "crates/ksm/benches",
        "fuzz/fuzz_targets",
    ] {
        assert!(
            dirs.iter().any(|d| d == expected),
            "{expected} is not checked: {dirs:?}"
        );
    }
}

#[test]
fn no_source_file_over_the_size_limit() {
    let mut big = Vec::new();
    for src in all_sources() {
        for file in rust_files(&src).expect("sources are readable") {
            let rel = relative(&file);
            if GENERATED.contains(&rel.as_str()) {
                continue;
            }
            let lines = fs::read_to_string(&file).expect("readable").lines().count();
            if lines > MAX_LINES {
                big.push(format!("{rel}: {lines} lines"));
            }
        }
    }
    assert!(
        big.is_empty(),
        "files over {MAX_LINES} lines (split them along a real seam):\n{}",
        big.join("\n")
    );
}

#[test]
fn every_folder_module_states_its_purpose_first() {
    let mut silent = Vec::new();
    for src in crate_sources() {
        for file in rust_files(&src).expect("sources are readable") {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !matches!(name, "mod.rs" | "lib.rs") {
                continue;
            }
            let text = fs::read_to_string(&file).expect("readable");
            if !text.trim_start().starts_with("//!") {
                silent.push(relative(&file));
            }
        }
    }
    assert!(
        silent.is_empty(),
        "these lib.rs/mod.rs files do not open with a `//!` line saying what the folder is for:\n{}",
        silent.join("\n")
    );
}
