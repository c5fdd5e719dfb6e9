#!/usr/bin/env bash
# Runs every test: setup, formatting, lints, unit tests and the end-to-end tests against
# a real local control plane and Prometheus that this script starts and stops.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FERROCRANE_ROOT"

"$FERROCRANE_ROOT/hack/setup.sh" --tests >&2

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "building binaries and tests"
cargo build --workspace --bins --locked
cargo test --workspace --locked --no-run

# Every parser and decoder that reads outside input, fuzzed a few seconds each (issue 13).
log "fuzzing (${FERROCRANE_FUZZ_SECONDS:-10} s per target)"
"$FERROCRANE_ROOT/hack/fuzz.sh" "${FERROCRANE_FUZZ_SECONDS:-10}"

# One cluster for the whole run; every e2e test takes a namespace of its own in it.
CLUSTER_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ferrocrane-test.XXXXXX")"
cleanup() {
    "$FERROCRANE_ROOT/hack/local-down.sh" "$CLUSTER_DIR" || true
    if [[ ${KEEP_CLUSTER_LOGS:-} == "" ]]; then rm -rf "$CLUSTER_DIR"; else log "cluster logs kept in $CLUSTER_DIR/logs"; fi
}
trap cleanup EXIT
log "starting the local control plane in $CLUSTER_DIR"
# The tests start the services they test themselves; the shared cluster stays bare.
FERROCRANE_LOCAL_SERVICES="" "$FERROCRANE_ROOT/hack/local-up.sh" "$CLUSTER_DIR" >&2

log "cargo test"
FERROCRANE_E2E_ENV="$CLUSTER_DIR/env" cargo test --workspace --locked --no-fail-fast
