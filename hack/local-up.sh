#!/usr/bin/env bash
# Starts a real local control plane, a simulated data plane and Prometheus on loopback:
#   etcd, kube-apiserver (RBAC, service accounts, aggregation layer),
#   kube-controller-manager (deployments, replicasets, HPA every few seconds, node lifecycle),
#   kube-scheduler, kwok (nodes and pods without kubelets) and Prometheus.
#
# kwok (sigs.k8s.io/kwok, the Kubernetes project's simulator) manages the 2 Nodes this
# script creates (kwok-node-0, kwok-node-1: annotation kwok.x-k8s.io/node=fake, 8 cpu,
# 16Gi, 110 pods allocatable). It keeps them Ready with a Lease heartbeat as a kubelet does,
# so the node lifecycle controller neither taints them nor evicts their pods; it runs the
# pods kube-scheduler binds to them with its default stages (Running and Ready, deleted
# cleanly, Jobs' pods complete); and it serves each node's kubelet-style
# /metrics/nodes/<node>/metrics/resource (container_cpu_usage_seconds_total,
# container_memory_working_set_bytes, pod_* and node_* series) computed from the pod
# annotations kwok.x-k8s.io/usage-cpu and kwok.x-k8s.io/usage-memory (default 1m and 1Mi).
# Prometheus finds those endpoints through kwok's own HTTP service discovery, which lists
# every node kwok manages, so a node added later is scraped too (job="kwok", label node).
#
# The kwok Nodes carry kwok's usual taint kwok.x-k8s.io/node=fake:NoSchedule: a pod runs on
# them only when it tolerates it (KWOK_TOLERATION in DIR/env). Other pods stay Pending, as
# they did before kwok, so tests that write pod statuses by hand keep working. kube-scheduler
# places pods on kwok's Nodes only (label type=kwok), never on a bare Node object a test makes.
#
#   hack/local-up.sh [DIR]      DIR defaults to .local/cluster in the repo (git-ignored)
#
# FERROCRANE_APISERVER_ARGS adds flags to kube-apiserver (whitespace-separated), e.g. the
# fault tests' --watch-cache=false, so a watch resumed after an etcd compaction gets 410 Gone.
# FERROCRANE_KCM_ARGS does the same for kube-controller-manager, e.g. the benchmarks' higher
# --kube-api-qps, so the status and endpoint writes for tens of thousands of new objects end
# in seconds rather than the default 20 writes per second per controller.
#
# It also builds and starts the suite's services against it (FERROCRANE_LOCAL_SERVICES, default
# "ksm adapter craned"; set it empty for a bare cluster, as tests do): ksm and craned scraped by
# Prometheus, metrics-adapter with config/adapter/default-config.yaml behind its five APIServices.
# craned comes with a demo: its CRDs, a Deployment whose 7 days of usage history are
# backfilled into Prometheus before it starts, and the example RecommendationRule of
# config/craned/, so a Recommendation appears within a minute.
#
# Writes DIR/env (shell KEY=value lines) describing how to reach everything, and
# DIR/pids so hack/local-down.sh DIR stops exactly these processes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR="${1:-$FERROCRANE_ROOT/.local/cluster}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

if [[ -f $DIR/pids ]] && "$FERROCRANE_ROOT/hack/local-down.sh" --check "$DIR" 2>/dev/null; then
    die "a cluster is already running from $DIR; stop it with hack/local-down.sh $DIR"
fi

SERVICES="${FERROCRANE_LOCAL_SERVICES-ksm adapter craned}"
has_service() { [[ " $SERVICES " == *" $1 "* ]]; }

# The services' binaries build in the background while the tools are checked (built, on a fresh
# machine) and the control plane starts: each build leaves one of the two cores idle in its
# serial stretches (links, the last crates), which the other fills.
SERVICE_BINS=()
has_service ksm && SERVICE_BINS+=(--bin ksm)
has_service adapter && SERVICE_BINS+=(--bin metrics-adapter)
has_service craned && SERVICE_BINS+=(--bin craned)
CARGO_BUILD_PID=""
if ((${#SERVICE_BINS[@]})); then
    mkdir -p "$DIR/logs"
    log "building ${SERVICE_BINS[*]//--bin /} in the background (log: $DIR/logs/cargo-build.log)"
    (cd "$FERROCRANE_ROOT" && exec cargo build --locked "${SERVICE_BINS[@]}") >"$DIR/logs/cargo-build.log" 2>&1 &
    CARGO_BUILD_PID=$!
    # A failure before the services start leaves no build running behind.
    trap '[[ -z $CARGO_BUILD_PID ]] || kill "$CARGO_BUILD_PID" 2>/dev/null || true' EXIT
fi
wait_for_service_build() {
    [[ -n $CARGO_BUILD_PID ]] || return 0
    if ! wait "$CARGO_BUILD_PID"; then
        tail -n 40 "$DIR/logs/cargo-build.log" >&2
        die "cargo build of the services failed (whole log: $DIR/logs/cargo-build.log)"
    fi
    CARGO_BUILD_PID=""
}

need_setup=""
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kwok etcd; do
    [[ -x $FERROCRANE_BIN/$b ]] || need_setup=1
done
for m in crds rbac stages metrics; do
    [[ -s $KWOK_MANIFESTS/$m.yaml ]] || need_setup=1
done
command -v prometheus >/dev/null && command -v promtool >/dev/null || need_setup=1
if [[ -n $need_setup ]]; then
    log "tools missing: running hack/setup.sh first"
    "$FERROCRANE_ROOT/hack/setup.sh" >&2
fi

rm -rf "$DIR"/{pki,etcd,prometheus,kubeconfig,kwok,env,pids}
find "$DIR/logs" -mindepth 1 -not -name cargo-build.log -delete 2>/dev/null || true
mkdir -p "$DIR"/{pki,etcd,prometheus/data,prometheus/targets,logs,kubeconfig,kwok}
PKI="$DIR/pki"

# --- ports: free ones, so several clusters (and CI beside a developer's) can run at once.
ETCD_PORT=$(free_port); ETCD_PEER_PORT=$(free_port); APISERVER_PORT=$(free_port)
KCM_PORT=$(free_port); SCHEDULER_PORT=$(free_port); KWOK_PORT=$(free_port); PROMETHEUS_PORT=$(free_port)
KSM_PORT=$(free_port); KSM_TELEMETRY_PORT=$(free_port); ADAPTER_PORT=$(free_port)
CRANED_PORT=$(free_port); CRANED_HEALTH_PORT=$(free_port)
KWOK_NODE_COUNT=2

# --- certificates (openssl): a cluster CA, a front-proxy CA, and a CA for aggregated API servers.
new_ca() { # name cn
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -subj "/CN=$2" \
        -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
}
new_cert() { # ca name subject usage [san]
    local ca=$1 name=$2 subj=$3 usage=$4 san=${5:-}
    local ext="$PKI/$name.ext"
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$usage"
        [[ -n $san ]] && echo "subjectAltName=$san"
    } >"$ext"
    openssl req -newkey rsa:2048 -nodes -sha256 -subj "$subj" \
        -keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
    openssl x509 -req -sha256 -days 3650 -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" \
        -CAcreateserial -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
    rm -f "$PKI/$name.csr" "$ext"
}
log "generating certificates in $PKI"
new_ca ca "ferrocrane-local-ca"
new_ca front-proxy-ca "ferrocrane-front-proxy-ca"
new_ca aggregated-ca "ferrocrane-aggregated-ca"
new_cert ca apiserver "/CN=kube-apiserver" serverAuth \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.0.0.1"
new_cert ca admin "/O=system:masters/CN=ferrocrane-admin" clientAuth
new_cert ca controller-manager "/CN=system:kube-controller-manager" clientAuth
new_cert ca scheduler "/CN=system:kube-scheduler" clientAuth
new_cert ca kwok "/CN=kwok-controller" clientAuth
new_cert front-proxy-ca front-proxy-client "/CN=front-proxy-client" clientAuth
# Serving cert for the suite's aggregated API servers when run on loopback; the names are the
# ones the aggregator checks (<service>.<namespace>.svc) for the services hack/ registers.
new_cert aggregated-ca aggregated-serving "/CN=ferrocrane-aggregated" serverAuth \
    "DNS:localhost,IP:127.0.0.1,DNS:metrics-adapter.ferrocrane.svc,DNS:ferrocrane-metrics-adapter.ferrocrane.svc"
openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null

APISERVER_URL="https://127.0.0.1:$APISERVER_PORT"
write_kubeconfig() { # file cert key user
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $APISERVER_URL
    certificate-authority: $PKI/ca.crt
users:
- name: $4
  user:
    client-certificate: $2
    client-key: $3
contexts:
- name: local
  context: {cluster: local, user: $4}
current-context: local
EOF
}
write_kubeconfig "$DIR/kubeconfig/admin.kubeconfig" "$PKI/admin.crt" "$PKI/admin.key" admin
write_kubeconfig "$DIR/kubeconfig/controller-manager.kubeconfig" "$PKI/controller-manager.crt" \
    "$PKI/controller-manager.key" kube-controller-manager
write_kubeconfig "$DIR/kubeconfig/scheduler.kubeconfig" "$PKI/scheduler.crt" "$PKI/scheduler.key" kube-scheduler
write_kubeconfig "$DIR/kubeconfig/kwok.kubeconfig" "$PKI/kwok.crt" "$PKI/kwok.key" kwok-controller
export KUBECONFIG="$DIR/kubeconfig/admin.kubeconfig"

: >"$DIR/pids"
start() { # name command...
    local name=$1; shift
    setsid nohup "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
    echo "$name $! $1" >>"$DIR/pids"
}
wait_for() { # what seconds command...
    local what=$1 secs=$2; shift 2
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS > deadline)); then
            log "$what did not become ready in ${secs}s; last log lines:"
            tail -n 30 "$DIR/logs/$what.log" >&2 || true
            "$FERROCRANE_ROOT/hack/local-down.sh" "$DIR" >&2 || true
            die "$what failed to start (logs in $DIR/logs)"
        fi
        sleep 0.5
    done
}

log "starting etcd on 127.0.0.1:$ETCD_PORT"
start etcd "$FERROCRANE_BIN/etcd" --name local --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn
wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"

log "starting kube-apiserver on $APISERVER_URL"
read -r -a APISERVER_EXTRA_ARGS <<<"${FERROCRANE_APISERVER_ARGS:-}"
# ShardedListAndWatch (alpha, KEP-5866): ksm's --server-side-sharding asks for one shard's
# objects. Later --feature-gates in FERROCRANE_APISERVER_ARGS override it (=false to test
# the fallback).
# --endpoint-reconciler-type=none: Endpoints may not hold loopback addresses, so the
# default reconciler would fail forever publishing 127.0.0.1 for the kubernetes Service.
start kube-apiserver "$FERROCRANE_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 \
    --endpoint-reconciler-type none \
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
    --enable-aggregator-routing=false \
    --allow-privileged=true \
    --profiling=false \
    --feature-gates ShardedListAndWatch=true \
    "${APISERVER_EXTRA_ARGS[@]}"
wait_for kube-apiserver 90 "$KUBECTL" get --raw /readyz

log "starting kube-controller-manager"
read -r -a KCM_EXTRA_ARGS <<<"${FERROCRANE_KCM_ARGS:-}"
# The node lifecycle controller runs, as in a real cluster: kwok's Lease heartbeats keep its
# Nodes Ready and untainted; a Node nobody heartbeats (tests create bare ones) turns Unknown
# and gets the node.kubernetes.io/unreachable taints after a minute. node-ipam (pod CIDRs)
# and attach-detach (volumes) are off: they need a network plugin, a cloud or a kubelet,
# none of which is here. The HPA acts within seconds (sync 3s, downscale stabilization 10s, and
# a pod's CPU counts 30s after it starts rather than 5 minutes) so the demo and the tests see
# scaling at once.
start kube-controller-manager "$FERROCRANE_BIN/kube-controller-manager" \
    --kubeconfig "$DIR/kubeconfig/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/kubeconfig/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/kubeconfig/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --leader-elect=false \
    --controllers '*,-node-ipam-controller,-persistentvolume-attach-detach-controller' \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --use-service-account-credentials=true \
    --horizontal-pod-autoscaler-sync-period 3s \
    --horizontal-pod-autoscaler-downscale-stabilization 10s \
    --horizontal-pod-autoscaler-cpu-initialization-period 30s \
    --concurrent-horizontal-pod-autoscaler-syncs 5 \
    "${KCM_EXTRA_ARGS[@]}"
wait_for kube-controller-manager 60 curl -skf "https://127.0.0.1:$KCM_PORT/healthz"

# The default profile places pods only on kwok's Nodes (label type=kwok), the only ones on
# which anything runs a pod: a Node a test creates as a bare API object never gets one.
cat >"$DIR/kubeconfig/scheduler-config.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $DIR/kubeconfig/scheduler.kubeconfig
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: type, operator: In, values: [kwok]}
EOF
log "starting kube-scheduler"
start kube-scheduler "$FERROCRANE_BIN/kube-scheduler" \
    --config "$DIR/kubeconfig/scheduler-config.yaml" \
    --authentication-kubeconfig "$DIR/kubeconfig/scheduler.kubeconfig" \
    --authorization-kubeconfig "$DIR/kubeconfig/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT"
wait_for kube-scheduler 60 curl -skf "https://127.0.0.1:$SCHEDULER_PORT/healthz"

# --- kwok: its CRDs and the objects that configure it (stages, metrics, usage from
# annotations) come from the manifests setup.sh rendered from the pinned module; it runs as
# its own identity with the ClusterRole kwok ships, as its in-cluster deployment does.
log "installing kwok's CRDs, RBAC, stages and metrics"
"$KUBECTL" apply --server-side -f "$KWOK_MANIFESTS/crds.yaml" >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s -f "$KWOK_MANIFESTS/crds.yaml" >/dev/null
"$KUBECTL" apply -f "$KWOK_MANIFESTS/rbac.yaml" >/dev/null
"$KUBECTL" create clusterrolebinding kwok-controller --clusterrole kwok-controller --user kwok-controller \
    --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
"$KUBECTL" apply -f "$KWOK_MANIFESTS/stages.yaml" >/dev/null
"$KUBECTL" apply -f "$KWOK_MANIFESTS/metrics.yaml" >/dev/null

# kwok's in-cluster settings (kustomize/kwok/kwok.yaml in its module), as flags, on loopback:
# the objects above are read from the API (--enable-crds), pod IPs come from a range apart from
# the Services' one, nodes report 127.0.0.1 and kwok's port as their kubelet's address.
# (Flags rather than a --config file: kwok applies its defaults only when no file sets the
# options.) KWOK_WORKDIR keeps it from reading a ~/.kwok/kwok.yaml of the machine's user.
export KWOK_WORKDIR="$DIR/kwok"
log "starting kwok on 127.0.0.1:$KWOK_PORT"
start kwok "$FERROCRANE_BIN/kwok" --kubeconfig "$DIR/kubeconfig/kwok.kubeconfig" \
    --server-address "127.0.0.1:$KWOK_PORT" --node-ip 127.0.0.1 --node-port "$KWOK_PORT" \
    --cidr 10.244.0.0/16 \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds 40 \
    --enable-crds Stage,Metric,ResourceUsage,ClusterResourceUsage,Attach,ClusterAttach,Exec,ClusterExec,Logs,ClusterLogs,PortForward,ClusterPortForward
wait_for kwok 60 curl -sf "http://127.0.0.1:$KWOK_PORT/healthz"

KWOK_NODES=()
for ((i = 0; i < KWOK_NODE_COUNT; i++)); do KWOK_NODES+=("kwok-node-$i"); done
log "creating kwok nodes: ${KWOK_NODES[*]}"
for node in "${KWOK_NODES[@]}"; do
    cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $node
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: $node
    node-role.kubernetes.io/agent: ""
spec:
  taints:
  - {key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
---
EOF
done | "$KUBECTL" apply -f - >/dev/null
# Ready, with no taint but kwok's own (none from the node lifecycle controller).
kwok_nodes_schedulable() {
    "$KUBECTL" get nodes -l type=kwok -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.spec.taints[*].key}{"\n"}{end}' \
        | [[ $(grep -c ' True kwok.x-k8s.io/node$') -eq $KWOK_NODE_COUNT ]]
}
wait_for kwok 90 kwok_nodes_schedulable

# craned's demo history: a week of cAdvisor-style series at 1m for the two pods of
# craned-demo/demo-web (config/craned/demo-workload.yaml) -- busier from 09:00 to 18:00 UTC --
# written as blocks into the data directory before Prometheus opens it (backfilling into a
# running Prometheus only shows after its next block reload).
craned_demo_history() { # file end-minute
    awk -v end="$2" 'BEGIN {
        first = end - 7 * 24 * 60 - 10
        split("demo-web-5d8f7c9b6-x7k2p demo-web-5d8f7c9b6-q9z4m", pods, " ")
        sel = "namespace=\"craned-demo\",container=\"web\",pod=\""
        for (p = 1; p <= 2; p++) {
            c = 0
            for (m = first; m <= end; m++) {
                h = int((m % 1440) / 60); busy = (h >= 9 && h < 18)
                c += (busy ? 0.6 : 0.2) * 60
                printf "container_cpu_usage_seconds_total{%s%s\"} %.1f %d\n", sel, pods[p], c, m * 60
            }
        }
        for (p = 1; p <= 2; p++)
            for (m = first; m <= end; m++) {
                h = int((m % 1440) / 60); busy = (h >= 9 && h < 18)
                printf "container_memory_working_set_bytes{%s%s\"} %d %d\n", sel, pods[p], (busy ? 600 : 350) * 1048576, m * 60
            }
        print "# EOF"
    }' >"$1"
}
if has_service craned; then
    log "backfilling 7 days of demo usage history for craned"
    craned_demo_history "$DIR/prometheus/craned-demo.om" $(($(date +%s) / 60 - 1))
    promtool tsdb create-blocks-from openmetrics "$DIR/prometheus/craned-demo.om" "$DIR/prometheus/data" \
        >"$DIR/logs/promtool.log" 2>&1 || die "promtool backfill failed (see $DIR/logs/promtool.log)"
    rm -f "$DIR/prometheus/craned-demo.om"
fi

log "starting prometheus on 127.0.0.1:$PROMETHEUS_PORT"
PROMETHEUS_CONFIG="$DIR/prometheus/prometheus.yml"
cat >"$PROMETHEUS_CONFIG" <<EOF
# Scrape jobs are appended by tests and hack/ scripts; reload with
#   curl -X POST \$PROMETHEUS_URL/-/reload
global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 2s
scrape_configs:
- job_name: prometheus
  static_configs:
  - targets: ['127.0.0.1:$PROMETHEUS_PORT']
# Tests add targets as JSON files here (no reload, no races on this file).
$(has_service ksm && printf -- "- job_name: ksm\n  honor_labels: true\n  static_configs:\n  - targets: ['127.0.0.1:%s']\n- job_name: ksm-telemetry\n  static_configs:\n  - targets: ['127.0.0.1:%s']\n" "$KSM_PORT" "$KSM_TELEMETRY_PORT")
$(has_service craned && printf -- "- job_name: craned\n  static_configs:\n  - targets: ['127.0.0.1:%s']\n" "$CRANED_PORT")
- job_name: file-sd
  file_sd_configs:
  - files: ['$DIR/prometheus/targets/*.json']
    refresh_interval: 2s
# kwok's kubelet-compatible resource metrics: kwok lists one target per node it manages
# (its /discovery/prometheus); the node's name becomes the node label a kubelet scrape has.
- job_name: kwok
  http_sd_configs:
  - url: http://127.0.0.1:$KWOK_PORT/discovery/prometheus
    refresh_interval: 5s
  relabel_configs:
  - source_labels: [__metrics_path__]
    regex: /metrics/nodes/([^/]+)/metrics/resource
    target_label: node
  - action: labeldrop
    regex: metrics_name
EOF
start prometheus prometheus --config.file "$PROMETHEUS_CONFIG" \
    --storage.tsdb.path "$DIR/prometheus/data" \
    --web.listen-address "127.0.0.1:$PROMETHEUS_PORT" \
    --web.enable-lifecycle --web.enable-admin-api
PROMETHEUS_URL="http://127.0.0.1:$PROMETHEUS_PORT"
wait_for prometheus 30 curl -sf "$PROMETHEUS_URL/-/ready"

# The default namespace needs its ServiceAccount before pods can be created; the controller
# manager makes it, so wait here rather than in every test.
wait_for kube-controller-manager 60 "$KUBECTL" get serviceaccount default -n default

if has_service ksm; then
    log "starting ksm on 127.0.0.1:$KSM_PORT"
    wait_for_service_build
    start ksm "$CARGO_TARGET_DIR/debug/ksm" --kubeconfig "$KUBECONFIG" \
        --host 127.0.0.1 --port "$KSM_PORT" --telemetry-host 127.0.0.1 --telemetry-port "$KSM_TELEMETRY_PORT"
    wait_for ksm 60 curl -sf "http://127.0.0.1:$KSM_TELEMETRY_PORT/readyz"
fi

if has_service craned; then
    # Before metrics-adapter starts: it serves Crane's autoscaling metrics where the CRDs are.
    log "installing craned's CRDs"
    "$KUBECTL" apply --server-side -f "$FERROCRANE_ROOT/deploy/crds" >/dev/null
fi

if has_service adapter; then
    log "starting metrics-adapter on https://127.0.0.1:$ADAPTER_PORT"
    wait_for_service_build
    # The serving cert is the one local-up.sh made for the aggregated APIs; the front-proxy CA
    # and name are kube-apiserver's, so requests it proxies authenticate as their caller.
    start metrics-adapter "$CARGO_TARGET_DIR/debug/metrics-adapter" --kubeconfig "$KUBECONFIG" \
        --prometheus-url "$PROMETHEUS_URL" --config "$FERROCRANE_ROOT/config/adapter/default-config.yaml" \
        --bind-address 127.0.0.1 --secure-port "$ADAPTER_PORT" \
        --tls-cert-file "$PKI/aggregated-serving.crt" --tls-private-key-file "$PKI/aggregated-serving.key" \
        --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
        --metrics-relist-interval 30s
    wait_for metrics-adapter 60 curl -sf --cacert "$PKI/aggregated-ca.crt" "https://127.0.0.1:$ADAPTER_PORT/readyz"
    # Aggregator routing is off, so an ExternalName Service for localhost makes kube-apiserver
    # dial the adapter on loopback, verifying its cert as metrics-adapter.ferrocrane.svc.
    CA_BUNDLE=$(base64 -w0 <"$PKI/aggregated-ca.crt")
    {
        printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: ferrocrane}\n---\n'
        printf 'apiVersion: v1\nkind: Service\nmetadata: {name: metrics-adapter, namespace: ferrocrane}\n'
        printf 'spec: {type: ExternalName, externalName: localhost, ports: [{port: %s, protocol: TCP}]}\n' "$ADAPTER_PORT"
        for gv in v1/metrics.k8s.io v1beta1/metrics.k8s.io v1beta1/custom.metrics.k8s.io v1beta2/custom.metrics.k8s.io v1beta1/external.metrics.k8s.io; do
            printf -- '---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: %s.%s}\n' "${gv%%/*}" "${gv#*/}"
            printf 'spec: {group: %s, version: %s, groupPriorityMinimum: 100, versionPriority: 100, caBundle: %s,\n' "${gv#*/}" "${gv%%/*}" "$CA_BUNDLE"
            printf '  service: {namespace: ferrocrane, name: metrics-adapter, port: %s}}\n' "$ADAPTER_PORT"
        done
    } | "$KUBECTL" apply -f - >/dev/null
    wait_for metrics-adapter 90 "$KUBECTL" get --raw /apis/custom.metrics.k8s.io/v1beta1
    log "creating the adapter's demo (config/adapter/demo-hpa.yaml)"
    "$KUBECTL" apply -f "$FERROCRANE_ROOT/config/adapter/demo-hpa.yaml" >/dev/null
fi

if has_service craned; then
    log "installing the demo workload"
    "$KUBECTL" wait --for condition=established --timeout=30s \
        crd/recommendations.analysis.crane.io crd/recommendationrules.analysis.crane.io \
        crd/effectivehorizontalpodautoscalers.autoscaling.crane.io \
        crd/timeseriespredictions.prediction.crane.io crd/substitutes.autoscaling.crane.io >/dev/null
    "$KUBECTL" apply -f "$FERROCRANE_ROOT/config/craned/demo-workload.yaml" >/dev/null
    log "starting craned on 127.0.0.1:$CRANED_PORT"
    wait_for_service_build
    start craned "$CARGO_TARGET_DIR/debug/craned" --kubeconfig "$KUBECONFIG" \
        --prometheus-address "$PROMETHEUS_URL" \
        --recommendation-configuration-file "$FERROCRANE_ROOT/config/craned/recommendation-configuration.yaml" \
        --metrics-bind-address "127.0.0.1:$CRANED_PORT" --health-probe-bind-address "127.0.0.1:$CRANED_HEALTH_PORT" \
        --leader-elect=false --pod-namespace craned-demo
    wait_for craned 60 curl -sf "http://127.0.0.1:$CRANED_HEALTH_PORT/readyz"
    # kwok runs the demo pods. The Replicas recommender counts pods available for 30s
    # (pod-min-ready-seconds), so the rule goes in once they have been Ready that long.
    wait_for kwok 90 bash -c \
        '[[ $("$KUBECTL" -n craned-demo get deployment demo-web -o jsonpath="{.status.availableReplicas}") == 2 ]]'
    sleep 31
    "$KUBECTL" apply -f "$FERROCRANE_ROOT/config/craned/recommendationrule.yaml" >/dev/null
    if has_service adapter; then
        log "creating the autoscaling demo (config/craned/demo-ehpa.yaml)"
        "$KUBECTL" apply -f "$FERROCRANE_ROOT/config/craned/demo-ehpa.yaml" >/dev/null
    fi
fi

cat >"$DIR/env" <<EOF
KUBECONFIG=$DIR/kubeconfig/admin.kubeconfig
APISERVER_URL=$APISERVER_URL
CLUSTER_CA=$PKI/ca.crt
ETCD_URL=http://127.0.0.1:$ETCD_PORT
PROMETHEUS_URL=$PROMETHEUS_URL
PROMETHEUS_CONFIG=$PROMETHEUS_CONFIG
PROMETHEUS_DATA=$DIR/prometheus/data
PROMETHEUS_TARGETS=$DIR/prometheus/targets
FRONT_PROXY_CA=$PKI/front-proxy-ca.crt
FRONT_PROXY_ALLOWED_NAMES=front-proxy-client
AGGREGATED_SERVING_CA=$PKI/aggregated-ca.crt
AGGREGATED_SERVING_CA_KEY=$PKI/aggregated-ca.key
AGGREGATED_SERVING_CERT=$PKI/aggregated-serving.crt
AGGREGATED_SERVING_KEY=$PKI/aggregated-serving.key
FERROCRANE_BIN=$FERROCRANE_BIN
KUBECTL=$KUBECTL
KWOK_URL=http://127.0.0.1:$KWOK_PORT
KWOK_NODES=$(IFS=,; echo "${KWOK_NODES[*]}")
KWOK_TOLERATION=kwok.x-k8s.io/node=fake:NoSchedule
LOGS=$DIR/logs
$(has_service ksm && echo "KSM_URL=http://127.0.0.1:$KSM_PORT")
$(has_service adapter && echo "ADAPTER_URL=https://127.0.0.1:$ADAPTER_PORT")
$(has_service craned && echo "CRANED_URL=http://127.0.0.1:$CRANED_PORT")
EOF

cat <<EOF
ferrocrane local cluster is up (state in $DIR):
  kube-apiserver   $APISERVER_URL
  kwok             http://127.0.0.1:$KWOK_PORT (nodes ${KWOK_NODES[*]}; scraped as job="kwok")
  prometheus       $PROMETHEUS_URL
$(has_service ksm && echo "  ksm              http://127.0.0.1:$KSM_PORT/metrics (scraped as job=\"ksm\")")
$(has_service adapter && echo "  metrics-adapter  https://127.0.0.1:$ADAPTER_PORT (APIServices custom/external/metrics; \$KUBECTL get --raw /apis/custom.metrics.k8s.io/v1beta1)")
$(has_service craned && echo "  craned           http://127.0.0.1:$CRANED_PORT/metrics (scraped as job=\"craned\")")
  logs             $DIR/logs/

Use it:
  set -a; source $DIR/env; set +a      # \$KUBECTL is kubectl $KUBE_VERSION, built by hack/setup.sh
  "\$KUBECTL" get --raw /readyz
  "\$KUBECTL" get nodes                 # the kwok nodes, Ready
  curl -s "\$PROMETHEUS_URL/api/v1/query?query=up"
  curl -s "\$PROMETHEUS_URL/api/v1/query?query=kube_deployment_spec_replicas"
  # A pod runs on a kwok node when it tolerates kwok.x-k8s.io/node=fake:NoSchedule; its usage is
  # what its annotations say (kwok.x-k8s.io/usage-cpu: 250m, kwok.x-k8s.io/usage-memory: 64Mi):
  curl -s "\$PROMETHEUS_URL/api/v1/query?query=container_cpu_usage_seconds_total"
$(has_service adapter && cat <<ADAPTER
  # metrics-adapter: kubectl top reads metrics.k8s.io/v1 from kwok's series in Prometheus
  "\$KUBECTL" top nodes
  "\$KUBECTL" top pods -A
  # an HPA on CPU utilization (config/adapter/demo-hpa.yaml): raise the usage, watch it scale
  # up to 5, lower it, watch it come back to 1
  "\$KUBECTL" -n adapter-demo annotate pods -l app=demo-app kwok.x-k8s.io/usage-cpu=400m --overwrite
  "\$KUBECTL" -n adapter-demo get hpa demo-app -w
  "\$KUBECTL" -n adapter-demo annotate pods -l app=demo-app kwok.x-k8s.io/usage-cpu=10m --overwrite
ADAPTER
)
$(has_service ksm && echo "  curl -s \"\$PROMETHEUS_URL/api/v1/query?query=kube_pod_status_phase{namespace=~'adapter-demo|craned-demo'}==1\"")
$(has_service craned && cat <<CRANED
  "\$KUBECTL" get recommendations -n craned-demo   # the demo's Recommendations
  # the same, as a one-shot report with the controller's configuration
  $CARGO_TARGET_DIR/debug/craned recommend -n craned-demo --prometheus-address "\$PROMETHEUS_URL" \\
      --recommendation-configuration-file $FERROCRANE_ROOT/config/craned/recommendation-configuration.yaml
CRANED
)
$(has_service craned && has_service adapter && cat <<AUTOSCALING
  # autoscaling (config/craned/demo-ehpa.yaml): demo-cron goes to 4 replicas for the first five
  # minutes of every ten and back to 1; demo-web (Preview) shows what its predicted CPU would do
  "\$KUBECTL" -n craned-demo get ehpa,hpa,deploy -w
  "\$KUBECTL" -n craned-demo get tsp ehpa-demo-web -o jsonpath='{.status.conditions}'
  "\$KUBECTL" get --raw "/apis/external.metrics.k8s.io/v1beta1/namespaces/craned-demo/crane_autoscaling_cron?labelSelector=targetKind%3DDeployment,targetName%3Ddemo-cron,targetNamespace%3Dcraned-demo,resourceIdentifier%3Dcron"
AUTOSCALING
)

Stop it:
  hack/local-down.sh $DIR
EOF
