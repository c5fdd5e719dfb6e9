#!/usr/bin/env bash
# Side-by-side benchmark (issue 3): ferrocrane's ksm against kube-state-metrics v2.20.0 (Go),
# in a real local control plane (hack/local-up.sh) holding 10,000 pods and 2,000 each of
# deployments, replicasets, services and configmaps.
#
#   hack/bench/ksm.sh [DIR]         DIR (cluster state, logs, raw results) defaults to .local/bench
#
# For each exporter, BENCH_ROUNDS times (alternating which goes first), a fresh process with the
# same flags is measured for:
#   - start → first complete scrape: /metrics is polled until it has one kube_pod_info line per pod
#   - /metrics latency p50/p99 and bytes per scrape, plain and with Accept-Encoding: gzip, under
#     BENCH_SCRAPERS concurrent scrapers (curl, keep-alive) × BENCH_SCRAPES scrapes each
#   - CPU per scrape: utime+stime (/proc/PID/stat) over each scrape phase / its scrape count
#   - peak RSS: VmHWM (/proc/PID/status) at the end of the round
#   - CPU per watch event: utime+stime while hack/bench/objects.py --churn writes
#     BENCH_CHURN_RATE pod status changes per second for BENCH_CHURN_SECONDS, divided by the
#     changes; then a scrape must show every changed pod as unschedulable
# and the medians over rounds are printed as a table, and written into docs/benchmarks.md
# (section "## ksm vs kube-state-metrics"; at 100,000 pods or more, issue 15's targets in its
# "### 100,000 pods (issue 15)" block) unless BENCH_WRITE_DOCS=0.
#
# Environment:
#   BENCH_SCALE=1              multiplies the default counts (0.1 for a quick run)
#   BENCH_PODS, BENCH_DEPLOYMENTS, BENCH_REPLICASETS, BENCH_SERVICES, BENCH_CONFIGMAPS
#   BENCH_ROUNDS=3  BENCH_SCRAPERS=4  BENCH_SCRAPES=20 (per scraper and encoding)
#   BENCH_EXPORTERS="go ours"  which to measure
#   BENCH_CHURN_RATE=100  BENCH_CHURN_SECONDS=30 (BENCH_CHURN_RATE=0: no churn phase)
#   BENCH_SCRAPE_TIMEOUT=120  BENCH_START_TIMEOUT=600 (seconds; raise them at 100,000 pods)
#   BENCH_SETTLE_MAX=600×SCALE  BENCH_QUIET_WRITES=10 (the wait for a quiet cluster, below)
#   FERROCRANE_KCM_ARGS="--kube-api-qps=1000 --kube-api-burst=2000" (kube-controller-manager)
#   BENCH_WRITE_DOCS=1 (default 0 unless the counts are the defaults or pods ≥ 100,000)
#   KSM_BIN                    our binary; unset: cargo build --release -p ferrocrane-ksm in
#   KSM_SRC                    this checkout (default), then $CARGO_TARGET_DIR/release/ksm
#   GO_KSM_BIN                 default $FERROCRANE_CACHE/bin/kube-state-metrics (hack/originals.sh)
#   KSM_BIN_<name>             the binary of any other exporter named in BENCH_EXPORTERS
#
# Everything it starts (the cluster, the exporters) is stopped on exit, whatever happens.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
BENCH="$FERROCRANE_ROOT/hack/bench"
COMMAND_LINE="$(printf '%q ' "$0" "$@")"

DIR="${1:-$FERROCRANE_ROOT/.local/bench}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

SCALE="${BENCH_SCALE:-1}"
scaled() { python3 -c "import sys; print(max(1, round($1 * float(sys.argv[1]))))" "$SCALE"; }
PODS="${BENCH_PODS:-$(scaled 10000)}"
DEPLOYMENTS="${BENCH_DEPLOYMENTS:-$(scaled 2000)}"
REPLICASETS="${BENCH_REPLICASETS:-$(scaled 2000)}"
SERVICES="${BENCH_SERVICES:-$(scaled 2000)}"
CONFIGMAPS="${BENCH_CONFIGMAPS:-$(scaled 2000)}"
ROUNDS="${BENCH_ROUNDS:-3}"
SCRAPERS="${BENCH_SCRAPERS:-4}"
SCRAPES="${BENCH_SCRAPES:-20}"
EXPORTERS="${BENCH_EXPORTERS:-go ours}"
CHURN_RATE="${BENCH_CHURN_RATE:-100}"
CHURN_SECONDS="${BENCH_CHURN_SECONDS:-30}"
SCRAPE_TIMEOUT="${BENCH_SCRAPE_TIMEOUT:-120}"
START_TIMEOUT="${BENCH_START_TIMEOUT:-600}"
# At 100,000 pods the table gets issue 15's targets and a block of its own.
if ((PODS >= 100000)); then TARGETS=at-scale; else TARGETS=base; fi
if [[ $TARGETS == at-scale || ($SCALE == 1 && -z ${BENCH_PODS:-}) ]]; then
    WRITE_DOCS="${BENCH_WRITE_DOCS:-1}"
else
    WRITE_DOCS="${BENCH_WRITE_DOCS:-0}"
fi
RESOURCES="pods,deployments,replicasets,services,configmaps"
HZ="$(getconf CLK_TCK)"

# --- binaries
GO_KSM_BIN="${GO_KSM_BIN:-$FERROCRANE_BIN/kube-state-metrics}"
if [[ " $EXPORTERS " == *" go "* && -z ${BENCH_SKIP_BUILD:-} ]]; then
    "$FERROCRANE_ROOT/hack/originals.sh" kube-state-metrics
fi
if [[ " $EXPORTERS " == *" ours "* && -z ${KSM_BIN:-} ]]; then
    KSM_SRC="${KSM_SRC:-$FERROCRANE_ROOT}"
    log "building ours: cargo build --release -p ferrocrane-ksm (in $KSM_SRC)"
    (cd "$KSM_SRC" && cargo build --release -p ferrocrane-ksm)
    KSM_BUILT_FROM="$KSM_SRC at $(git -C "$KSM_SRC" log -1 --format='%h (%s)' 2>/dev/null)"
    KSM_BIN="$CARGO_TARGET_DIR/release/ksm"
fi
# Any other exporter name N (e.g. ours-main, another build of ours to compare before/after)
# runs the binary in $KSM_BIN_N (dashes as underscores), with the same flags as ours.
bin_of() {
    case $1 in
        go) echo "$GO_KSM_BIN" ;;
        ours) echo "$KSM_BIN" ;;
        *) local v="KSM_BIN_${1//-/_}"; echo "${!v:-}" ;;
    esac
}
for e in $EXPORTERS; do
    [[ -x "$(bin_of "$e")" ]] || die "exporter '$e': $(bin_of "$e") is not an executable"
done

# --- cleanup, whatever happens
EXPORTER_PID=""
cleanup() {
    local rc=$?
    if [[ -n $EXPORTER_PID ]] && kill -0 "$EXPORTER_PID" 2>/dev/null; then
        kill -TERM "$EXPORTER_PID" 2>/dev/null || true
        sleep 1
        kill -KILL "$EXPORTER_PID" 2>/dev/null || true
    fi
    "$FERROCRANE_ROOT/hack/local-down.sh" "$DIR" >&2 || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- cluster and objects
log "starting the local control plane in $DIR"
# The controller manager writes for the new objects (the settle loop below says which) at its
# --kube-api-qps per controller: at the default 20 per second, 20,000 Services alone take
# 1,000 s. A higher limit lets those writes end before anything is measured.
export FERROCRANE_KCM_ARGS="${FERROCRANE_KCM_ARGS:---kube-api-qps=1000 --kube-api-burst=2000}"
# A bare cluster: local-up.sh would otherwise build and start a ksm of its own, which would
# compete with the exporters measured here.
FERROCRANE_LOCAL_SERVICES="" "$FERROCRANE_ROOT/hack/local-up.sh" "$DIR" >"$DIR/local-up.out"
set -a; source "$DIR/env"; set +a

log "creating $PODS pods, $DEPLOYMENTS deployments, $REPLICASETS replicasets, $SERVICES services, $CONFIGMAPS configmaps"
python3 "$BENCH/objects.py" --pods "$PODS" --deployments "$DEPLOYMENTS" --replicasets "$REPLICASETS" \
    --services "$SERVICES" --configmaps "$CONFIGMAPS"

count() { "$KUBECTL" get "$1" -A --no-headers 2>/dev/null | wc -l; }
# Let the controller manager finish reacting to the new objects (deployment and replicaset
# status, endpoints and endpoint slices, at the client QPS set above): until then
# the objects change under the first exporter, and the API server and controller manager
# compete for the CPUs. Quiet = fewer than BENCH_QUIET_WRITES writes to the API server in 5s.
api_writes() {
    "$KUBECTL" get --raw /metrics 2>/dev/null \
        | awk '/^apiserver_request_total\{/ && /verb="(POST|PUT|PATCH|DELETE|APPLY)"/ {s += $NF} END {printf "%d\n", s}'
}
SETTLE_MAX="${BENCH_SETTLE_MAX:-$(scaled 600)}"
settle_start=$SECONDS
w1=$(api_writes)
while :; do
    sleep 5
    w2=$(api_writes)
    ((w2 - w1 < ${BENCH_QUIET_WRITES:-10})) && break
    if ((SECONDS - settle_start > $SETTLE_MAX)); then
        log "warning: the API server still sees $((w2 - w1)) writes per 5s after ${SETTLE_MAX}s; measuring anyway"
        break
    fi
    w1=$w2
done
SETTLED="$((w2 - w1)) API writes in the last 5 s after waiting $((SECONDS - settle_start)) s"
log "settling: $SETTLED"
N_PODS=$(count pods); N_DEPLOY=$(count deployments); N_RS=$(count replicasets)
N_SVC=$(count services); N_CM=$(count configmaps)
log "in the cluster: pods=$N_PODS deployments=$N_DEPLOY replicasets=$N_RS services=$N_SVC configmaps=$N_CM"
((N_PODS == PODS)) || die "expected $PODS pods, the cluster has $N_PODS"
((N_RS == REPLICASETS)) || log "warning: expected $REPLICASETS replicasets, the cluster has $N_RS"

# --- measuring
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

scrape_phase() { # port out_prefix [curl header args...]
    local port=$1 prefix=$2; shift 2
    local urls=() i s pids=()
    # One -o per URL: curl applies each -o to one transfer; all reuse one keep-alive connection.
    for ((i = 0; i < SCRAPES; i++)); do urls+=(-o /dev/null "http://127.0.0.1:$port/metrics"); done
    for ((s = 0; s < SCRAPERS; s++)); do
        curl -s --max-time "$SCRAPE_TIMEOUT" "$@" \
            -w '%{http_code} %{time_total} %{size_download} %header{content-encoding}\n' \
            "${urls[@]}" >"$prefix.$s" &
        pids+=($!)
    done
    wait "${pids[@]}"
}

RESULTS="$DIR/results"
rm -rf "$RESULTS"; mkdir -p "$RESULTS"

# A scrape is complete when it holds every object of every resource: one kube_pod_info line
# per pod and one *_created line per object of the other resources. (The Go exporter writes
# family by family while its stores fill, so a scrape with every kube_pod_info line can still
# miss lines of families written before it; the *_created checks keep the other resources
# honest.)
complete() { # file
    awk -v pods="$N_PODS" -v dep="$N_DEPLOY" -v rs="$N_RS" -v svc="$N_SVC" -v cm="$N_CM" '
        /^kube_pod_info\{/ {p++} /^kube_deployment_created\{/ {d++} /^kube_replicaset_created\{/ {r++}
        /^kube_service_created\{/ {s++} /^kube_configmap_created\{/ {c++}
        END {exit !(p == pods && d == dep && r == rs && s == svc && c == cm)}' "$1"
}

run_one() { # exporter round
    local e=$1 r=$2 bin port tport t0 t1 n lines pid out="$RESULTS/run-$1-$2"
    bin="$(bin_of "$e")"
    port=$(free_port); tport=$(free_port)
    log "round $r: $e ($bin) on :$port"
    t0=$(date +%s.%N)
    setsid "$bin" --kubeconfig "$KUBECONFIG" --host 127.0.0.1 --port "$port" \
        --telemetry-host 127.0.0.1 --telemetry-port "$tport" \
        --resources "$RESOURCES" --enable-gzip-encoding >"$DIR/logs/exporter-$e-$r.log" 2>&1 </dev/null &
    EXPORTER_PID=$!
    pid=$EXPORTER_PID
    # Start → first complete scrape: a scrape that holds every pod.
    local deadline=$((SECONDS + START_TIMEOUT))
    while :; do
        kill -0 "$pid" 2>/dev/null || { tail -20 "$DIR/logs/exporter-$e-$r.log" >&2; die "$e exited during start-up"; }
        if curl -s --max-time "$SCRAPE_TIMEOUT" -o "$out.scrape" "http://127.0.0.1:$port/metrics" && complete "$out.scrape"; then
            break
        fi
        if ((SECONDS >= deadline)); then
            kill -KILL "$pid" 2>/dev/null || true
            die "$e: no complete scrape within ${START_TIMEOUT}s"
        fi
        sleep 0.2
    done
    t1=$(date +%s.%N)
    lines=$(grep -vc '^#' "$out.scrape" || true)
    local rss_synced cpu0 cpu1 cpu2 plain gzip
    rss_synced=$(status_kib "$pid" VmRSS)
    local hwm_synced hwm_plain
    hwm_synced=$(status_kib "$pid" VmHWM)
    sleep "${BENCH_IDLE:-3}"
    cpu0=$(cpu_ticks "$pid")
    scrape_phase "$port" "$out.plain"
    cpu1=$(cpu_ticks "$pid")
    hwm_plain=$(status_kib "$pid" VmHWM)
    scrape_phase "$port" "$out.gzip" -H 'Accept-Encoding: gzip'
    cpu2=$(cpu_ticks "$pid")
    local hwm
    hwm=$(status_kib "$pid" VmHWM)
    local churn="" cpu3 cpu4 idle0 idle1
    if [[ $CHURN_RATE != 0 ]]; then
        # What the exporter burns with nothing happening, over as long as the churn lasts:
        # the part of CPU per watch event that is not the events.
        idle0=$(cpu_ticks "$pid")
        sleep "$CHURN_SECONDS"
        idle1=$(cpu_ticks "$pid")
        cpu3=$(cpu_ticks "$pid")
        churn=$(python3 "$BENCH/objects.py" --pods "$N_PODS" --churn "$CHURN_RATE" --churn-seconds "$CHURN_SECONDS")
        # The last events may still be in flight to the exporter.
        sleep "${BENCH_CHURN_SETTLE:-3}"
        cpu4=$(cpu_ticks "$pid")
        local patches want seen=0 until=$((SECONDS + 120))
        read -r patches want < <(python3 -c 'import json, sys; c = json.loads(sys.argv[1]); print(c["patches"], c["unschedulable"])' "$churn")
        # Every pod the last pass left unschedulable must show so.
        while ((SECONDS < until)); do
            seen=$(curl -s --max-time "$SCRAPE_TIMEOUT" "http://127.0.0.1:$port/metrics" \
                | grep -c '^kube_pod_status_scheduled{.*condition="false".*} 1$' || true)
            ((seen >= want)) && break
            sleep 1
        done
        ((seen == want)) || log "warning: $e shows $seen unschedulable pods, $want expected after $patches status changes"
        churn="$patches $want $seen $((cpu4 - cpu3)) $(status_kib "$pid" VmHWM) $((idle1 - idle0)) $CHURN_SECONDS"
    fi
    plain=$(python3 "$BENCH/report.py" scrapes "$out".plain.*)
    gzip=$(python3 "$BENCH/report.py" scrapes "$out".gzip.*)
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    EXPORTER_PID=""
    # Keep round 1's first complete scrape to compare the exporters' output.
    if ((r == 1)); then mv "$out.scrape" "$RESULTS/first-complete-scrape-$e.prom"; else rm -f "$out.scrape"; fi
    python3 - "$out.txt" "$e" "$r" "$t0" "$t1" "$rss_synced" "$hwm_synced" "$hwm_plain" "$hwm" "$cpu0" "$cpu1" "$cpu2" "$HZ" \
        "$((SCRAPERS * SCRAPES))" "$lines" "$plain" "$gzip" "$churn" <<'EOF'
import sys
(path, e, r, t0, t1, rss, hwm_synced, hwm_plain, hwm, c0, c1, c2, hz, n, lines, plain, gzip, churn) = sys.argv[1:]
hz, n = float(hz), int(n)
p, g = plain.split(), gzip.split()
kv = {
    "exporter": e, "round": r, "start_s": "%.3f" % (float(t1) - float(t0)),
    "rss_synced_mib": "%.1f" % (int(rss) / 1024), "vmhwm_mib": "%.1f" % (int(hwm) / 1024),
    "vmhwm_synced_mib": "%.1f" % (int(hwm_synced) / 1024), "vmhwm_after_plain_mib": "%.1f" % (int(hwm_plain) / 1024),
    "plain_cpu_ms": "%.2f" % ((int(c1) - int(c0)) / hz / n * 1000),
    "gzip_cpu_ms": "%.2f" % ((int(c2) - int(c1)) / hz / n * 1000),
    "metric_lines": lines,
    "plain_n": p[0], "plain_bad": p[1], "plain_p50_ms": p[2], "plain_p99_ms": p[3], "plain_bytes": p[4], "plain_enc": p[5],
    "gzip_n": g[0], "gzip_bad": g[1], "gzip_p50_ms": g[2], "gzip_p99_ms": g[3], "gzip_bytes": g[4], "gzip_enc": g[5],
}
if churn:
    patches, want, seen, ticks, hwm_churn, idle_ticks, idle_seconds = (int(x) for x in churn.split())
    kv.update(churn_patches=patches, churn_unschedulable=want, churn_seen=seen, churn_cpu_us="%.1f" % (ticks / hz / patches * 1e6),
              idle_cpu_ms_per_s="%.2f" % (idle_ticks / hz / idle_seconds * 1000),
              vmhwm_after_churn_mib="%.1f" % (hwm_churn / 1024))
    # The churn phase comes after the scrapes: the round's peak includes it.
    kv["vmhwm_mib"] = "%.1f" % (max(int(hwm), hwm_churn) / 1024)
with open(path, "w") as f:
    for k, v in kv.items():
        f.write("%s=%s\n" % (k, v))
print("  " + " ".join("%s=%s" % kv_ for kv_ in kv.items() if kv_[0] not in ("exporter", "round")), file=sys.stderr)
EOF
    grep -q '^gzip_enc=gzip$' "$out.txt" || log "warning: $e did not gzip every response ($(grep '^gzip_enc=' "$out.txt"))"
    grep -q '^plain_bad=0$' "$out.txt" && grep -q '^gzip_bad=0$' "$out.txt" || log "warning: $e: some scrapes failed"
}

read -r -a order <<<"$EXPORTERS"
for ((r = 1; r <= ROUNDS; r++)); do
    # Alternate which exporter goes first, so neither always meets a warmer (or busier) cluster.
    # A failing exporter loses its round, not the whole run (in a subshell, die ends only it).
    if ((r % 2 == 0)); then
        for ((i = ${#order[@]} - 1; i >= 0; i--)); do
            (run_one "${order[$i]}" "$r") || log "warning: ${order[$i]} round $r failed; its figures are left out"
        done
    else
        for e in "${order[@]}"; do
            (run_one "$e" "$r") || log "warning: $e round $r failed; its figures are left out"
        done
    fi
done

# --- report
NOTES="$DIR/notes.md"
{
    echo "- Command: \`${KSM_SRC:+KSM_SRC=$KSM_SRC }$(env | grep -E '^BENCH_' | sort | tr '\n' ' ')${COMMAND_LINE% }\`"
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). The control plane (etcd, kube-apiserver, kube-controller-manager, Prometheus), the scrapers and the exporter share these CPUs; other builds may have been running."
    echo "- Cluster: kube-apiserver $KUBE_VERSION from hack/local-up.sh; $N_PODS pods (Pending: schedulerName names no running scheduler), $N_DEPLOY deployments (paused, 0 replicas), $N_RS replicasets (0 replicas), $N_SVC services, $N_CM configmaps (incl. kube-root-ca.crt per namespace), made by hack/bench/objects.py; kube-controller-manager with $FERROCRANE_KCM_ARGS; before the first exporter: $SETTLED."
    exporters=""
    [[ " $EXPORTERS " == *" go "* ]] && exporters+="Go: \`$GO_KSM_BIN\` ($("$GO_KSM_BIN" version 2>&1 | head -1)); "
    [[ " $EXPORTERS " == *" ours "* ]] && exporters+="ksm: \`$KSM_BIN\`${KSM_BUILT_FROM:+ built from $KSM_BUILT_FROM}; "
    for e in $EXPORTERS; do
        [[ $e == go || $e == ours ]] || exporters+="$e: \`$(bin_of "$e")\`; "
    done
    echo "- Exporters: ${exporters}each started fresh per round with \`--kubeconfig --host=127.0.0.1 --port --telemetry-host=127.0.0.1 --telemetry-port --resources=$RESOURCES --enable-gzip-encoding\`."
    if [[ $CHURN_RATE != 0 ]]; then
        echo "- Churn: after the scrapes, hack/bench/objects.py --churn writes $CHURN_RATE pod status changes per second for ${CHURN_SECONDS}s (PodScheduled flipped False, True, False... per pass over the pods, through the status subresource, 8 keep-alive clients); CPU per watch event is the exporter's utime+stime from the first change until ${BENCH_CHURN_SETTLE:-3}s after the last, divided by the changes written (idle CPU, ms per second, is measured just before over as long as the churn lasts, with nothing changing); a scrape must then show every pod the changes left unschedulable with kube_pod_status_scheduled{condition=\"false\"} 1."
    fi
    echo "- Scraping: $SCRAPERS concurrent curl scrapers on keep-alive connections × $SCRAPES scrapes each, plain then \`Accept-Encoding: gzip\` (body left compressed); latency is curl's time_total; CPU per scrape is the exporter's utime+stime over the phase divided by its $((SCRAPERS * SCRAPES)) scrapes; peak RSS is VmHWM at the end of the round (start-up included)."
} >"$NOTES"
echo
docs_args=()
if [[ $WRITE_DOCS == 1 ]]; then docs_args=(--docs "$FERROCRANE_ROOT/docs/benchmarks.md" --notes "$NOTES"); fi
python3 "$BENCH/report.py" table "$RESULTS" --targets "$TARGETS" "${docs_args[@]}"
echo
cat "$NOTES"
[[ $WRITE_DOCS == 1 ]] && log "wrote the table into docs/benchmarks.md"
log "raw results in $RESULTS"
