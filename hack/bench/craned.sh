#!/usr/bin/env bash
# Full-round benchmark of craned at the scale of the project issue: 20,000 containers with
# 7 days of 1-minute usage history (cAdvisor's container_cpu_usage_seconds_total counter and
# container_memory_working_set_bytes gauge, labels namespace/pod/container) in a real
# Prometheus, and a real local control plane (hack/local-up.sh) holding their Deployments.
#
#   hack/bench/craned.sh [DIR]      DIR (cluster state, history, logs, results) defaults to .local/bench-craned
#
# Layout (defaults): 5,000 Deployments (hack/bench/objects.py: deploy-NNNNN in 10 namespaces
# bench-NN, pod template containers "app" and "proxy", paused, no pods: the Resource
# recommender reads only the pod template and Prometheus) × 2 pods of history each × 2
# containers = 20,000 containers, 40,000 series. Pods are named like a ReplicaSet's
# (deploy-NNNNN-<hash>-<5 chars>), what craned's pod-name regex matches.
#
# Phases, each timed:
#   1. cluster: local-up.sh (bare), the CRDs, the Deployments;
#   2. history: hack/bench/craned_tool.py generates the series in time slices aligned to
#      BENCH_BLOCK_HOURS and turns each into one TSDB block with `promtool tsdb
#      create-blocks-from openmetrics` (the next slice is generated while promtool reads the
#      previous one; each slice is deleted once converted);
#   3. Prometheus: a Prometheus of its own on those blocks (no scrape jobs, compaction off so
#      nothing rewrites blocks during the round), start → /-/ready;
#   4. craned (release build) with Crane's defaults and config/craned/recommendation-configuration.yaml,
#      start → /readyz;
#   5. the round: one RecommendationRule over every Deployment with the Resource recommender
#      (runInterval 24h, so exactly one round), timed from its creation until its
#      status.runNumber is 1 (craned writes the rule's status once, after every Recommendation
#      of the round is written), then every Recommendation is checked for a recommendedValue.
# Figures: the round's wall time; Prometheus range queries during it (Prometheus' own
# prometheus_http_requests_total{handler="/api/v1/query_range"}, before/after) and the time
# Prometheus spent answering them; craned's CPU seconds (utime+stime) over the round and its
# peak RSS (VmHWM, start-up included); Prometheus' peak RSS and CPU; kube-apiserver requests
# during the round; history generation and backfill times. They are printed, and written into
# docs/benchmarks.md (section "## craned", block "### Full round") when BENCH_WRITE_DOCS=1
# (the default at the full 20,000 × 7 days scale only).
#
# Environment:
#   BENCH_CONTAINERS=20000         total containers (= Deployments × pods × 2)
#   BENCH_PODS_PER_WORKLOAD=2      pods of history per Deployment
#   BENCH_WORKLOADS                Deployments (default: BENCH_CONTAINERS / (2 × pods))
#   BENCH_NAMESPACES=10  BENCH_DAYS=7
#   BENCH_BLOCK_HOURS=18           slice and block length: 2, 6, 18 or 54 (disk: two slices of
#                                  OpenMetrics at once, ~131 bytes a sample: 5.7 GB a slice at 18h)
#   BENCH_LEAD_MINUTES=15          the last slice reaches this far past its generation, so the
#                                  round's window [now - days, now] is covered
#   BENCH_PROM_MAX_SAMPLES=100000000  --query.max-samples
#   BENCH_CRANED_ARGS              extra craned flags (e.g. --kube-api-qps=200)
#   BENCH_ROUND_TIMEOUT=7200       seconds
#   BENCH_SECOND_ROUND=1           1 runs round 2: the rule's run-once trigger, same craned, same
#                                  history (what a round costs when nothing changed)
#   BENCH_COMPARE_RANGE=1          1 runs round 3: craned restarted with --prometheus-remote-read=off,
#                                  run-once again (Prometheus' cost of range queries, same history)
#   BENCH_WRITE_DOCS               1 writes docs/benchmarks.md (default 1 at full scale, else 0)
#   BENCH_DOCS                     the file to write (default docs/benchmarks.md of this checkout)
#   BENCH_KEEP_HISTORY=0           1 keeps the TSDB (DIR/history) after the run
#   CRANED_BIN                     the binary; unset: cargo build --release -p ferrocrane-craned in
#   CRANED_SRC                     this checkout (default), with CARGO_TARGET_DIR (default
#                                  ~/.cache/ferrocrane/target-release), then .../release/craned
#
# Everything it starts (the cluster, Prometheus, craned) is stopped on exit, whatever happens.
# Only 127.0.0.1 is contacted.
set -euo pipefail
USER_TARGET_DIR="${CARGO_TARGET_DIR:-}"
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
BENCH="$FERROCRANE_ROOT/hack/bench"
COMMAND_LINE="$(printf '%q ' "$0" "$@")"
TOOL="$BENCH/craned_tool.py"

DIR="${1:-$FERROCRANE_ROOT/.local/bench-craned}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

CONTAINERS_PER_POD=2 # objects.py's pod template: app, proxy
CONTAINERS="${BENCH_CONTAINERS:-20000}"
PODS_PER="${BENCH_PODS_PER_WORKLOAD:-2}"
NAMESPACES="${BENCH_NAMESPACES:-10}"
DAYS="${BENCH_DAYS:-7}"
WORKLOADS="${BENCH_WORKLOADS:-$((CONTAINERS / (PODS_PER * CONTAINERS_PER_POD)))}"
((WORKLOADS >= 1)) || die "BENCH_CONTAINERS=$CONTAINERS is less than one Deployment's $((PODS_PER * CONTAINERS_PER_POD)) containers"
CONTAINERS=$((WORKLOADS * PODS_PER * CONTAINERS_PER_POD))
BLOCK_HOURS="${BENCH_BLOCK_HOURS:-18}"
LEAD="${BENCH_LEAD_MINUTES:-15}"
MAX_SAMPLES="${BENCH_PROM_MAX_SAMPLES:-100000000}"
read -r -a CRANED_EXTRA <<<"${BENCH_CRANED_ARGS:-}"
ROUND_TIMEOUT="${BENCH_ROUND_TIMEOUT:-7200}"
SECOND_ROUND="${BENCH_SECOND_ROUND:-1}"
COMPARE_RANGE="${BENCH_COMPARE_RANGE:-1}"
if ((CONTAINERS == 20000 && DAYS == 7)); then WRITE_DOCS="${BENCH_WRITE_DOCS:-1}"; else WRITE_DOCS="${BENCH_WRITE_DOCS:-0}"; fi
DOCS="${BENCH_DOCS:-$FERROCRANE_ROOT/docs/benchmarks.md}"
HZ="$(getconf CLK_TCK)"
RULE=bench-round

# --- binary
if [[ -z ${CRANED_BIN:-} ]]; then
    CRANED_SRC="${CRANED_SRC:-$FERROCRANE_ROOT}"
    export CARGO_TARGET_DIR="${USER_TARGET_DIR:-$FERROCRANE_CACHE/target-release}"
    log "building craned: cargo build --release -p ferrocrane-craned (in $CRANED_SRC, CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
    (cd "$CRANED_SRC" && cargo build --release -p ferrocrane-craned)
    CRANED_BUILT_FROM="$CRANED_SRC at $(git -C "$CRANED_SRC" log -1 --format='%h (%s)' 2>/dev/null)"
    CRANED_BIN="$CARGO_TARGET_DIR/release/craned"
fi
[[ -x $CRANED_BIN ]] || die "CRANED_BIN=$CRANED_BIN is not an executable"
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    die "prometheus and promtool are missing: run hack/setup.sh"
fi

# --- cleanup, whatever happens
CRANED_PID=""
PROM_PID=""
cleanup() {
    local rc=$? p
    for p in $CRANED_PID $PROM_PID; do kill -TERM "$p" 2>/dev/null || true; done
    for p in $CRANED_PID $PROM_PID; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    "$FERROCRANE_ROOT/hack/local-down.sh" "$DIR" >&2 || true
    if [[ ${BENCH_KEEP_HISTORY:-0} != 1 ]]; then rm -rf "$DIR/history"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free loopback ports, and a process' CPU ticks (utime+stime) / VmHWM / VmRSS (KiB).
free_ports() { python3 "$TOOL" free-ports "$1"; } # count
proc() { python3 "$TOOL" proc "$1" "$2"; }         # pid ticks|hwm|rss
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l | xargs printf '%.1f'; }
kv() { grep "^$2=" "$1" | head -1 | cut -d= -f2-; } # file key
wait_ready() { # name pid url log timeout: until url answers 2xx, while pid lives
    local deadline=$((SECONDS + $5))
    until curl -sf "$3" >/dev/null 2>&1; do
        kill -0 "$2" 2>/dev/null || { tail -20 "$4" >&2; die "$1 exited (see $4)"; }
        ((SECONDS < deadline)) || die "$1 not ready in $5 s (see $4)"
        sleep 0.1
    done
}
# Sum of kube-apiserver's request counter, all or writes only. Writes are craned's: they
# leave out what kube-controller-manager writes meanwhile — its leader-election leases, and
# the status it writes back to a Deployment after craned annotates it (one per Deployment).
api_requests() { # all|writes
    "$KUBECTL" get --raw /metrics 2>/dev/null | awk -v w="$1" '/^apiserver_request_total\{/ {
        if (w == "all") { s += $NF; next }
        if ($0 !~ /verb="(POST|PUT|PATCH|DELETE|APPLY)"/ || $0 ~ /resource="leases"/) next
        if ($0 ~ /resource="deployments"/ && $0 ~ /subresource="status"/) next
        s += $NF } END {printf "%d\n", s}'
}
# Writes by resource, subresource and verb, for the record (results/writes-N.txt).
api_writes_by_kind() {
    "$KUBECTL" get --raw /metrics 2>/dev/null | awk '/^apiserver_request_total\{/ && /verb="(POST|PUT|PATCH|DELETE|APPLY)"/ {
        match($0, /resource="[^"]*"/); r = substr($0, RSTART, RLENGTH)
        match($0, /subresource="[^"]*"/); sr = substr($0, RSTART, RLENGTH)
        match($0, /verb="[^"]*"/); v = substr($0, RSTART, RLENGTH)
        n[r " " sr " " v] += $NF } END {for (k in n) printf "%s %d\n", k, n[k]}' | sort
}

RESULTS="$DIR/results"
rm -rf "$RESULTS" "$DIR/history"
mkdir -p "$RESULTS" "$DIR/history"
log "$CONTAINERS containers: $WORKLOADS Deployments × $PODS_PER pods × $CONTAINERS_PER_POD containers in $NAMESPACES namespaces, $DAYS days at 1m"

# --- 1. cluster and Deployments
t=$(now)
log "starting the local control plane in $DIR"
FERROCRANE_LOCAL_SERVICES="" "$FERROCRANE_ROOT/hack/local-up.sh" "$DIR" >"$DIR/local-up.out"
set -a; source "$DIR/env"; set +a
"$KUBECTL" apply --server-side -f "$FERROCRANE_ROOT/deploy/crds" >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s \
    crd/recommendations.analysis.crane.io crd/recommendationrules.analysis.crane.io >/dev/null
"$KUBECTL" create namespace crane-system >/dev/null # craned's --pod-namespace (oom-record)
log "creating $WORKLOADS Deployments in $NAMESPACES namespaces"
python3 "$BENCH/objects.py" --deployments "$WORKLOADS" --namespaces "$NAMESPACES"
N_DEPLOY=$("$KUBECTL" get deployments -A --no-headers 2>/dev/null | grep -c '^bench-' || true)
((N_DEPLOY == WORKLOADS)) || die "expected $WORKLOADS Deployments, the cluster has $N_DEPLOY"
CLUSTER_S=$(since "$t")

# --- 2. history
log "generating and backfilling the history"
python3 "$TOOL" history --data "$DIR/history/data" --work "$DIR/history" --workloads "$WORKLOADS" \
    --namespaces "$NAMESPACES" --pods "$PODS_PER" --days "$DAYS" --block-hours "$BLOCK_HOURS" \
    --lead-minutes "$LEAD" --stats "$RESULTS/history.txt"

# --- 3. Prometheus on the blocks
read -r PROM_PORT CRANED_PORT CRANED_HEALTH <<<"$(free_ports 3)"
PROM_URL="http://127.0.0.1:$PROM_PORT"
printf 'global:\n  scrape_interval: 1m\n' >"$DIR/history/prometheus.yml"
t=$(now)
# Retention far beyond the history; min = max block duration (2h) turns compaction off, so the
# backfilled blocks stay as they are during the round.
prometheus --config.file "$DIR/history/prometheus.yml" --storage.tsdb.path "$DIR/history/data" \
    --web.listen-address "127.0.0.1:$PROM_PORT" --storage.tsdb.retention.time=3650d \
    --storage.tsdb.min-block-duration=2h --storage.tsdb.max-block-duration=2h \
    --query.max-samples="$MAX_SAMPLES" >"$DIR/logs/bench-prometheus.log" 2>&1 &
PROM_PID=$!
wait_ready prometheus "$PROM_PID" "$PROM_URL/-/ready" "$DIR/logs/bench-prometheus.log" 600
PROM_START_S=$(since "$t")
N_SERIES=$(curl -sf --data-urlencode 'query=count({__name__=~"container_.*"})' "$PROM_URL/api/v1/query" \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
log "Prometheus ready in ${PROM_START_S}s with $N_SERIES series at the last sample"

# The cluster settles first (the deployment controller writes each new Deployment's status):
# fewer than 10 writes in 5 s.
w1=$(api_requests writes)
settle_start=$SECONDS
while :; do
    sleep 5
    w2=$(api_requests writes)
    ((w2 - w1 < 10)) && break
    ((SECONDS - settle_start < 600)) || { log "warning: the API server still sees $((w2 - w1)) writes per 5s"; break; }
    w1=$w2
done

# --- 4. craned
start_craned() { # extra flags...: starts craned, sets CRANED_PID, waits for /readyz
    "$CRANED_BIN" --kubeconfig "$KUBECONFIG" --prometheus-address "$PROM_URL" \
        --recommendation-configuration-file "$FERROCRANE_ROOT/config/craned/recommendation-configuration.yaml" \
        --metrics-bind-address "127.0.0.1:$CRANED_PORT" --health-probe-bind-address "127.0.0.1:$CRANED_HEALTH" \
        --leader-elect=false "${CRANED_EXTRA[@]}" "$@" >>"$DIR/logs/craned.log" 2>&1 </dev/null &
    CRANED_PID=$!
    wait_ready craned "$CRANED_PID" "http://127.0.0.1:$CRANED_HEALTH/readyz" "$DIR/logs/craned.log" 120
}
stop_craned() {
    kill -TERM "$CRANED_PID"
    for _ in $(seq 100); do kill -0 "$CRANED_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CRANED_PID" 2>/dev/null || true
    CRANED_PID=""
}
# Counters before or after a round, as key=value lines into $1.
snapshot() {
    local p
    read -r -a p <<<"$(python3 "$TOOL" prom-stats "$PROM_URL")"
    printf 'range=%s\nrange_s=%s\nreads=%s\nreads_s=%s\napi_all=%s\napi_writes=%s\ncraned_ticks=%s\nprom_ticks=%s\n' \
        "${p[0]}" "${p[1]}" "${p[3]}" "${p[4]}" "$(api_requests all)" "$(api_requests writes)" \
        "$(proc "$CRANED_PID" ticks)" "$(proc "$PROM_PID" ticks)" >"$1"
    api_writes_by_kind >"${1%.txt}.writes"
}
delta() { echo "$(kv "$2" "$3") - $(kv "$1" "$3")" | bc -l; } # before after key
craned_counter() { # metrics-file metric [label filter]: sum of a craned counter
    awk -v m="$2" -v f="${3:-}" 'index($0, m) == 1 && (f == "" || index($0, f)) {s += $NF} END {printf "%d\n", s}' "$1"
}
t=$(now)
start_craned
CRANED_START_S=$(since "$t")
sleep 2 # let its watches settle
log "craned ready in ${CRANED_START_S}s (pid $CRANED_PID)"

# --- 5. the round
snapshot "$RESULTS/before-1.txt"
log "round 1: RecommendationRule $RULE over $WORKLOADS Deployments (Resource)"
python3 "$TOOL" rule --name "$RULE" --namespaces "$NAMESPACES" --days "$DAYS" --craned-pid "$CRANED_PID" \
    --timeout "$ROUND_TIMEOUT" --stats "$RESULTS/round.txt"
snapshot "$RESULTS/after-1.txt"
CRANED_HWM=$(proc "$CRANED_PID" hwm); CRANED_RSS=$(proc "$CRANED_PID" rss)
PROM_HWM=$(proc "$PROM_PID" hwm)
CRANED_TOTAL_TICKS=$(proc "$CRANED_PID" ticks)
curl -sf "http://127.0.0.1:$CRANED_PORT/metrics" >"$RESULTS/craned-metrics.txt"
python3 "$TOOL" check --name "$RULE" --stats "$RESULTS/check.txt"

# --- 6. round 2, same history, same craned: what a round costs when nothing changed
if [[ $SECOND_ROUND == 1 ]]; then
    log "round 2 (run-once): the same history, nothing should be written"
    snapshot "$RESULTS/before-2.txt"
    python3 "$TOOL" rerun --name "$RULE" --craned-pid "$CRANED_PID" --timeout "$ROUND_TIMEOUT" --stats "$RESULTS/round-2.txt"
    snapshot "$RESULTS/after-2.txt"
    curl -sf "http://127.0.0.1:$CRANED_PORT/metrics" >"$RESULTS/craned-metrics-2.txt"
fi

# --- 7. round 3: the same round through range queries (--prometheus-remote-read=off), for
# Prometheus' cost of the two paths on the same history; nothing changed, so nothing is
# written and the round is bound by Prometheus alone.
if [[ $COMPARE_RANGE == 1 ]]; then
    log "round 3 (run-once): craned restarted with --prometheus-remote-read=off"
    stop_craned
    start_craned --prometheus-remote-read=off
    sleep 2
    snapshot "$RESULTS/before-3.txt"
    python3 "$TOOL" rerun --name "$RULE" --craned-pid "$CRANED_PID" --timeout "$ROUND_TIMEOUT" --stats "$RESULTS/round-3.txt"
    snapshot "$RESULTS/after-3.txt"
    curl -sf "http://127.0.0.1:$CRANED_PORT/metrics" >"$RESULTS/craned-metrics-3.txt"
fi

# --- report
H="$RESULTS/history.txt"; R="$RESULTS/round.txt"; K="$RESULTS/check.txt"
B1="$RESULTS/before-1.txt"; A1="$RESULTS/after-1.txt"
GAUGES=$(grep -c '^crane_analysis_resource_recommendation{' "$RESULTS/craned-metrics.txt" || true)
CRANED_REQS=$(craned_counter "$RESULTS/craned-metrics.txt" craned_prometheus_request_duration_seconds_count query_range)
CRANED_READS=$(craned_counter "$RESULTS/craned-metrics.txt" craned_prometheus_request_duration_seconds_count 'endpoint="read"')
RECS=$(kv "$K" recommendations); VALUED=$(kv "$K" recommended_values); READY=$(kv "$K" ready)
# Is the round's window [start - days, end] inside the history?
ROUND_START=$(kv "$R" round_start); LAST_SAMPLE=$(($(kv "$H" last_minute) * 60))
COVERAGE=$(python3 -c "import sys; s, e, d = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); print('%.2f' % min(100.0, 100.0 * (e - (s - d * 86400)) / (d * 86400)))" \
    "$ROUND_START" "$LAST_SAMPLE" "$DAYS")
[[ $COVERAGE == 100.00 ]] || log "warning: the history ends $(echo "$ROUND_START - $LAST_SAMPLE" | bc -l | xargs printf '%.0f')s before the round started: its window is ${COVERAGE}% covered (raise BENCH_LEAD_MINUTES)"
((VALUED == WORKLOADS && READY == WORKLOADS)) \
    || log "warning: $VALUED of $WORKLOADS Recommendations have a recommendedValue, $READY are Ready ($(kv "$K" not_ready))"

mib() { echo "$1 / 1024" | bc -l | xargs printf '%.0f'; }
secs() { echo "$1 / $HZ" | bc -l | xargs printf '%.1f'; }
GB() { echo "$1 / 1000000000" | bc -l | xargs printf '%.2f'; }
per() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }
QPS=50
for a in "${CRANED_EXTRA[@]}"; do [[ $a == --kube-api-qps=* ]] && QPS=${a#--kube-api-qps=}; done
ROUNDS=(1); [[ $SECOND_ROUND == 1 ]] && ROUNDS+=(2); [[ $COMPARE_RANGE == 1 ]] && ROUNDS+=(3)
round_file() { if (($1 == 1)); then echo "$RESULTS/round.txt"; else echo "$RESULTS/round-$1.txt"; fi; }
unchanged_in() { # round: Recommendations craned left unwritten in it
    local m="$RESULTS/craned-metrics-$1.txt"
    case $1 in
    1) craned_counter "$RESULTS/craned-metrics.txt" craned_recommendations_unchanged_total ;;
    2) echo $(($(craned_counter "$m" craned_recommendations_unchanged_total) - $(craned_counter "$RESULTS/craned-metrics.txt" craned_recommendations_unchanged_total))) ;;
    3) craned_counter "$m" craned_recommendations_unchanged_total ;; # a fresh craned
    esac
}
row() { # label, then a command run per round with the round's before/after files
    local label=$1 cmd=$2 r line="| $1 |"
    for r in "${ROUNDS[@]}"; do line+=" $($cmd "$r" "$RESULTS/before-$r.txt" "$RESULTS/after-$r.txt") |"; done
    echo "$line"
}
f_wall() { printf '**%.1f s**' "$(kv "$(round_file "$1")" round_s)"; }
f_writes() { local w; w=$(delta "$2" "$3" api_writes); printf '%.0f (%s per Deployment)' "$w" "$(per "$w" "$WORKLOADS")"; }
f_floor() { local w; w=$(delta "$2" "$3" api_writes); printf '%.1f s' "$(per "$w" "$QPS")"; }
f_vs_floor() {
    local w; w=$(delta "$2" "$3" api_writes)
    if [[ $(per "$w" 1) == 0.00 ]]; then echo "no writes"; else per "$(kv "$(round_file "$1")" round_s)" "$(per "$w" "$QPS")"; fi
}
f_unchanged() { unchanged_in "$1"; }
f_range() { printf '%.0f in %.1f s' "$(delta "$2" "$3" range)" "$(delta "$2" "$3" range_s)"; }
f_reads() { printf '%.0f in %.1f s' "$(delta "$2" "$3" reads)" "$(delta "$2" "$3" reads_s)"; }
f_prom_cpu() { printf '**%s s**' "$(secs "$(delta "$2" "$3" prom_ticks)")"; }
f_craned_cpu() { printf '%s s' "$(secs "$(delta "$2" "$3" craned_ticks)")"; }
f_api() { printf '%.0f' "$(delta "$2" "$3" api_all)"; }
f_path() { case $1 in 3) echo "range queries (\`--prometheus-remote-read=off\`)" ;; *) echo "remote read (default \`chunks\`)" ;; esac; }
TABLE="$RESULTS/table.md"
{
    header="| figure |"; rule="|---|"
    for r in "${ROUNDS[@]}"; do
        case $r in 1) header+=" round 1: first (Rule created → \`runNumber: 1\`) |" ;;
            2) header+=" round 2: same history, same craned (\`run-once\`) |" ;;
            3) header+=" round 3: same history, range queries (\`run-once\`) |" ;; esac
        rule+="---|"
    done
    echo "$header"; echo "$rule"
    row "usage history read through" f_path
    row "round wall time" f_wall
    row "craned's kube-apiserver writes (the controller-manager's leases and Deployment status left out)" f_writes
    row "write floor: writes ÷ \`--kube-api-qps\` ($QPS)" f_floor
    row "wall time ÷ write floor" f_vs_floor
    row "Recommendations left unwritten (\`craned_recommendations_unchanged_total\`)" f_unchanged
    row "Prometheus range queries (\`/api/v1/query_range\`), answered in (sum of request durations)" f_range
    row "Prometheus remote reads (\`/api/v1/read\`), answered in" f_reads
    row "Prometheus CPU (utime+stime)" f_prom_cpu
    row "craned CPU" f_craned_cpu
    row "kube-apiserver requests (all clients)" f_api
    echo
    echo "| figure | value |"
    echo "|---|---|"
    echo "| Recommendations after round 1 with a \`recommendedValue\` / Ready / written | $VALUED / $READY / $RECS (of $WORKLOADS Deployments) |"
    echo "| craned's own count of its Prometheus requests in round 1 | $CRANED_REQS range queries, $CRANED_READS remote reads |"
    echo "| craned peak RSS (VmHWM, start-up and round 1) | $(mib "$CRANED_HWM") MiB (RSS after round 1: $(mib "$CRANED_RSS") MiB) |"
    echo "| Prometheus peak RSS (VmHWM, start-up and round 1) | $(mib "$PROM_HWM") MiB |"
    echo "| \`crane_analysis_resource_recommendation\` series after round 1 | $GAUGES |"
    echo "| history: $(kv "$H" samples) samples of $(kv "$H" series) series, generated and backfilled in $(kv "$H" slices) slices of ${BLOCK_HOURS}h | $(kv "$H" history_s) s wall (generation $(kv "$H" gen_s) s and promtool $(kv "$H" promtool_s) s, overlapped; promtool CPU $(kv "$H" promtool_cpu_s) s, peak RSS $(mib "$(kv "$H" promtool_maxrss_kib)") MiB incl. the mmapped slice) |"
    echo "| history size: OpenMetrics generated / TSDB | $(GB "$(kv "$H" om_bytes)") GB / $(GB "$(kv "$H" tsdb_bytes)") GB |"
    echo "| Prometheus start on the blocks → ready | ${PROM_START_S} s |"
    echo "| craned start → ready | ${CRANED_START_S} s |"
    echo "| control plane up + $WORKLOADS Deployments created | ${CLUSTER_S} s |"
} >"$TABLE"
NOTES="$RESULTS/notes.md"
{
    echo "- Command: \`$(env | grep -E '^(BENCH_|CRANED_BIN=)' | sort | tr '\n' ' ')${COMMAND_LINE% }\`"
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). The control plane, both Prometheus servers and craned share these CPUs; other work may have been running."
    echo "- Scale: $CONTAINERS containers = $WORKLOADS Deployments (hack/bench/objects.py: 2 containers in the pod template, paused, no pods) in $NAMESPACES namespaces × $PODS_PER pods of history each × 2 containers; $(kv "$H" series) series (cAdvisor-style \`container_cpu_usage_seconds_total\` counter and \`container_memory_working_set_bytes\` gauge, labels namespace/pod/container) at 1 minute, from $DAYS days + 10 min before the generation started to ${LEAD} min past the start of the last slice (the round's $DAYS-day window: ${COVERAGE}% covered), a daily wave with per-minute jitter (hack/bench/craned_tool.py)."
    echo "- Prometheus: $(prometheus --version 2>&1 | head -1 | awk '{print $3}') of its own on the backfilled blocks (\`promtool tsdb create-blocks-from openmetrics --max-block-duration=${BLOCK_HOURS}h\`, one block per slice, none overlapping), no scrape jobs, \`--storage.tsdb.min-block-duration=2h --storage.tsdb.max-block-duration=2h\` (no compaction during the round), \`--query.max-samples=$MAX_SAMPLES\`."
    echo "- craned: \`$CRANED_BIN\`${CRANED_BUILT_FROM:+ built from $CRANED_BUILT_FROM} (release), Crane's default flags (\`--prometheus-query-concurrency=10\`, \`--kube-api-qps=50 --kube-api-burst=100\`, \`--prometheus-maxpoints=11000\`) with \`--leader-elect=false\`${BENCH_CRANED_ARGS:+ and \`$BENCH_CRANED_ARGS\`}, config/craned/recommendation-configuration.yaml; one RecommendationRule (\`runInterval: 24h\`, the $NAMESPACES namespaces, every Deployment, recommender Resource with \`cpu-/mem-model-history-length: $((24 * DAYS))h\`); Recommendations default to \`adoptionType: StatusAndAnnotation\`, so each one costs an apply, a status apply and an annotation patch of its Deployment against the client-side \`--kube-api-qps\` limit. Round 1 started by creating the rule with craned ready and the cluster quiet; done when the rule's \`status.runNumber\` is 1 (polled every 0.5 s). Rounds 2 and 3 are triggered by the rule's \`analysis.crane.io/run-once\` annotation and done when \`runNumber\` went up and craned removed the annotation; round 2 runs on the same craned, round 3 on one restarted with \`--prometheus-remote-read=off\`; both with craned's default \`--skip-unchanged-writes=true\`, so a Recommendation whose values did not move is not rewritten."
    echo "- Kubernetes: kube-apiserver $KUBE_VERSION from hack/local-up.sh (etcd, kube-apiserver, kube-controller-manager, the cluster's own Prometheus)."
} >"$NOTES"
echo
cat "$TABLE"
echo
cat "$NOTES"
if [[ $WRITE_DOCS == 1 ]]; then
    python3 "$TOOL" docs --docs "$DOCS" --block <(cat "$TABLE"; echo; cat "$NOTES")
    log "wrote the results into $DOCS (## craned, ### Full round)"
fi
log "phases: cluster ${CLUSTER_S}s, history $(kv "$H" history_s)s, Prometheus start ${PROM_START_S}s, craned start ${CRANED_START_S}s, round 1 $(kv "$R" round_s)s"
log "raw results in $RESULTS; logs in $DIR/logs"
