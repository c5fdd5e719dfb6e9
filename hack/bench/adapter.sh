#!/usr/bin/env bash
# Side-by-side benchmark (issue 4): ferrocrane's metrics-adapter against prometheus-adapter
# v0.12.0 (Go), with ~100,000 series across 500 metrics in a real Prometheus and a real local
# control plane (hack/local-up.sh).
#
#   hack/bench/adapter.sh [DIR]     DIR (cluster state, logs, raw results) defaults to .local/bench-adapter
#
# Set-up: objects.py makes 200 Running pods (2 containers each) in 10 namespaces and 10 nodes;
# series.py serves cAdvisor-, kubelet- and application-style series for exactly those objects
# (100,020 series, 500 metric names); a Prometheus of its own scrapes it every 15s (nothing
# else, so the series count is exact). Both adapters run with the same flags and the same
# rules (hack/bench/adapter-config.yaml), against that Prometheus, serving HTTPS with the
# cluster's front-proxy CA for authentication and the API server for authorization.
#
# For each adapter, BENCH_ROUNDS times (alternating which goes first), a fresh process:
#   - relist: start → every expected metric listed by custom.metrics.k8s.io discovery (and
#     metrics.k8s.io answering); then BENCH_RELIST_WINDOW seconds idle, over which the
#     adapter's CPU per relist and Prometheus's /api/v1/series time per relist are taken;
#   - three load phases, BENCH_CLIENTS concurrent clients (hack/bench/loadgen: one HTTP/1.1
#     keep-alive connection each, front-proxy client certificate + X-Remote-User/-Group)
#     for BENCH_DURATION after a 2s warm-up: custom metrics (namespaces/NS/pods/*/METRIC
#     with a label selector, as an HPA asks), kubectl top pods -n NS, kubectl top nodes;
#     per phase: latency p50/p99, throughput, the adapter's CPU per request, Prometheus's
#     /api/v1/query time per request (its own request histogram), and the mean latency beyond it;
#   - peak RSS: VmHWM at the end of the round.
# Medians over rounds go into a table, and into docs/benchmarks.md (section "## metrics-adapter
# vs prometheus-adapter") unless BENCH_WRITE_DOCS=0.
#
# Environment:
#   BENCH_ADAPTERS="go ours"  which to measure
#   BENCH_ROUNDS=3  BENCH_CLIENTS=32  BENCH_DURATION=20s  BENCH_RELIST=30s  BENCH_RELIST_WINDOW=62
#   BENCH_MAX_AGE=1m (--metrics-max-age)
#   BENCH_METRICS=500  BENCH_PODS=200  BENCH_NAMESPACES=10  BENCH_NODES=10
#   BENCH_WRITE_DOCS=1
#   ADAPTER_BIN            our binary; unset: cargo build --release -p ferrocrane-adapter in
#   ADAPTER_SRC            this checkout (default), then $CARGO_TARGET_DIR/release/metrics-adapter
#   GO_ADAPTER_BIN         default $FERROCRANE_CACHE/bin/prometheus-adapter (hack/originals.sh)
#
# Everything it starts (cluster, Prometheus, exporter, adapters) is stopped on exit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
BENCH="$FERROCRANE_ROOT/hack/bench"
COMMAND_LINE="$(printf '%q ' "$0" "$@")"

DIR="${1:-$FERROCRANE_ROOT/.local/bench-adapter}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

ADAPTERS="${BENCH_ADAPTERS:-go ours}"
ROUNDS="${BENCH_ROUNDS:-3}"
CLIENTS="${BENCH_CLIENTS:-32}"
DURATION="${BENCH_DURATION:-20s}"
RELIST="${BENCH_RELIST:-30s}"
RELIST_WINDOW="${BENCH_RELIST_WINDOW:-62}"
# How far back a relist looks: longer than the scrape interval, or a relist that falls between
# two scrapes finds no series (upstream's default, the relist interval, would be 30s here).
MAX_AGE="${BENCH_MAX_AGE:-1m}"
METRICS="${BENCH_METRICS:-500}"
PODS="${BENCH_PODS:-200}"
NAMESPACES="${BENCH_NAMESPACES:-10}"
NODES="${BENCH_NODES:-10}"
WRITE_DOCS="${BENCH_WRITE_DOCS:-1}"
HZ="$(getconf CLK_TCK)"
SCRAPE_INTERVAL=15s

# --- binaries
GO_ADAPTER_BIN="${GO_ADAPTER_BIN:-$FERROCRANE_BIN/prometheus-adapter}"
if [[ " $ADAPTERS " == *" go "* && -z ${BENCH_SKIP_BUILD:-} ]]; then
    "$FERROCRANE_ROOT/hack/originals.sh" prometheus-adapter
fi
if [[ " $ADAPTERS " == *" ours "* && -z ${ADAPTER_BIN:-} ]]; then
    ADAPTER_SRC="${ADAPTER_SRC:-$FERROCRANE_ROOT}"
    log "building ours: cargo build --release -p ferrocrane-adapter (in $ADAPTER_SRC)"
    (cd "$ADAPTER_SRC" && cargo build --release -p ferrocrane-adapter)
    ADAPTER_BUILT_FROM="$ADAPTER_SRC at $(git -C "$ADAPTER_SRC" log -1 --format='%h (%s)' 2>/dev/null)"
    ADAPTER_BIN="$CARGO_TARGET_DIR/release/metrics-adapter"
fi
bin_of() { case $1 in go) echo "$GO_ADAPTER_BIN" ;; ours) echo "$ADAPTER_BIN" ;; esac; }
for a in $ADAPTERS; do
    [[ -x "$(bin_of "$a")" ]] || die "adapter '$a': $(bin_of "$a") is not an executable"
done
mkdir -p "$DIR/bin"
(cd "$BENCH/loadgen" && go build -o "$DIR/bin/loadgen" .)

# --- cleanup, whatever happens
ADAPTER_PID=""
BG_PIDS=()
cleanup() {
    local rc=$?
    local p
    for p in $ADAPTER_PID "${BG_PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    sleep 1
    for p in $ADAPTER_PID "${BG_PIDS[@]}"; do
        kill -KILL "$p" 2>/dev/null || true
    done
    "$FERROCRANE_ROOT/hack/local-down.sh" "$DIR" >&2 || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

# --- cluster, objects, series
log "starting the local control plane in $DIR"
FERROCRANE_LOCAL_SERVICES="" "$FERROCRANE_ROOT/hack/local-up.sh" "$DIR" >"$DIR/local-up.out"
set -a; source "$DIR/env"; set +a
PKI="$(dirname "$FRONT_PROXY_CA")"

log "creating $PODS Running pods in $NAMESPACES namespaces and $NODES nodes"
python3 "$BENCH/objects.py" --pods "$PODS" --namespaces "$NAMESPACES" --nodes "$NODES" --running

SERIES_PORT=$(free_port)
EXPECTED="$DIR/expected-metrics.txt"
python3 "$BENCH/series.py" --port "$SERIES_PORT" --metrics "$METRICS" --expected "$EXPECTED" \
    >"$DIR/logs/series.log" 2>&1 &
BG_PIDS+=($!)

BENCH_PROM_PORT=$(free_port)
BENCH_PROM_URL="http://127.0.0.1:$BENCH_PROM_PORT"
mkdir -p "$DIR/bench-prometheus/data"
cat >"$DIR/bench-prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: $SCRAPE_INTERVAL
  scrape_timeout: 10s
scrape_configs:
- job_name: bench-app
  static_configs:
  - targets: ['127.0.0.1:$SERIES_PORT']
EOF
prometheus --config.file "$DIR/bench-prometheus/prometheus.yml" \
    --storage.tsdb.path "$DIR/bench-prometheus/data" \
    --web.listen-address "127.0.0.1:$BENCH_PROM_PORT" >"$DIR/logs/bench-prometheus.log" 2>&1 &
BG_PIDS+=($!)
PROM_PID=$!
prom_query() { curl -sf --data-urlencode "query=$1" "$BENCH_PROM_URL/api/v1/query" \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'; }
# Three scrapes in: rate() and irate() over the rules' windows have two points or more.
deadline=$((SECONDS + 180))
until [[ "$(prom_query 'count_over_time(up{job="bench-app"}[5m]) >= 3' 2>/dev/null || echo 0)" != 0 ]]; do
    ((SECONDS < deadline)) || { tail -5 "$DIR/logs/series.log" "$DIR/logs/bench-prometheus.log" >&2; die "the bench Prometheus has not scraped series.py 3 times in 180s"; }
    sleep 2
done
N_SERIES=$(prom_query 'count({job="bench-app",__name__!~"up|scrape_.*"})')
N_METRICS=$(prom_query 'count(count by (__name__) ({job="bench-app",__name__!~"up|scrape_.*"}))')
N_PODS=$("$KUBECTL" get pods -A --no-headers --field-selector status.phase=Running 2>/dev/null | grep -c '^bench-' || true)
log "Prometheus holds $N_SERIES series of $N_METRICS metrics; $N_PODS Running pods"

# --- measuring
RESULTS="$DIR/results"
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
for kind in custom top-pods top-nodes; do
    python3 "$BENCH/adapter_tool.py" urls "$kind" "$EXPECTED" "$NAMESPACES" >"$DIR/urls-$kind.paths"
done
export BENCH_CERT="$PKI/front-proxy-client.crt" BENCH_KEY="$PKI/front-proxy-client.key"
export BENCH_CACERT="$AGGREGATED_SERVING_CA" BENCH_USER=ferrocrane-admin BENCH_GROUP=system:masters

# The same flags for both (upstream's names); only the binary differs.
adapter_args() { # port
    echo --bind-address 127.0.0.1 --secure-port "$1" \
        --tls-cert-file "$AGGREGATED_SERVING_CERT" --tls-private-key-file "$AGGREGATED_SERVING_KEY" \
        --requestheader-client-ca-file "$FRONT_PROXY_CA" --requestheader-allowed-names "$FRONT_PROXY_ALLOWED_NAMES" \
        --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
        --requestheader-extra-headers-prefix X-Remote-Extra- \
        --authentication-kubeconfig "$KUBECONFIG" --authorization-kubeconfig "$KUBECONFIG" \
        --lister-kubeconfig "$KUBECONFIG" \
        --prometheus-url "$BENCH_PROM_URL/" --config "$BENCH/adapter-config.yaml" \
        --metrics-relist-interval "$RELIST" --metrics-max-age "$MAX_AGE"
}

run_one() { # adapter round
    local a=$1 r=$2 bin port pid t0 out="$RESULTS/run-$1-$2" kv=()
    bin="$(bin_of "$a")"
    port=$(free_port)
    log "round $r: $a ($bin) on :$port"
    local s0
    read -r -a s0 <<<"$(python3 "$BENCH/adapter_tool.py" prom-stats "$BENCH_PROM_URL")"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    setsid "$bin" $(adapter_args "$port") >"$DIR/logs/adapter-$a-$r.log" 2>&1 </dev/null &
    ADAPTER_PID=$!
    pid=$ADAPTER_PID
    local url="https://127.0.0.1:$port" relist_first
    relist_first=$(python3 "$BENCH/adapter_tool.py" wait-relist "$url" "$t0" "$EXPECTED" 300) \
        || { tail -20 "$DIR/logs/adapter-$a-$r.log" >&2; die "$a: discovery never listed every metric"; }
    local rss_relisted hwm_relisted s1 cpu1
    rss_relisted=$(status_kib "$pid" VmRSS)
    hwm_relisted=$(status_kib "$pid" VmHWM)
    read -r -a s1 <<<"$(python3 "$BENCH/adapter_tool.py" prom-stats "$BENCH_PROM_URL")"
    cpu1=$(cpu_ticks "$pid")
    # Series requests the first relist made: how many one relist makes (distinct series queries).
    local per_relist=$((s1[0] - s0[0]))
    log "  first relist after ${relist_first}s ($per_relist series requests); idle ${RELIST_WINDOW}s"
    for kind in custom top-pods top-nodes; do
        python3 "$BENCH/adapter_tool.py" get "$url" "$(head -1 "$DIR/urls-$kind.paths")" "$out.sample-$kind.json" \
            >"$out.sample-$kind.status"
        log "  one $kind request: HTTP/items $(cat "$out.sample-$kind.status")"
    done
    sleep "$RELIST_WINDOW"
    local s2 cpu2
    read -r -a s2 <<<"$(python3 "$BENCH/adapter_tool.py" prom-stats "$BENCH_PROM_URL")"
    cpu2=$(cpu_ticks "$pid")
    kv+=(relist_first_s="$relist_first" rss_relisted_kib="$rss_relisted" hwm_relisted_kib="$hwm_relisted" per_relist="$per_relist"
        idle_series_requests="$((s2[0] - s1[0]))" idle_series_s="$(echo "${s2[1]} - ${s1[1]}" | bc -l)"
        idle_cpu_ticks="$((cpu2 - cpu1))" idle_queries="$((s2[2] - s1[2]))")
    for kind in custom top-pods top-nodes; do
        sed "s|^|$url|" "$DIR/urls-$kind.paths" >"$DIR/urls-$kind.txt"
        local p0 c0 p1 c1 pc0 pc1
        read -r -a p0 <<<"$(python3 "$BENCH/adapter_tool.py" prom-stats "$BENCH_PROM_URL")"
        c0=$(cpu_ticks "$pid"); pc0=$(cpu_ticks "$PROM_PID")
        "$DIR/bin/loadgen" -urls "$DIR/urls-$kind.txt" -c "$CLIENTS" -duration "$DURATION" -warmup 2s \
            -cert "$BENCH_CERT" -key "$BENCH_KEY" -cacert "$BENCH_CACERT" \
            -H "X-Remote-User: $BENCH_USER" -H "X-Remote-Group: $BENCH_GROUP" >"$out.$kind.load.json"
        c1=$(cpu_ticks "$pid"); pc1=$(cpu_ticks "$PROM_PID")
        read -r -a p1 <<<"$(python3 "$BENCH/adapter_tool.py" prom-stats "$BENCH_PROM_URL")"
        kv+=("${kind}_cpu_ticks=$((c1 - c0))" "${kind}_prom_cpu_ticks=$((pc1 - pc0))"
            "${kind}_queries=$((p1[2] - p0[2]))" "${kind}_query_s=$(echo "${p1[3]} - ${p0[3]}" | bc -l)"
            "${kind}_series_requests=$((p1[0] - p0[0]))" "${kind}_hwm_kib=$(status_kib "$pid" VmHWM)")
        log "  $kind: $(cat "$out.$kind.load.json")"
    done
    local hwm
    hwm=$(status_kib "$pid" VmHWM)
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    ADAPTER_PID=""
    python3 - "$out" "$a" "$r" "$HZ" "$hwm" "${kv[@]}" <<'EOF'
import json, sys
out, a, r, hz, hwm = sys.argv[1:6]
hz = float(hz)
kv = dict(x.split("=", 1) for x in sys.argv[6:])
res = {"adapter": a, "round": int(r), "raw": kv}
res["relist_first_s"] = float(kv["relist_first_s"])
res["vmhwm_mib"] = int(hwm) / 1024
res["rss_relisted_mib"] = int(kv["rss_relisted_kib"]) / 1024
res["vmhwm_relisted_mib"] = int(kv["hwm_relisted_kib"]) / 1024
for phase in ("custom", "top-pods", "top-nodes"):
    res[phase + "_vmhwm_mib"] = int(kv[phase + "_hwm_kib"]) / 1024
per = int(kv["per_relist"]) or 1
relists = int(kv["idle_series_requests"]) / per
if relists > 0:
    # Idle CPU is the relists' plus whatever else the process does idle (little), per relist.
    res["relist_cpu_ms"] = int(kv["idle_cpu_ticks"]) / hz / relists * 1000
    res["relist_prom_ms"] = float(kv["idle_series_s"]) / relists * 1000
res["relists_in_window"] = relists
for kind in ("custom", "top-pods", "top-nodes"):
    load = json.load(open("%s.%s.load.json" % (out, kind)))
    res[kind + "_load"] = load
    n = load["requests"]
    if not n or load["errors"]:
        continue
    res[kind + "_p50_ms"] = load["p50_ms"]
    res[kind + "_p99_ms"] = load["p99_ms"]
    res[kind + "_rps"] = load["throughput_rps"]
    # The CPU and query counters also cover the 2s warm-up: scale per request by all requests
    # sent, estimated from the measured rate over warm-up + measurement.
    sent = n * (load["duration_s"] + 2) / load["duration_s"]
    res[kind + "_cpu_ms"] = int(kv[kind + "_cpu_ticks"]) / hz / sent * 1000
    res[kind + "_prom_cpu_ms"] = int(kv[kind + "_prom_cpu_ticks"]) / hz / sent * 1000
    q = int(kv[kind + "_queries"])
    res[kind + "_queries_per_request"] = q / sent
    if q:
        res[kind + "_prom_ms"] = float(kv[kind + "_query_s"]) / sent * 1000
        res[kind + "_overhead_ms"] = load["mean_ms"] - res[kind + "_prom_ms"]
with open(out + ".json", "w") as f:
    json.dump(res, f, indent=1, sort_keys=True)
print("  " + " ".join("%s=%s" % (k, round(v, 2) if isinstance(v, float) else v)
                      for k, v in sorted(res.items()) if not isinstance(v, dict)), file=sys.stderr)
EOF
}

read -r -a order <<<"$ADAPTERS"
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2 == 0)); then
        for ((i = ${#order[@]} - 1; i >= 0; i--)); do run_one "${order[$i]}" "$r"; done
    else
        for a in "${order[@]}"; do run_one "$a" "$r"; done
    fi
done

# --- report
NOTES="$DIR/notes.md"
{
    echo "- Command: \`${ADAPTER_SRC:+ADAPTER_SRC=$ADAPTER_SRC }$(env | grep -E '^BENCH_(ADAPTERS|ROUNDS|CLIENTS|DURATION|RELIST|METRICS|PODS|NAMESPACES|NODES)' | sort | tr '\n' ' ')${COMMAND_LINE% }\`"
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). The control plane, Prometheus, the series exporter, the load generator and the adapter share these CPUs; other builds may have been running."
    echo "- Data: $N_SERIES series of $N_METRICS metrics in a Prometheus of its own ($(prometheus --version 2>&1 | head -1 | awk '{print $3}'), scraping hack/bench/series.py every $SCRAPE_INTERVAL); $N_PODS Running pods (2 containers each) in $NAMESPACES namespaces and $NODES nodes, made by hack/bench/objects.py in a kube-apiserver $KUBE_VERSION from hack/local-up.sh. Rules: hack/bench/adapter-config.yaml (catch-all namespaced rules, so every relist reads every series)."
    adapters=""
    [[ " $ADAPTERS " == *" go "* ]] && adapters+="Go: \`$GO_ADAPTER_BIN\` (sigs.k8s.io/prometheus-adapter v0.12.0, hack/tools/prometheus-adapter); "
    [[ " $ADAPTERS " == *" ours "* ]] && adapters+="ours: \`$ADAPTER_BIN\`${ADAPTER_BUILT_FROM:+ built from $ADAPTER_BUILT_FROM}; "
    echo "- Adapters: ${adapters}each started fresh per round with the same upstream flags (serving cert, front-proxy requestheader CA and names, authentication/authorization/lister kubeconfig, \`--prometheus-url\`, \`--config\`, \`--metrics-relist-interval=$RELIST --metrics-max-age=$MAX_AGE\`)."
    echo "- Relist: *start → all metrics discoverable* is from process start until custom.metrics.k8s.io/v1beta2 discovery lists every one of the $(wc -l <"$EXPECTED") expected metrics (and metrics.k8s.io answers), polled every 100 ms; *CPU per steady relist* is the adapter's utime+stime over ${RELIST_WINDOW}s idle divided by the relists in it (counted from the /api/v1/series requests Prometheus answered); the Prometheus share is its own request-duration histogram for /api/v1/series."
    echo "- Requests: $CLIENTS concurrent clients (hack/bench/loadgen, one HTTP/1.1 keep-alive TLS connection each, the front-proxy client certificate and X-Remote-User/X-Remote-Group headers, as the aggregator sends them) for $DURATION after a 2s warm-up, per phase; *custom*: \`/apis/custom.metrics.k8s.io/v1beta2/namespaces/NS/pods/*/METRIC?labelSelector=app.kubernetes.io/managed-by=helm\` over 50 metrics × $NAMESPACES namespaces (20 pods each); *top pods*: \`/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods\`; *top nodes*: \`/apis/metrics.k8s.io/v1beta1/nodes\`. *Prometheus query time per request* is the time Prometheus spent answering /api/v1/query (its own histogram) per adapter request; *mean latency beyond* is the mean request latency minus that (the adapter's own work, API-server lookups and authorization included; queries issued in parallel make it an underestimate)."
} >"$NOTES"
echo
docs_args=()
if [[ $WRITE_DOCS == 1 ]]; then docs_args=(--docs "$FERROCRANE_ROOT/docs/benchmarks.md" --notes "$NOTES"); fi
python3 "$BENCH/adapter_tool.py" table "$RESULTS" "${docs_args[@]}"
echo
cat "$NOTES"
[[ $WRITE_DOCS == 1 ]] && log "wrote the table into docs/benchmarks.md"
log "raw results in $RESULTS"
