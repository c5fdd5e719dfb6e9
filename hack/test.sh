#!/usr/bin/env bash
# Runs every test: setup, formatting, lints, the unit tests, the fuzz corpora's replay, the
# doc tests and the end-to-end tests against a real local control plane and Prometheus that
# this script starts and stops. Prints each phase's wall time at the end, pass or fail.
#
# Tests run under cargo-nextest (.config/nextest.toml): each in its own process, every
# binary's tests side by side, with test groups for what cannot share the machine.
# NEXTEST_ARGS adds arguments to that run, e.g. NEXTEST_ARGS="-E binary(=craned)".
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FERROCRANE_ROOT"

PHASES="$(mktemp -t ferrocrane-phases.XXXXXX)"
RUN_START=$SECONDS
phase() { # name command...
    local name=$1 start=$SECONDS rc=0
    shift
    log "$name"
    "$@" || rc=$?
    printf '%s\t%s\t%s\n' "$name" "$((SECONDS - start))" "$rc" >>"$PHASES"
    return "$rc"
}

CLUSTER_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ferrocrane-test.XXXXXX")"
CLUSTER_PID=""
JUNIT=""
finish() {
    local rc=$?
    [[ -z $CLUSTER_PID ]] || wait "$CLUSTER_PID" 2>/dev/null || true
    "$FERROCRANE_ROOT/hack/local-down.sh" "$CLUSTER_DIR" >/dev/null 2>&1 || true
    if [[ ${KEEP_CLUSTER_LOGS:-} == "" ]]; then rm -rf "$CLUSTER_DIR"; else log "cluster logs kept in $CLUSTER_DIR/logs"; fi
    python3 "$FERROCRANE_ROOT/hack/phase_table.py" "$PHASES" "$((SECONDS - RUN_START))" ${JUNIT:+"$JUNIT"} >&2 || true
    rm -f "$PHASES"
    exit "$rc"
}
trap finish EXIT

phase "setup" "$FERROCRANE_ROOT/hack/setup.sh" --tests >&2

# One cluster for the whole run; every e2e test takes a namespace of its own in it. It starts
# in the background while the lints and builds run: starting is mostly waiting on etcd and
# the API server, and the builds keep both cores busy meanwhile.
log "starting the local control plane in $CLUSTER_DIR (log: $CLUSTER_DIR/local-up.log)"
start_cluster() {
    local start=$SECONDS rc=0
    # The tests start the services they test themselves; the shared cluster stays bare.
    FERROCRANE_LOCAL_SERVICES="" "$FERROCRANE_ROOT/hack/local-up.sh" "$CLUSTER_DIR" >"$CLUSTER_DIR/local-up.log" 2>&1 || rc=$?
    printf '%s\t%s\t%s\n' "control plane start (beside the builds)" "$((SECONDS - start))" "$rc" >>"$PHASES"
    return "$rc"
}
start_cluster &
CLUSTER_PID=$!

phase "cargo fmt --check" cargo fmt --all --check
phase "cargo clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
# The binaries the e2e tests start, and every test binary, in the same profile and feature
# set, so nothing is compiled twice.
phase "build binaries and tests" bash -c 'cargo build --workspace --bins --locked && cargo nextest run --workspace --locked --no-run'
phase "doc tests" cargo test --workspace --locked --doc

if ! wait "$CLUSTER_PID"; then
    CLUSTER_PID=""
    tail -n 40 "$CLUSTER_DIR/local-up.log" >&2
    die "the local control plane did not start (whole log: $CLUSTER_DIR/local-up.log)"
fi
CLUSTER_PID=""

# nextest keeps its store in the workspace's target/ (git-ignored), not in CARGO_TARGET_DIR.
JUNIT="$FERROCRANE_ROOT/target/nextest/default/junit.xml"
rm -f "$JUNIT"
# shellcheck disable=SC2086 # NEXTEST_ARGS is split on purpose
FERROCRANE_E2E_ENV="$CLUSTER_DIR/env" phase "tests (unit, fuzz corpora, e2e)" \
    cargo nextest run --workspace --locked --no-fail-fast ${NEXTEST_ARGS:-}
