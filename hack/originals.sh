#!/usr/bin/env bash
# Builds the Go originals that the differential tests (hack/test.sh) and the side-by-side
# benchmarks (hack/bench/) run beside ferrocrane, into $FERROCRANE_CACHE/bin:
#   kube-state-metrics   k8s.io/kube-state-metrics/v2 v2.20.0, pinned in hack/tools/kube-state-metrics
#                        (tests/tests/ksm_differential.rs, hack/bench/ksm.sh)
#   prometheus-adapter   sigs.k8s.io/prometheus-adapter v0.12.0 (cmd/adapter), pinned in
#                        hack/tools/prometheus-adapter (hack/bench/adapter.sh)
#
#   hack/originals.sh [kube-state-metrics|prometheus-adapter]...     (default: both;
#                                                                     hack/setup.sh runs it)
#
# Idempotent: each binary is stamped with what it was built from (its pinned module and this
# recipe), like hack/setup.sh does, and rebuilt only when either changes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KSM_GO_VERSION="v2.20.0"
ADAPTER_GO_VERSION="v0.12.0"

# name -> module folder, main package, pinned version, extra -ldflags
tool_dir() { echo "$FERROCRANE_ROOT/hack/tools/$1"; }
tool_pkg() {
    case $1 in
        kube-state-metrics) echo "k8s.io/kube-state-metrics/v2" ;;
        prometheus-adapter) echo "sigs.k8s.io/prometheus-adapter/cmd/adapter" ;;
    esac
}
tool_module() {
    case $1 in
        kube-state-metrics) echo "k8s.io/kube-state-metrics/v2 $KSM_GO_VERSION" ;;
        prometheus-adapter) echo "sigs.k8s.io/prometheus-adapter $ADAPTER_GO_VERSION" ;;
    esac
}
tool_ldflags() {
    case $1 in
        # kube-state-metrics prints these in `version` and its build_info metric.
        kube-state-metrics) echo "-X github.com/prometheus/common/version.Version=$KSM_GO_VERSION -X github.com/prometheus/common/version.Branch=release-${KSM_GO_VERSION%.*}" ;;
        prometheus-adapter) echo "" ;;
    esac
}

build_tool() { # name
    cd "$(tool_dir "$1")"
    go build -trimpath -ldflags "-s -w $(tool_ldflags "$1")" -o "$FERROCRANE_BIN/$1" "$(tool_pkg "$1")"
}

tool_stamp() { # name
    { cat "$(tool_dir "$1")/go.mod" "$(tool_dir "$1")/go.sum"; declare -f build_tool tool_pkg tool_ldflags; tool_module "$1"; } \
        | sha256sum | cut -d' ' -f1
}

ensure_tool() { # name
    local name=$1 stamp_file="$FERROCRANE_BIN/.stamp-$1" want
    want="$(tool_stamp "$name")"
    if [[ -f $stamp_file && "$(cat "$stamp_file")" == "$want" && -x $FERROCRANE_BIN/$name ]]; then
        return
    fi
    command -v go >/dev/null || die "go is required to build $name (hack/tools/$name); install Go 1.26+"
    grep -q "$(tool_module "$name")" "$(tool_dir "$name")/go.mod" \
        || die "$(tool_dir "$name")/go.mod does not pin $(tool_module "$name")"
    mkdir -p "$FERROCRANE_BIN"
    log "building $name ($(tool_module "$name"), Go) into $FERROCRANE_BIN"
    (build_tool "$name")
    echo "$want" >"$stamp_file"
}

tools=("$@")
((${#tools[@]})) || tools=(kube-state-metrics prometheus-adapter)
for t in "${tools[@]}"; do
    [[ -n "$(tool_pkg "$t")" ]] || die "unknown tool '$t' (kube-state-metrics or prometheus-adapter)"
    ensure_tool "$t"
done
