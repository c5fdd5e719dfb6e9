#!/usr/bin/env bash
# Installs what hack/local-up.sh and the tests need, idempotently.
#
#   hack/setup.sh          what a local cluster and its demo need (hack/local-up.sh runs it):
#                          Prometheus and promtool and tzdata from Debian's packages;
#                          kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and
#                          etcd built from the Go modules pinned in hack/tools/go.mod, and kwok
#                          from hack/tools/kwok/go.mod, into $FERROCRANE_CACHE/bin
#   hack/setup.sh --tests  that, and what only the tests need (hack/test.sh runs it):
#                          rustfmt and clippy; cargo-nextest (the test runner); helm; iproute2 (ss)
#                          and VictoriaMetrics from Debian; Thanos from hack/tools/thanos (a query
#                          layer the adapter and craned are tested on); the Go originals the
#                          differential tests run beside ours (kube-state-metrics,
#                          prometheus-adapter, Crane's craned and its CRDs), by hack/originals.sh
#
# cargo-fuzz is not here: hack/fuzz.sh installs it when a campaign runs; the tests replay the
# committed fuzz corpora without it.
# A second run finds everything in place and takes seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
    "") FOR_TESTS="" ;;
    --tests) FOR_TESTS=1 ;;
    *) die "usage: hack/setup.sh [--tests]" ;;
esac

apt_install() { # package...
    command -v apt-get >/dev/null || die "missing $*; apt-get is not available to install it"
    export DEBIAN_FRONTEND=noninteractive
    [[ -n ${APT_UPDATED:-} ]] || { apt-get update -qq; APT_UPDATED=1; }
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# CronJob time zones are read from the system zoneinfo, as Go's time.LoadLocation does.
install_tzdata() {
    [[ -f /usr/share/zoneinfo/Asia/Shanghai ]] && return
    log "installing Debian's tzdata"
    apt_install tzdata
}

# ss (iproute2): the sharding e2e reads each exporter's received TCP bytes from the kernel.
install_ss() {
    command -v ss >/dev/null && return
    log "installing Debian's iproute2 (ss)"
    apt_install iproute2
}

# Installs Debian packages that ship a system service without starting it: the tests start
# their own instances on free ports.
apt_install_quiet_service() { # package...
    local policy=/usr/sbin/policy-rc.d created_policy=""
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created_policy=1
    fi
    apt_install "$@"
    [[ -n $created_policy ]] && rm -f "$policy"
    return 0
}

install_prometheus() {
    if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
        return
    fi
    command -v apt-get >/dev/null || die "prometheus and promtool are missing and apt-get is not available: install Debian's 'prometheus' package"
    log "installing Debian's prometheus package (brings promtool)"
    apt_install_quiet_service prometheus
    command -v promtool >/dev/null || die "Debian's prometheus package installed but promtool is not on PATH"
}

# VictoriaMetrics single-node, one of the Prometheus-compatible backends the adapter and
# craned are tested on (issue 16; docs/backends.md).
install_victoria_metrics() {
    command -v victoria-metrics >/dev/null && return
    command -v apt-get >/dev/null || die "victoria-metrics is missing and apt-get is not available: install Debian's 'victoria-metrics' package"
    log "installing Debian's victoria-metrics package"
    apt_install_quiet_service victoria-metrics
    command -v victoria-metrics >/dev/null || die "Debian's victoria-metrics package installed but victoria-metrics is not on PATH"
}

# Each stamp records what its binaries were built from (the pinned modules and the build
# recipe below); when either changes they are rebuilt, and only then. The control plane and
# kwok have separate stamps: bumping one does not rebuild the other.
CONTROL_PLANE_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)

tools_stamp() {
    { cat "$FERROCRANE_ROOT/hack/tools/go.mod" "$FERROCRANE_ROOT/hack/tools/go.sum"; declare -f build_go_tools kube_ldflags; echo "$KUBE_VERSION $HELM_VERSION"; } \
        | sha256sum | cut -d' ' -f1
}

kwok_stamp() {
    { cat "$FERROCRANE_ROOT/hack/tools/kwok/go.mod" "$FERROCRANE_ROOT/hack/tools/kwok/go.sum"; declare -f build_kwok; echo "$KWOK_VERSION"; } \
        | sha256sum | cut -d' ' -f1
}

up_to_date() { # stamp-file wanted-stamp binary...
    local stamp_file=$1 want=$2 b; shift 2
    [[ -f $stamp_file && "$(cat "$stamp_file")" == "$want" ]] || return 1
    for b in "$@"; do [[ -x $FERROCRANE_BIN/$b ]] || return 1; done
}

need_go() {
    command -v go >/dev/null || die "go is required to build $1 (hack/tools); install Go 1.26+"
}

# The version ldflags of the Kubernetes release build (hack/lib/version.sh), so the binaries
# report $KUBE_VERSION: kubectl version, the API server's /version and skew checks read them.
kube_ldflags() {
    local kv=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version date major minor pkg
    date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    major="${KUBE_VERSION#v}"; major="${major%%.*}"
    minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
    local kflags="-s -w"
    for pkg in $kv $cv; do
        kflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
        kflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
    done
    echo "$kflags"
}

build_go_tools() {
    local stamp_file="$FERROCRANE_BIN/.stamp" want kflags
    want="$(tools_stamp)"
    up_to_date "$stamp_file" "$want" "${CONTROL_PLANE_BINS[@]}" && return
    need_go "the control plane"
    mkdir -p "$FERROCRANE_BIN"
    kflags="$(kube_ldflags)"
    cd "$FERROCRANE_ROOT/hack/tools"
    # One go build for the four Kubernetes commands: their shared packages compile once, with
    # both cores busy, and the four links run side by side instead of one after another.
    log "building kube-apiserver, kube-controller-manager, kube-scheduler and kubectl $KUBE_VERSION (the first build takes several minutes)"
    go build -trimpath -ldflags "$kflags" -o "$FERROCRANE_BIN/" k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
    log "building etcd"
    go build -trimpath -ldflags "-s -w" -o "$FERROCRANE_BIN/etcd" go.etcd.io/etcd/server/v3
    echo "$want" >"$stamp_file"
}

# helm, from the same module as the control plane, for the chart tests; its own stamp.
helm_stamp() {
    { cat "$FERROCRANE_ROOT/hack/tools/go.mod" "$FERROCRANE_ROOT/hack/tools/go.sum"; declare -f build_helm; echo "$HELM_VERSION"; } \
        | sha256sum | cut -d' ' -f1
}

build_helm() {
    local stamp_file="$FERROCRANE_BIN/.stamp-helm" want
    want="$(helm_stamp)"
    up_to_date "$stamp_file" "$want" helm && return
    need_go "helm"
    mkdir -p "$FERROCRANE_BIN"
    cd "$FERROCRANE_ROOT/hack/tools"
    log "building helm $HELM_VERSION"
    go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" -o "$FERROCRANE_BIN/helm" helm.sh/helm/v4/cmd/helm
    echo "$want" >"$stamp_file"
}

# kwok's release build stamps nothing the module does not already carry (pkg/consts holds
# the version), so a plain build reports $KWOK_VERSION. Beside the binary go the manifests
# hack/local-up.sh applies, rendered from the same module with kubectl's kustomize: kwok's
# CRDs, its controller's ClusterRole, its default stages (kustomize/stage/fast: nodes
# initialize and heartbeat with a Lease, pods become Ready, Jobs' pods complete, deleted
# pods go) and its kubelet-style resource metrics computed from pod usage annotations
# (kustomize/metrics/usage, which brings kustomize/metrics/resource).
build_kwok() {
    local stamp_file="$FERROCRANE_BIN/.stamp-kwok" want pinned src
    want="$(kwok_stamp)"
    up_to_date "$stamp_file" "$want" kwok \
        && [[ -s $KWOK_MANIFESTS/crds.yaml && -s $KWOK_MANIFESTS/rbac.yaml && -s $KWOK_MANIFESTS/stages.yaml && -s $KWOK_MANIFESTS/metrics.yaml ]] \
        && return
    pinned="$(awk '$1 == "sigs.k8s.io/kwok" {print $2}' "$FERROCRANE_ROOT/hack/tools/kwok/go.mod")"
    [[ $pinned == "$KWOK_VERSION" ]] \
        || die "hack/tools/kwok/go.mod pins sigs.k8s.io/kwok ${pinned:-(nothing)} but hack/lib.sh says KWOK_VERSION=$KWOK_VERSION; make them agree"
    need_go "kwok"
    mkdir -p "$FERROCRANE_BIN" "$KWOK_MANIFESTS"
    cd "$FERROCRANE_ROOT/hack/tools/kwok"
    log "building kwok $KWOK_VERSION"
    go build -trimpath -ldflags "-s -w" -o "$FERROCRANE_BIN/kwok" sigs.k8s.io/kwok/cmd/kwok
    src="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
    [[ -d $src/kustomize ]] || die "sigs.k8s.io/kwok $KWOK_VERSION has no kustomize/ directory in $src; is the module cache complete? (go mod download sigs.k8s.io/kwok in hack/tools/kwok)"
    log "rendering kwok's manifests into $KWOK_MANIFESTS"
    "$KUBECTL" kustomize "$src/kustomize/crd" >"$KWOK_MANIFESTS/crds.yaml"
    install -m 0644 "$src/kustomize/rbac/role.yaml" "$KWOK_MANIFESTS/rbac.yaml"
    "$KUBECTL" kustomize "$src/kustomize/stage/fast" >"$KWOK_MANIFESTS/stages.yaml"
    "$KUBECTL" kustomize "$src/kustomize/metrics/usage" >"$KWOK_MANIFESTS/metrics.yaml"
    echo "$want" >"$stamp_file"
}

# Thanos (Query and sidecar), one of the query layers the adapter and craned are tested on
# (issue 16): built from hack/tools/thanos like the control plane, its own stamp.
thanos_stamp() {
    { cat "$FERROCRANE_ROOT/hack/tools/thanos/go.mod" "$FERROCRANE_ROOT/hack/tools/thanos/go.sum"; declare -f build_thanos; echo "$THANOS_VERSION"; } \
        | sha256sum | cut -d' ' -f1
}

build_thanos() {
    local stamp_file="$FERROCRANE_BIN/.stamp-thanos" want pinned
    want="$(thanos_stamp)"
    up_to_date "$stamp_file" "$want" thanos && return
    pinned="$(awk '$1 == "github.com/thanos-io/thanos" {print $2}' "$FERROCRANE_ROOT/hack/tools/thanos/go.mod")"
    [[ $pinned == "$THANOS_VERSION" ]] \
        || die "hack/tools/thanos/go.mod pins github.com/thanos-io/thanos ${pinned:-(nothing)} but hack/lib.sh says THANOS_VERSION=$THANOS_VERSION; make them agree"
    need_go "thanos"
    mkdir -p "$FERROCRANE_BIN"
    cd "$FERROCRANE_ROOT/hack/tools/thanos"
    log "building thanos $THANOS_VERSION (the first build takes several minutes)"
    # The build tags of Thanos' release (.promu.yml): Thanos casts Prometheus' labels to its
    # own protobuf type in place, which is only sound with the slice layout; built without
    # slicelabels the sidecar panics on its first gRPC answer.
    go build -trimpath -tags netgo,slicelabels -ldflags "-s -w -X github.com/prometheus/common/version.Version=${THANOS_VERSION#v}" \
        -o "$FERROCRANE_BIN/thanos" github.com/thanos-io/thanos/cmd/thanos
    echo "$want" >"$stamp_file"
}

ensure_rust_components() {
    command -v cargo >/dev/null || die "cargo is required: install Rust with rustup"
    if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
        command -v rustup >/dev/null || die "rustfmt/clippy missing and rustup not available to add them"
        rustup component add rustfmt clippy
    fi
}

# cargo-nextest runs the tests of every binary side by side, with the test groups of
# .config/nextest.toml: a cargo subcommand from crates.io, built once per machine.
ensure_nextest() {
    if [[ "$(cargo nextest --version 2>/dev/null | head -1)" == "cargo-nextest $CARGO_NEXTEST_VERSION"* ]]; then return; fi
    log "installing cargo-nextest $CARGO_NEXTEST_VERSION"
    cargo install cargo-nextest --version "$CARGO_NEXTEST_VERSION" --locked --no-default-features --features default-no-update
}

install_prometheus
install_tzdata
build_go_tools
build_kwok

if [[ -z $FOR_TESTS ]]; then
    cat <<INFO
ferrocrane's local cluster tools are ready (hack/setup.sh --tests adds what the tests need):
  kube-apiserver          $FERROCRANE_BIN/kube-apiserver ($("$FERROCRANE_BIN/kube-apiserver" --version 2>&1))
  kubectl                 $KUBECTL ($("$KUBECTL" version --client 2>&1 | head -1))
  kwok                    $FERROCRANE_BIN/kwok ($("$FERROCRANE_BIN/kwok" --version 2>&1 | head -1))
  etcd                    $FERROCRANE_BIN/etcd ($("$FERROCRANE_BIN/etcd" --version 2>&1 | head -1))
  prometheus              $(command -v prometheus) ($(prometheus --version 2>&1 | head -1))
INFO
    exit 0
fi

install_victoria_metrics
install_ss
ensure_rust_components
ensure_nextest
build_helm
build_thanos
"$FERROCRANE_ROOT/hack/originals.sh"

cat <<INFO
ferrocrane tools are ready:
  kube-apiserver          $FERROCRANE_BIN/kube-apiserver ($("$FERROCRANE_BIN/kube-apiserver" --version 2>&1))
  kube-controller-manager $FERROCRANE_BIN/kube-controller-manager
  kube-scheduler          $FERROCRANE_BIN/kube-scheduler
  kubectl                 $KUBECTL ($("$KUBECTL" version --client 2>&1 | head -1))
  kwok                    $FERROCRANE_BIN/kwok ($("$FERROCRANE_BIN/kwok" --version 2>&1 | head -1))
  kwok manifests          $KWOK_MANIFESTS/ (CRDs, ClusterRole, stages, metrics)
  etcd                    $FERROCRANE_BIN/etcd ($("$FERROCRANE_BIN/etcd" --version 2>&1 | head -1))
  helm                    $FERROCRANE_BIN/helm ($("$FERROCRANE_BIN/helm" version --short 2>&1))
  prometheus              $(command -v prometheus) ($(prometheus --version 2>&1 | head -1))
  victoria-metrics        $(command -v victoria-metrics) (Debian's package $(dpkg-query -W -f='${Version}' victoria-metrics 2>/dev/null))
  thanos                  $FERROCRANE_BIN/thanos ($("$FERROCRANE_BIN/thanos" --version 2>&1 | head -1))
  promtool                $(command -v promtool)
  kube-state-metrics      $FERROCRANE_BIN/kube-state-metrics (Go original, for the differential tests)
  prometheus-adapter      $FERROCRANE_BIN/prometheus-adapter (Go original, for the differential tests)
INFO
