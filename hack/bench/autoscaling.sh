#!/usr/bin/env bash
# The autoscaling half at scale (issue 33): 1,000 EffectiveHPAs with prediction, craned's
# TimeSeriesPrediction and EHPA controllers and metrics-adapter's Crane metrics, on a real
# local control plane (hack/local-up.sh) and a real Prometheus holding the workloads' history.
#
#   hack/bench/autoscaling.sh [DIR]     DIR (cluster state, history, logs, results) defaults to .local/bench-autoscaling
#
# Set-up: hack/bench/objects.py makes BENCH_EHPAS paused Deployments (deploy-NNNNN in bench-NN,
# spec.replicas 1, no pods); hack/bench/craned_tool.py backfills BENCH_DAYS days of their
# containers' cAdvisor usage at one sample a minute (one pod each, a daily wave); a Prometheus of
# its own serves those blocks. craned and metrics-adapter are release builds of this checkout.
#
# Phases, each timed:
#   1. predict: one EHPA per Deployment (autoscaling_tool.py ehpas: CPU utilization target, DSP
#      prediction over the history, window BENCH_WINDOW, one daily cron), applied at once; until
#      every TimeSeriesPrediction craned makes for them is Ready with a status covering two
#      windows. Figures: wall time (first, half, all), Prometheus range queries (per TSP), craned
#      CPU seconds.
#   2. refresh: the same EHPAs with a window one minute longer (a spec change, so each status
#      is rebuilt, as it is once a window in steady state; the models are kept); until every
#      status covers the new windows. Same figures: what a refresh of all of them costs.
#   3. serve: BENCH_CLIENTS clients (hack/bench/loadgen, one keep-alive TLS connection each,
#      the front-proxy client certificate as the aggregator sends it) ask metrics-adapter for
#      crane_autoscaling_prediction and crane_autoscaling_cron of every EHPA, as their HPAs
#      do, for BENCH_DURATION. Figures: p50/p99 latency, throughput, adapter CPU per request.
#   craned's and metrics-adapter's peak RSS (VmHWM) at the end.
# The figures are printed as a table for docs/benchmarks.md ("## Autoscaling").
#
# Environment:
#   BENCH_EHPAS=1000  BENCH_NAMESPACES=10  BENCH_DAYS=3  BENCH_WINDOW=3600
#   BENCH_CLIENTS=32  BENCH_DURATION=20s   BENCH_TIMEOUT=3600 (seconds per phase)
#   BENCH_CRANED_ARGS         extra craned flags (e.g. --kube-api-qps=500 --kube-api-burst=1000: at
#                             Crane's default 50 QPS the EHPA controller's API calls bound phases 1-2)
#   CRANED_BIN, ADAPTER_BIN   the binaries; unset: cargo build --release of this checkout
#
# Everything it starts is stopped on exit, whatever happens. Only 127.0.0.1 is contacted.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
BENCH="$FERROCRANE_ROOT/hack/bench"
TOOL="$BENCH/autoscaling_tool.py"
COMMAND_LINE="$(printf '%q ' "$0" "$@")"

DIR="${1:-$FERROCRANE_ROOT/.local/bench-autoscaling}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
EHPAS="${BENCH_EHPAS:-1000}"
NAMESPACES="${BENCH_NAMESPACES:-10}"
DAYS="${BENCH_DAYS:-3}"
WINDOW="${BENCH_WINDOW:-3600}"
CLIENTS="${BENCH_CLIENTS:-32}"
DURATION="${BENCH_DURATION:-20s}"
TIMEOUT="${BENCH_TIMEOUT:-3600}"
HZ="$(getconf CLK_TCK)"
read -r -a CRANED_EXTRA <<<"${BENCH_CRANED_ARGS:-}"

# --- binaries
if [[ -z ${CRANED_BIN:-} || -z ${ADAPTER_BIN:-} ]]; then
    log "building: cargo build --release -p ferrocrane-craned -p ferrocrane-adapter (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
    (cd "$FERROCRANE_ROOT" && cargo build --release -p ferrocrane-craned -p ferrocrane-adapter)
    BUILT_FROM="$(git -C "$FERROCRANE_ROOT" log -1 --format='%h' 2>/dev/null)"
fi
CRANED_BIN="${CRANED_BIN:-$CARGO_TARGET_DIR/release/craned}"
ADAPTER_BIN="${ADAPTER_BIN:-$CARGO_TARGET_DIR/release/metrics-adapter}"
[[ -x $CRANED_BIN && -x $ADAPTER_BIN ]] || die "$CRANED_BIN or $ADAPTER_BIN is not an executable"
command -v prometheus >/dev/null && command -v promtool >/dev/null || die "prometheus and promtool are missing: run hack/setup.sh"
command -v go >/dev/null || die "go is missing (hack/bench/loadgen is built with it): run hack/setup.sh"
mkdir -p "$DIR/bin"
(cd "$BENCH/loadgen" && go build -o "$DIR/bin/loadgen" .)

PIDS=()
cleanup() {
    local rc=$? p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    "$FERROCRANE_ROOT/hack/local-down.sh" "$DIR" >&2 || true
    rm -rf "$DIR/history"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
range_queries() { python3 "$BENCH/craned_tool.py" prom-stats "$PROM_URL" | awk '{print $1}'; }
wait_ready() { # name pid url log
    local deadline=$((SECONDS + 300))
    until curl -skf "$3" >/dev/null 2>&1; do
        kill -0 "$2" 2>/dev/null || { tail -20 "$4" >&2; die "$1 exited (see $4)"; }
        ((SECONDS < deadline)) || die "$1 not ready in 300 s (see $4)"
        sleep 0.2
    done
}
secs() { echo "$1 / $HZ" | bc -l | xargs printf '%.1f'; }
RESULTS="$DIR/results"
rm -rf "$RESULTS" "$DIR/history"
mkdir -p "$RESULTS" "$DIR/history"

# --- cluster, Deployments, history, Prometheus
log "starting the local control plane in $DIR"
FERROCRANE_LOCAL_SERVICES="" "$FERROCRANE_ROOT/hack/local-up.sh" "$DIR" >"$DIR/local-up.out"
set -a; source "$DIR/env"; set +a
PKI="$(dirname "$FRONT_PROXY_CA")"
"$KUBECTL" apply --server-side -f "$FERROCRANE_ROOT/deploy/crds" >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s \
    crd/effectivehorizontalpodautoscalers.autoscaling.crane.io crd/timeseriespredictions.prediction.crane.io \
    crd/substitutes.autoscaling.crane.io >/dev/null
log "creating $EHPAS Deployments in $NAMESPACES namespaces"
python3 "$BENCH/objects.py" --deployments "$EHPAS" --namespaces "$NAMESPACES" --deployment-replicas 1
log "backfilling $DAYS days of their usage"
python3 "$BENCH/craned_tool.py" history --data "$DIR/history/data" --work "$DIR/history" --workloads "$EHPAS" \
    --namespaces "$NAMESPACES" --pods 1 --days "$DAYS" --block-hours 18 --lead-minutes 30 \
    --stats "$RESULTS/history.txt"
PROM_PORT=$(free_port)
PROM_URL="http://127.0.0.1:$PROM_PORT"
printf 'global:\n  scrape_interval: 1m\n' >"$DIR/history/prometheus.yml"
prometheus --config.file "$DIR/history/prometheus.yml" --storage.tsdb.path "$DIR/history/data" \
    --web.listen-address "127.0.0.1:$PROM_PORT" --storage.tsdb.retention.time=3650d \
    --storage.tsdb.min-block-duration=2h --storage.tsdb.max-block-duration=2h \
    >"$DIR/logs/bench-prometheus.log" 2>&1 &
PROM_PID=$!
PIDS+=("$PROM_PID")
wait_ready prometheus "$PROM_PID" "$PROM_URL/-/ready" "$DIR/logs/bench-prometheus.log"

# --- craned and metrics-adapter
CRANED_PORT=$(free_port); CRANED_HEALTH=$(free_port)
"$CRANED_BIN" --kubeconfig "$KUBECONFIG" --prometheus-address "$PROM_URL" \
    --recommendation-configuration-file "$FERROCRANE_ROOT/config/craned/recommendation-configuration.yaml" \
    --metrics-bind-address "127.0.0.1:$CRANED_PORT" --health-probe-bind-address "127.0.0.1:$CRANED_HEALTH" \
    --leader-elect=false "${CRANED_EXTRA[@]}" >"$DIR/logs/craned.log" 2>&1 </dev/null &
CRANED_PID=$!
PIDS+=("$CRANED_PID")
wait_ready craned "$CRANED_PID" "http://127.0.0.1:$CRANED_HEALTH/readyz" "$DIR/logs/craned.log"
ADAPTER_PORT=$(free_port)
printf 'rules: []\n' >"$DIR/adapter-config.yaml"
"$ADAPTER_BIN" --bind-address 127.0.0.1 --secure-port "$ADAPTER_PORT" \
    --tls-cert-file "$AGGREGATED_SERVING_CERT" --tls-private-key-file "$AGGREGATED_SERVING_KEY" \
    --requestheader-client-ca-file "$FRONT_PROXY_CA" --requestheader-allowed-names "$FRONT_PROXY_ALLOWED_NAMES" \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" --lister-kubeconfig "$KUBECONFIG" \
    --prometheus-url "$PROM_URL/" --config "$DIR/adapter-config.yaml" >"$DIR/logs/adapter.log" 2>&1 </dev/null &
ADAPTER_PID=$!
PIDS+=("$ADAPTER_PID")
wait_ready metrics-adapter "$ADAPTER_PID" "https://127.0.0.1:$ADAPTER_PORT/healthz" "$DIR/logs/adapter.log"
sleep 5 # their watches list

phase() { # name window: apply the EHPAs with this window, wait for every TSP; key=value into results/NAME.txt
    local name=$1 window=$2 t0 q0 c0 q1 c1
    python3 "$TOOL" ehpas --workloads "$EHPAS" --namespaces "$NAMESPACES" --window "$window" --days "$DAYS" \
        --out "$DIR/ehpas-$name.json"
    q0=$(range_queries); c0=$(cpu_ticks "$CRANED_PID"); t0=$(date +%s)
    "$KUBECTL" apply --server-side -f "$DIR/ehpas-$name.json" >/dev/null
    local applied_s=$(($(date +%s) - t0))
    python3 "$TOOL" wait-tsps --count "$EHPAS" --since "$t0" --window "$window" --craned-pid "$CRANED_PID" \
        --timeout "$TIMEOUT" --stats "$RESULTS/$name.txt"
    q1=$(range_queries); c1=$(cpu_ticks "$CRANED_PID")
    printf 'applied_s=%s\nrange_queries=%s\ncraned_cpu_s=%s\n' "$applied_s" "$((q1 - q0))" "$(secs $((c1 - c0)))" \
        >>"$RESULTS/$name.txt"
    log "$name: $(tr '\n' ' ' <"$RESULTS/$name.txt")"
}
log "phase 1: $EHPAS EHPAs with prediction"
phase predict "$WINDOW"
log "phase 2: every status rebuilt (window $((WINDOW + 60)) s)"
phase refresh "$((WINDOW + 60))"

log "phase 3: $CLIENTS clients ask metrics-adapter for every EHPA's two metrics for $DURATION"
python3 "$TOOL" urls --workloads "$EHPAS" --namespaces "$NAMESPACES" | sed "s|^|https://127.0.0.1:$ADAPTER_PORT|" >"$DIR/urls.txt"
a0=$(cpu_ticks "$ADAPTER_PID")
"$DIR/bin/loadgen" -urls "$DIR/urls.txt" -c "$CLIENTS" -duration "$DURATION" -warmup 2s \
    -cert "$PKI/front-proxy-client.crt" -key "$PKI/front-proxy-client.key" -cacert "$AGGREGATED_SERVING_CA" \
    -H "X-Remote-User: ferrocrane-admin" -H "X-Remote-Group: system:masters" >"$RESULTS/serve.json"
a1=$(cpu_ticks "$ADAPTER_PID")
log "serve: $(cat "$RESULTS/serve.json")"
CRANED_HWM=$(status_kib "$CRANED_PID" VmHWM); ADAPTER_HWM=$(status_kib "$ADAPTER_PID" VmHWM)
curl -sf "http://127.0.0.1:$CRANED_PORT/metrics" >"$RESULTS/craned-metrics.txt"
N_TSPS=$("$KUBECTL" get tsp -A --no-headers | wc -l)

python3 - "$RESULTS" "$EHPAS" "$N_TSPS" "$CRANED_HWM" "$ADAPTER_HWM" "$((a1 - a0))" "$HZ" "$COMMAND_LINE" "${BUILT_FROM:-given binaries}" "$DAYS" "$WINDOW" "$CLIENTS" "$DURATION" "${BENCH_CRANED_ARGS:-}" <<'PY'
import json, sys
res, ehpas, tsps, craned_hwm, adapter_hwm, aticks, hz, cmd, built, days, window, clients, duration, extra = sys.argv[1:]
def kv(name):
    return dict(l.strip().split("=", 1) for l in open("%s/%s.txt" % (res, name)) if "=" in l)
p, r = kv("predict"), kv("refresh")
serve = json.load(open("%s/serve.json" % res))
n = int(ehpas)
reqs = serve["requests"]
print("| measure | %s EHPAs with prediction |" % ehpas)
print("|---|---|")
print("| TimeSeriesPredictions made and Ready (PredictSucceed) | %s |" % tsps)
for label, d in (("first prediction of all (EHPAs applied → every TSP Ready)", p), ("refresh of all (window changed → every status rebuilt)", r)):
    print("| %s: first / half / all | %s / %s / **%s s** |" % (label, d["first_s"], d["half_s"], d["all_s"]))
    print("| … Prometheus range queries (per TSP) | %s (%.2f) |" % (d["range_queries"], int(d["range_queries"]) / n))
    print("| … craned CPU | %s s |" % d["craned_cpu_s"])
def reconcile(controller):
    got = {}
    for line in open("%s/craned-metrics.txt" % res):
        for part in ("sum", "count"):
            if line.startswith("craned_reconcile_duration_seconds_%s{" % part) and 'controller="%s"' % controller in line:
                got[part] = float(line.rsplit(" ", 1)[1])
    return got.get("count", 0), 1000 * got.get("sum", 0) / max(1, got.get("count", 0))
for c in ("timeseriesprediction", "effectivehorizontalpodautoscaler"):
    print("| craned reconciles of %s over both phases: count, mean | %d, %.1f ms |" % ((c,) + reconcile(c)))
print("| craned peak RSS | %.0f MiB |" % (int(craned_hwm) / 1024))
print("| metrics-adapter, %s clients × %s: p50 / p99 (HTTP statuses) | %.2f / **%.2f ms** (%s) |"
      % (clients, duration, serve["p50_ms"], serve["p99_ms"], serve["statuses"]))
print("| … throughput, adapter CPU per request | %.0f req/s, %.0f µs |"
      % (serve["throughput_rps"], int(aticks) / int(hz) / max(1, reqs) * 1e6))
print("| metrics-adapter peak RSS | %.0f MiB |" % (int(adapter_hwm) / 1024))
print()
print("Command: `%s` (%s; %s days of history, window %s s; craned flags: %s)." % (cmd.strip(), built, days, window, extra or "defaults"))
print("loadgen: %s" % json.dumps(serve))
PY
