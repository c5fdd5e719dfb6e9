#!/usr/bin/env bash
# Builds the Go originals that the differential tests (hack/test.sh) and the side-by-side
# benchmarks (hack/bench/) run beside ferrocrane, into $FERROCRANE_CACHE/bin:
#   kube-state-metrics   k8s.io/kube-state-metrics/v2 v2.20.0, pinned in hack/tools/kube-state-metrics
#                        (tests/tests/ksm/differential.rs, hack/bench/ksm.sh)
#   prometheus-adapter   sigs.k8s.io/prometheus-adapter v0.12.0 (cmd/adapter), pinned in
#                        hack/tools/prometheus-adapter (tests/tests/adapter/differential/,
#                        hack/bench/adapter.sh)
#   crane-craned         github.com/gocrane/crane v0.11.0 (cmd/craned, CGO off), pinned in
#                        hack/tools/crane (tests/tests/craned/differential/)
#
#   hack/originals.sh [kube-state-metrics|prometheus-adapter|crane-craned]...
#                                                  (default: all; hack/setup.sh runs it)
#
# Idempotent: each binary is stamped with what it was built from (its pinned module and this
# recipe), like hack/setup.sh does, and rebuilt only when either changes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KSM_GO_VERSION="v2.20.0"
ADAPTER_GO_VERSION="v0.12.0"
CRANE_GO_VERSION="v0.11.0"

# name -> module folder, main package, pinned version, extra -ldflags
tool_dir() {
    case $1 in
        crane-craned) echo "$FERROCRANE_ROOT/hack/tools/crane" ;;
        *) echo "$FERROCRANE_ROOT/hack/tools/$1" ;;
    esac
}
tool_pkg() {
    case $1 in
        kube-state-metrics) echo "k8s.io/kube-state-metrics/v2" ;;
        prometheus-adapter) echo "sigs.k8s.io/prometheus-adapter/cmd/adapter" ;;
        crane-craned) echo "github.com/gocrane/crane/cmd/craned" ;;
    esac
}
tool_module() {
    case $1 in
        kube-state-metrics) echo "k8s.io/kube-state-metrics/v2 $KSM_GO_VERSION" ;;
        prometheus-adapter) echo "sigs.k8s.io/prometheus-adapter $ADAPTER_GO_VERSION" ;;
        crane-craned) echo "github.com/gocrane/crane $CRANE_GO_VERSION" ;;
    esac
}
tool_ldflags() {
    case $1 in
        # kube-state-metrics prints these in `version` and its build_info metric.
        kube-state-metrics) echo "-X github.com/prometheus/common/version.Version=$KSM_GO_VERSION -X github.com/prometheus/common/version.Branch=release-${KSM_GO_VERSION%.*}" ;;
        prometheus-adapter | crane-craned) echo "" ;;
    esac
}

build_tool() { # name
    cd "$(tool_dir "$1")"
    # Crane's craned links cadvisor, whose cgo parts are optional; CGO off keeps the build
    # free of a C toolchain and the binary static.
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(tool_ldflags "$1")" -o "$FERROCRANE_BIN/$1" "$(tool_pkg "$1")"
}

# Bump when build_tool changes how every binary is built. The stamp holds this tool's own
# inputs only, so adding a tool does not rebuild the others.
RECIPE=2
tool_stamp() { # name
    { cat "$(tool_dir "$1")/go.mod" "$(tool_dir "$1")/go.sum"
      echo "recipe=$RECIPE pkg=$(tool_pkg "$1") ldflags=$(tool_ldflags "$1") module=$(tool_module "$1")"; } \
        | sha256sum | cut -d' ' -f1
}

# What else a tool's tests need beside its binary: for Crane, the CRDs its chart installs, as
# the gocrane/api version it was built with ships them (no status subresource).
tool_extras() { # name
    case $1 in
        crane-craned) echo "$FERROCRANE_BIN/crane-crds" ;;
    esac
}

copy_extras() { # name
    case $1 in
        crane-craned)
            local api out
            api="$(cd "$(tool_dir "$1")" && go list -m -f '{{.Dir}}' github.com/gocrane/api)"
            out="$(tool_extras "$1")"
            rm -rf "$out" && mkdir -p "$out"
            cp "$api"/artifacts/deploy/*.crane.io_*.yaml "$out/"
            ;;
    esac
}

ensure_tool() { # name
    local name=$1 stamp_file="$FERROCRANE_BIN/.stamp-$1" want
    want="$(tool_stamp "$name")"
    local extras
    extras="$(tool_extras "$name")"
    if [[ -f $stamp_file && "$(cat "$stamp_file")" == "$want" && -x $FERROCRANE_BIN/$name ]] \
        && [[ -z $extras || -d $extras ]]; then
        return
    fi
    command -v go >/dev/null || die "go is required to build $name (hack/tools/$name); install Go 1.26+"
    grep -q "$(tool_module "$name")" "$(tool_dir "$name")/go.mod" \
        || die "$(tool_dir "$name")/go.mod does not pin $(tool_module "$name")"
    mkdir -p "$FERROCRANE_BIN"
    log "building $name ($(tool_module "$name"), Go) into $FERROCRANE_BIN"
    (build_tool "$name")
    copy_extras "$name"
    echo "$want" >"$stamp_file"
}

tools=("$@")
((${#tools[@]})) || tools=(kube-state-metrics prometheus-adapter crane-craned)
for t in "${tools[@]}"; do
    [[ -n "$(tool_pkg "$t")" ]] || die "unknown tool '$t' (kube-state-metrics, prometheus-adapter or crane-craned)"
    ensure_tool "$t"
done
