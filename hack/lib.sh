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

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
