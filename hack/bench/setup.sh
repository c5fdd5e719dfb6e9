#!/usr/bin/env bash
# Builds the Go kube-state-metrics pinned in hack/tools/kube-state-metrics/go.mod into
# $FERROCRANE_CACHE/bin/kube-state-metrics, for hack/bench/ksm.sh. Idempotent: the binary is
# stamped with what it was built from (the pinned module and this recipe), like hack/setup.sh
# does, and rebuilt only when either changes. Not part of hack/setup.sh or hack/test.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

KSM_GO_VERSION="v2.20.0"
KSM_TOOLS="$FERROCRANE_ROOT/hack/tools/kube-state-metrics"

build_kube_state_metrics() {
    cd "$KSM_TOOLS"
    go build -trimpath \
        -ldflags "-s -w -X github.com/prometheus/common/version.Version=$KSM_GO_VERSION -X github.com/prometheus/common/version.Branch=release-${KSM_GO_VERSION%.*} -X github.com/prometheus/common/version.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)" \
        -o "$FERROCRANE_BIN/kube-state-metrics" k8s.io/kube-state-metrics/v2
}

ksm_stamp() {
    { cat "$KSM_TOOLS/go.mod" "$KSM_TOOLS/go.sum"; declare -f build_kube_state_metrics; echo "$KSM_GO_VERSION"; } \
        | sha256sum | cut -d' ' -f1
}

stamp_file="$FERROCRANE_BIN/.stamp-kube-state-metrics"
want="$(ksm_stamp)"
if [[ -f $stamp_file && "$(cat "$stamp_file")" == "$want" && -x $FERROCRANE_BIN/kube-state-metrics ]]; then
    exit 0
fi
command -v go >/dev/null || die "go is required to build kube-state-metrics (hack/tools/kube-state-metrics); install Go 1.26+"
grep -q "k8s.io/kube-state-metrics/v2 $KSM_GO_VERSION" "$KSM_TOOLS/go.mod" \
    || die "$KSM_TOOLS/go.mod does not pin k8s.io/kube-state-metrics/v2 $KSM_GO_VERSION"
mkdir -p "$FERROCRANE_BIN"
log "building kube-state-metrics $KSM_GO_VERSION (Go) into $FERROCRANE_BIN"
build_kube_state_metrics
echo "$want" >"$stamp_file"
"$FERROCRANE_BIN/kube-state-metrics" version 2>&1 | head -1 >&2
