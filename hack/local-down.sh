#!/usr/bin/env bash
# Stops exactly the processes hack/local-up.sh DIR started, by the pids it recorded,
# and nothing else.
#
#   hack/local-down.sh DIR
#   hack/local-down.sh --check DIR    exit 0 when any of them still runs
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

check_only=""
if [[ ${1:-} == --check ]]; then check_only=1; shift; fi
DIR="${1:-$FERROCRANE_ROOT/.local/cluster}"
PIDS="$DIR/pids"
[[ -f $PIDS ]] || { [[ -n $check_only ]] && exit 1; log "nothing to stop: $PIDS does not exist"; exit 0; }

# A recorded pid counts only while it still runs the binary we started; after a reboot or
# a long time the number may belong to someone else.
ours() { # pid exe
    local cmd
    [[ -r /proc/$1/cmdline ]] || return 1
    cmd="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)" || return 1
    [[ $cmd == "$2"* ]]
}

alive=()
while read -r name pid exe; do
    [[ -n ${pid:-} ]] || continue
    if ours "$pid" "$exe"; then alive+=("$name:$pid"); fi
done <"$PIDS"

if [[ -n $check_only ]]; then
    ((${#alive[@]} > 0))
    exit
fi

# One at a time in reverse start order: Prometheus and the controllers before the API
# server, the API server before etcd (an API server without etcd hangs in shutdown).
for ((i = ${#alive[@]} - 1; i >= 0; i--)); do
    entry=${alive[$i]}
    pid=${entry#*:}
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 15))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        log "${entry%%:*} ($pid) ignored SIGTERM for 15s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
done
rm -f "$PIDS"
log "stopped ${#alive[@]} processes from $DIR"
