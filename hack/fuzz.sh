#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a fixed time each and prints what it did.
#
#   hack/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 10 s, every target)
#
# hack/test.sh runs it time-boxed ($FERROCRANE_FUZZ_SECONDS, 10 s by default); a longer
# campaign is the same command with more seconds (docs/reliability.md records one).
#
# Each target starts from the committed seeds (fuzz/corpus/TARGET, read only) plus what
# earlier runs on this machine found ($FERROCRANE_CACHE/fuzz-corpus/TARGET), so CI's short
# runs build on each other instead of starting over. A crash stops the script: the input is
# in fuzz/artifacts/TARGET/ and becomes a unit test next to the code it broke.
#
# Built with the workspace's own toolchain (RUSTC_BOOTSTRAP lets stable take cargo-fuzz's
# flags), with debug assertions (an overflow on a size read from input is a crash here) and
# no sanitizer: the only unsafe code is one mallopt call at startup, and the bugs fuzzing
# finds in safe Rust are panics, overflows and runaway allocations (libFuzzer's -rss_limit_mb).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds="${1:-10}"
shift || true
[[ $seconds =~ ^[0-9]+$ ]] || die "usage: hack/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]"
# cargo-fuzz, a cargo subcommand from crates.io, built once per machine on the first campaign
# (hack/test.sh needs none of it: the corpora replay as ordinary tests).
if [[ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

# The targets build from a mirror of the sources at a fixed place in which only files whose
# content changed are rewritten: cargo decides what to rebuild by path and mtime, and every CI
# clone has a new path and new mtimes, which rebuilt all four crates (optimised and
# instrumented, 6.5 min) on every run.
mirror="$FERROCRANE_CACHE/fuzz-src"
mirror_sources() {
    local f
    mkdir -p "$mirror"
    (cd "$FERROCRANE_ROOT" && find Cargo.toml crates fuzz -type f \
        -not -path 'fuzz/target/*' -not -path 'fuzz/artifacts/*' -not -path 'fuzz/coverage/*') |
        sort >"$mirror.files"
    while read -r f; do
        if ! cmp -s "$FERROCRANE_ROOT/$f" "$mirror/$f"; then
            mkdir -p "$(dirname "$mirror/$f")"
            cp "$FERROCRANE_ROOT/$f" "$mirror/$f"
        fi
    done <"$mirror.files"
    # Files gone from the sources go from the mirror too.
    (cd "$mirror" && find Cargo.toml crates fuzz -type f \
        -not -path 'fuzz/target/*' -not -path 'fuzz/artifacts/*' -not -path 'fuzz/coverage/*' 2>/dev/null) |
        sort | comm -13 "$mirror.files" - | while read -r f; do rm -f "$mirror/$f"; done
}
mirror_sources
cd "$mirror/fuzz"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$FERROCRANE_CACHE/fuzz-target"
fuzz_flags=(-O -a -s none)

log "building the fuzz targets"
cargo fuzz build "${fuzz_flags[@]}" >&2

if (($# > 0)); then targets=("$@"); else mapfile -t targets < <(cargo fuzz list); fi

printf '%-26s %12s %10s %8s\n' target executions "per second" corpus
for t in "${targets[@]}"; do
    [[ -d corpus/$t ]] || die "fuzz target $t has no seed corpus in fuzz/corpus/$t"
    scratch="$FERROCRANE_CACHE/fuzz-corpus/$t"
    mkdir -p "$scratch" "artifacts/$t"
    out="$(mktemp)"
    # -rss_limit_mb: a decoder that allocates what the input announces is a finding.
    if ! cargo fuzz run "${fuzz_flags[@]}" "$t" "$scratch" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" >"$out" 2>&1; then
        tail -n 40 "$out" >&2
        rm -f "$out"
        mkdir -p "$FERROCRANE_ROOT/fuzz/artifacts/$t"
        cp -r "artifacts/$t/." "$FERROCRANE_ROOT/fuzz/artifacts/$t/"
        die "fuzz target $t crashed; the input is in fuzz/artifacts/$t/ (cd fuzz && cargo fuzz fmt -O -a -s none $t FILE prints it)"
    fi
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out" | tail -1)"
    rm -f "$out"
    printf '%-26s %12s %10s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$(find "$scratch" -type f | wc -l)"
done
