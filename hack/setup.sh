#!/usr/bin/env bash
# Installs everything the tests and hack/local-up.sh need, idempotently:
#   - Prometheus and promtool from Debian's packages,
#   - kube-apiserver, kube-controller-manager, etcd and helm built from the Go
#     modules pinned in hack/tools/go.mod, into $FERROCRANE_CACHE/bin,
#   - rustfmt and clippy.
# A second run finds everything in place and takes seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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

install_prometheus() {
    if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
        return
    fi
    command -v apt-get >/dev/null || die "prometheus and promtool are missing and apt-get is not available: install Debian's 'prometheus' package"
    log "installing Debian's prometheus package (brings promtool)"
    # policy-rc.d keeps the package from starting a system-wide Prometheus:
    # the tests start their own on a free port.
    local policy=/usr/sbin/policy-rc.d created_policy=""
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created_policy=1
    fi
    apt_install prometheus
    [[ -n $created_policy ]] && rm -f "$policy"
    command -v promtool >/dev/null || die "Debian's prometheus package installed but promtool is not on PATH"
}

# The stamp records what the binaries were built from (the pinned modules and the build
# recipe below); when either changes they are rebuilt, and only then.
tools_stamp() {
    { cat "$FERROCRANE_ROOT/hack/tools/go.mod" "$FERROCRANE_ROOT/hack/tools/go.sum"; declare -f build_go_tools; echo "$KUBE_VERSION $HELM_VERSION"; } \
        | sha256sum | cut -d' ' -f1
}

build_go_tools() {
    local stamp_file="$FERROCRANE_BIN/.stamp" want
    want="$(tools_stamp)"
    if [[ -f $stamp_file && "$(cat "$stamp_file")" == "$want" ]] \
        && [[ -x $FERROCRANE_BIN/kube-apiserver && -x $FERROCRANE_BIN/kube-controller-manager && -x $FERROCRANE_BIN/etcd && -x $FERROCRANE_BIN/helm ]]; then
        return
    fi
    command -v go >/dev/null || die "go is required to build the control plane (hack/tools); install Go 1.26+"
    mkdir -p "$FERROCRANE_BIN"
    local kv=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version date
    date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    local major minor
    major="${KUBE_VERSION#v}"; major="${major%%.*}"
    minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
    local kflags="-s -w"
    for pkg in $kv $cv; do
        kflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
        kflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
    done
    cd "$FERROCRANE_ROOT/hack/tools"
    log "building kube-apiserver $KUBE_VERSION (the first build takes several minutes)"
    go build -trimpath -ldflags "$kflags" -o "$FERROCRANE_BIN/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
    log "building kube-controller-manager $KUBE_VERSION"
    go build -trimpath -ldflags "$kflags" -o "$FERROCRANE_BIN/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
    log "building etcd"
    go build -trimpath -ldflags "-s -w" -o "$FERROCRANE_BIN/etcd" go.etcd.io/etcd/server/v3
    log "building helm $HELM_VERSION"
    go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" -o "$FERROCRANE_BIN/helm" helm.sh/helm/v4/cmd/helm
    echo "$want" >"$stamp_file"
}

ensure_rust_components() {
    command -v cargo >/dev/null || die "cargo is required: install Rust with rustup"
    if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
        command -v rustup >/dev/null || die "rustfmt/clippy missing and rustup not available to add them"
        rustup component add rustfmt clippy
    fi
}

install_prometheus
install_tzdata
ensure_rust_components
build_go_tools

cat <<INFO
ferrocrane tools are ready:
  kube-apiserver          $FERROCRANE_BIN/kube-apiserver ($("$FERROCRANE_BIN/kube-apiserver" --version 2>&1))
  kube-controller-manager $FERROCRANE_BIN/kube-controller-manager
  etcd                    $FERROCRANE_BIN/etcd ($("$FERROCRANE_BIN/etcd" --version 2>&1 | head -1))
  helm                    $FERROCRANE_BIN/helm ($("$FERROCRANE_BIN/helm" version --short 2>&1))
  prometheus              $(command -v prometheus) ($(prometheus --version 2>&1 | head -1))
  promtool                $(command -v promtool)
  kubectl                 $(command -v kubectl || echo 'not found')
INFO
