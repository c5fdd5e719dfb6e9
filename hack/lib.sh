# Shared settings for the hack/ scripts. Sourced, never run.
#
# Build caches and tool binaries live outside the clone so a second checkout
# (CI on the same machine) reuses them; a fresh machine only builds them once.

FERROCRANE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FERROCRANE_CACHE="${FERROCRANE_CACHE:-$HOME/.cache/ferrocrane}"
FERROCRANE_BIN="$FERROCRANE_CACHE/bin"

export GOMODCACHE="${GOMODCACHE:-$HOME/.cache/go-mod}"
export GOCACHE="${GOCACHE:-$HOME/.cache/go-build}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ferrocrane/cargo-target}"

# The versions hack/tools/go.mod pins; setup.sh stamps them into the binaries.
KUBE_VERSION="v1.37.2"
HELM_VERSION="v4.3.2"
# The version hack/tools/kwok/go.mod pins (setup.sh checks they agree), and where setup.sh
# puts the manifests local-up.sh applies for it (CRDs, RBAC, stages, metrics).
KWOK_VERSION="v0.8.0"
KWOK_MANIFESTS="$FERROCRANE_CACHE/kwok-$KWOK_VERSION"
# The Thanos hack/tools/thanos/go.mod pins (setup.sh checks they agree). v0.42.5 needs
# Go 1.26.10, newer than the machine's.
THANOS_VERSION="v0.42.4"
# The cargo-fuzz hack/fuzz.sh installs for a campaign.
CARGO_FUZZ_VERSION="0.13.2"
# The cargo-nextest hack/setup.sh --tests installs for hack/test.sh.
CARGO_NEXTEST_VERSION="0.9.151"

# The kubectl every script and the e2e harness use: built by setup.sh at $KUBE_VERSION, so it
# is within the supported skew of the local kube-apiserver (a machine's own kubectl may not be).
export KUBECTL="$FERROCRANE_BIN/kubectl"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# A TCP port for a server to listen on (free_port N: N of them, one per line), from the one
# port source the scripts, benches and e2e tests share: below the ephemeral range, and never
# handed to two callers at once (hack/free_port.py says how).
free_port() {
    FERROCRANE_CACHE="$FERROCRANE_CACHE" python3 "$FERROCRANE_ROOT/hack/free_port.py" "${1:-1}" \
        || die "hack/free_port.py found no free port"
}
