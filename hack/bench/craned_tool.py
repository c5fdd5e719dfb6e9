#!/usr/bin/env python3
"""Helpers of the craned full-round benchmark (hack/bench/craned.sh).

    craned_tool.py history --data DIR --workloads N --namespaces K --pods P --days D
                           [--block-hours 18] [--lead-minutes 15] [--work DIR] --stats FILE
    craned_tool.py rule --name NAME --namespaces K --days D --craned-pid PID --stats FILE
    craned_tool.py check --name NAME --stats FILE
    craned_tool.py prom-stats URL
    craned_tool.py free-ports N | proc PID ticks|hwm|rss
    craned_tool.py docs --docs FILE --block FILE

history: the usage history of the Deployments hack/bench/objects.py makes (deploy-NNNNN in
bench-NN, pod template containers "app" and "proxy"), as cAdvisor exports it and craned's
Resource recommender queries it: container_cpu_usage_seconds_total (a counter) and
container_memory_working_set_bytes (a gauge), labels namespace, pod, container, one sample a
minute, P pods per Deployment named like a ReplicaSet's pods (deploy-NNNNN-<hash>-<5 chars>, what
craned's pod-name regex ^deploy-NNNNN-[a-z0-9]+-[a-z0-9]{5}$ matches). Usage follows a daily wave
(peak at a per-Deployment hour) with per-minute jitter, so histograms spread over many buckets.

Hundreds of millions of samples do not fit on disk as OpenMetrics text (~131 bytes a sample),
so history is written in time slices aligned to --block-hours (2, 6, 18 or 54: Prometheus'
block ranges), oldest first: each slice is generated into one OpenMetrics file, turned into one
TSDB block by `promtool tsdb create-blocks-from openmetrics --max-block-duration`, and deleted;
the next slice is generated while promtool reads the previous one (two slices on disk at most).
The blocks do not overlap, so Prometheus serves them as they are (no vertical compaction). The
series start D days + 10 minutes before the generation starts; the last slice is generated up
to "now" + --lead-minutes when it begins, so the round's window [now - D days, now] is covered
if the round starts within the lead.

rule: creates a RecommendationRule over every Deployment of the bench namespaces with the
Resource recommender (history length D days) and polls its status until runNumber >= 1 (craned
writes the rule's status once, after every Recommendation of the round is written), logging
progress (Recommendations so far) every 30 s. check: how many of the rule's Recommendations
have a recommendedValue and are Ready. prom-stats: Prometheus' own request counters. free-ports,
proc: loopback ports and /proc figures for the script. docs: the generated block in
docs/benchmarks.md ("### Full round" at the end of "## craned").

Python 3 standard library only; talks to 127.0.0.1 only (the kubeconfig of hack/local-up.sh).
"""

import argparse
import hashlib
import json
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import free_port  # noqa: E402  (hack/free_port.py: the suite's one port source)
import objects  # noqa: E402  (same folder: kubeconfig(), Client, the Deployments' names)

# Pod-template hashes and pod suffixes use Kubernetes' SafeEncodeString alphabet.
SAFE = "bcdfghjklmnpqrstvwxz2456789"
JITTER_LEN = 7919  # prime: per-series offsets into one table of jitter
OMEGA = 2 * math.pi / 1440  # one day, per minute
GROUP = "/apis/analysis.crane.io/v1alpha1"


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def safe_string(key, length):
    """A stable pseudo-random string of Kubernetes' name-suffix alphabet."""
    n = int(hashlib.sha1(key.encode()).hexdigest(), 16)
    out = []
    for _ in range(length):
        n, r = divmod(n, len(SAFE))
        out.append(SAFE[r])
    return "".join(out)


def container_names():
    """The pod template's containers, as objects.py writes every Deployment."""
    return [c["name"] for c in objects.pod_spec(0, "x")["containers"]]


class Series:
    """One container of one pod: its label part and how its usage moves."""

    __slots__ = ("cpu_prefix", "mem_prefix", "r0", "amp", "phase", "mem_base", "jitter_off")

    def __init__(self, ns, pod, container, w, k, c):
        labels = 'namespace="%s",pod="%s",container="%s"' % (ns, pod, container)
        self.cpu_prefix = "container_cpu_usage_seconds_total{%s} " % labels
        self.mem_prefix = "container_memory_working_set_bytes{%s} " % labels
        g = (w * 7 + k * 3 + c * 5)
        self.r0 = 0.02 + 0.01 * (g % 40)              # night level: 20m .. 410m
        self.amp = self.r0 * (0.5 + 0.25 * (w % 5))   # daily peak: +1x .. +5x the night level
        self.phase = (w % 24) * 60                    # peak hour, per Deployment
        self.mem_base = float((48 + (w * 13 + c * 29 + k * 3) % 400) * 1048576)  # 48Mi .. 447Mi
        self.jitter_off = (w * 131 + k * 17 + c * 7) % JITTER_LEN


def layout(workloads, namespaces, pods):
    """Every container's Series, grouped per Deployment in objects.py's naming."""
    names = container_names()
    out = []
    for w in range(workloads):
        ns = objects.ns_name(w, namespaces)
        deploy = "deploy-%05d" % w
        rs_hash = safe_string(deploy, 10)
        for k in range(pods):
            pod = "%s-%s-%s" % (deploy, rs_hash, safe_string("%s/%d" % (deploy, k), 5))
            for c, name in enumerate(names):
                out.append(Series(ns, pod, name, w, k, c))
    return out


def write_slice(path, series, first, last, base):
    """OpenMetrics with timestamps for minutes first..last (inclusive) of every series; the CPU
    counter is 0 at minute `base` (the first minute of the history), so every slice continues
    the previous one."""
    n = last - first + 1
    minutes = range(first, last + 1)
    ts = [" %d\n" % (m * 60) for m in minutes]
    rel = [m - base for m in minutes]
    rnd = random.Random(898)
    jitter = [rnd.random() for _ in range(JITTER_LEN)]
    jitter2 = jitter * (2 + n // JITTER_LEN)
    # sin/cos of the daily wave for the 24 peak hours, over this slice's minutes.
    waves = {}
    for h in range(24):
        p = h * 60
        waves[p] = ([math.sin(OMEGA * (m - p)) for m in minutes], [math.cos(OMEGA * (m - p)) for m in minutes],
                    math.cos(OMEGA * (base - p)))
    samples = 0
    with open(path, "w", buffering=1 << 22) as f:
        # One family after the other, each series' samples together and in time order.
        for s in series:
            _, cos, cos0 = waves[s.phase]
            j0 = (first + s.jitter_off) % JITTER_LEN
            u = jitter2[j0:j0 + n]
            # rate(t) = r0 + amp * (1 + sin(w (t - phase))) cores; the counter is 60 x its integral
            # (per minute) plus jitter smaller than one minute's increase, so it never decreases.
            a = 60 * (s.r0 + s.amp)
            b = -60 * s.amp / OMEGA
            k0 = 60 * s.amp / OMEGA * cos0
            jit = 30 * s.r0
            p = s.cpu_prefix
            f.write("".join(["%s%.3f%s" % (p, a * r + b * cs + k0 + jit * uu, t)
                             for r, cs, uu, t in zip(rel, cos, u, ts)]))
        for s in series:
            sin, _, _ = waves[s.phase]
            j0 = (first + s.jitter_off * 3) % JITTER_LEN
            u = jitter2[j0:j0 + n]
            m0 = s.mem_base * 1.4
            m1 = s.mem_base * 0.4
            m2 = s.mem_base * 0.15
            p = s.mem_prefix
            f.write("".join(["%s%.0f%s" % (p, m0 + m1 * sn + m2 * uu, t) for sn, uu, t in zip(sin, u, ts)]))
        f.write("# EOF\n")
        samples = 2 * len(series) * n
    return samples


def cmd_history(args):
    block = args.block_hours * 60
    if args.block_hours not in (2, 6, 18, 54):
        sys.exit("--block-hours must be 2, 6, 18 or 54 (Prometheus' block ranges)")
    series = layout(args.workloads, args.namespaces, args.pods)
    work = args.work or args.data
    os.makedirs(args.data, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    start_minute = int(time.time()) // 60
    base = start_minute - args.days * 1440 - 10
    # Disk: two slices in OpenMetrics at once (one generated while promtool reads the other),
    # ~131 bytes a sample, plus the blocks (a few bytes a sample).
    slice_bytes = 2 * len(series) * min(block, args.days * 1440 + 10 + args.lead_minutes) * 131
    need = 2 * slice_bytes + 4 * 2 * len(series) * (args.days * 1440 + block)
    free = shutil.disk_usage(work).free
    if free < need * 1.1:
        sys.exit("not enough disk in %s: two %dh slices of %d series take ~%.1f GB of OpenMetrics; %.1f GB are "
                 "free (lower BENCH_BLOCK_HOURS)" % (work, args.block_hours, 2 * len(series), 2 * slice_bytes / 1e9,
                                                     free / 1e9))
    log("history: %d series (%d containers x 2), %d days + 10 min before now, in %dh slices"
        % (2 * len(series), len(series), args.days, args.block_hours))
    gen_s = promtool_s = 0.0
    om_bytes = samples = slices = 0
    running = None  # (Popen, path, started, label) of the promtool converting the previous slice

    def finish():
        nonlocal promtool_s
        proc, path, started, label = running
        out, err = proc.communicate()
        took = time.monotonic() - started
        promtool_s += took
        os.unlink(path)
        if proc.returncode != 0:
            sys.exit("promtool failed on %s:\n%s%s" % (path, out[-2000:], err[-2000:]))
        log("  %s: promtool %.1fs" % (label, took))

    w = base - base % block
    while True:
        last_needed = int(time.time()) // 60 + args.lead_minutes
        first = max(w, base)
        final = w + block > last_needed
        last = last_needed if final else w + block - 1
        path = os.path.join(work, "history-%d.om" % w)
        t0 = time.monotonic()
        samples += write_slice(path, series, first, last, base)
        t1 = time.monotonic()
        gen_s += t1 - t0
        size = os.path.getsize(path)
        om_bytes += size
        slices += 1
        label = "slice %d (%s .. %s UTC)" % (slices, time.strftime("%m-%d %H:%M", time.gmtime(first * 60)),
                                              time.strftime("%m-%d %H:%M", time.gmtime(last * 60)))
        log("  %s: %.2f GB of OpenMetrics generated in %.1fs" % (label, size / 1e9, t1 - t0))
        if running:
            finish()
        proc = subprocess.Popen(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                                 "--max-block-duration=%dh" % args.block_hours, path, args.data],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        running = (proc, path, time.monotonic(), label)
        if final:
            break
        w += block
    finish()
    wall = time.monotonic() - t_start
    tsdb_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.data) for f in fs)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = {
        "series": 2 * len(series), "containers": len(series), "samples": samples, "slices": slices,
        "first_minute": base, "last_minute": last, "gen_start_minute": start_minute,
        "history_s": "%.1f" % wall, "gen_s": "%.1f" % gen_s, "promtool_s": "%.1f" % promtool_s,
        "promtool_cpu_s": "%.1f" % (ru.ru_utime + ru.ru_stime), "om_bytes": om_bytes,
        "tsdb_bytes": tsdb_bytes, "promtool_maxrss_kib": ru.ru_maxrss,
    }
    with open(args.stats, "w") as f:
        for k, v in stats.items():
            f.write("%s=%s\n" % (k, v))
    log("history: %d samples, %.2f GB of OpenMetrics in %d slices, %.1fs (generation %.1fs, promtool %.1fs, "
        "overlapped); TSDB %.2f GB; promtool peak RSS %.0f MiB (incl. the mmapped slice)"
        % (samples, om_bytes / 1e9, slices, wall, gen_s, promtool_s, tsdb_bytes / 1e9, ru.ru_maxrss / 1024))


def client():
    host, port, ctx = objects.kubeconfig()
    return objects.Client(host, port, ctx)


def get_json(cl, path):
    status, payload = cl.request("GET", path)
    if status != 200:
        raise RuntimeError("GET %s: HTTP %d %s" % (path, status, payload[:300]))
    return json.loads(payload)


def count_recommendations(cl, name):
    # The API server leaves remainingItemCount out of label-selected lists, so count pages.
    sel = "analysis.crane.io/recommendation-rule-name=%s" % name
    base = "%s/recommendations?limit=1000&labelSelector=%s" % (GROUP, urllib.request.quote(sel))
    count, token = 0, ""
    while True:
        d = get_json(cl, base + ("&continue=" + urllib.request.quote(token) if token else ""))
        count += len(d["items"])
        token = d["metadata"].get("continue") or ""
        if not token:
            return count


def wait_round(cl, args, done, progress):
    """Polls the rule every 0.5 s until done(rule, status); fails when craned exits or the
    round outlasts args.timeout; calls progress() every 30 s. Returns the rule's status."""
    path = "%s/recommendationrules/%s" % (GROUP, args.name)
    next_log = time.monotonic() + 30
    deadline = time.monotonic() + args.timeout
    while True:
        d = get_json(cl, path)
        st = d.get("status") or {}
        if done(d, st):
            return st
        try:
            os.kill(args.craned_pid, 0)
        except OSError:
            sys.exit("craned (pid %d) exited during the round" % args.craned_pid)
        if time.monotonic() > deadline:
            sys.exit("the round did not finish in %ds" % args.timeout)
        if progress and time.monotonic() >= next_log:
            progress()
            next_log += 30
        time.sleep(0.5)


def cmd_rule(args):
    cl = client()
    rule = {
        "apiVersion": "analysis.crane.io/v1alpha1", "kind": "RecommendationRule",
        "metadata": {"name": args.name},
        "spec": {
            # One round: the next would be due a day later.
            "runInterval": "24h",
            "namespaceSelector": {"matchNames": [objects.ns_name(i, args.namespaces) for i in range(args.namespaces)]},
            "resourceSelectors": [{"kind": "Deployment", "apiVersion": "apps/v1"}],
            "recommenders": [{"name": "Resource", "config": {
                # The workloads were created moments ago; Crane's default is 3 minutes.
                "creation-cooldown": "0s",
                "cpu-model-history-length": "%dh" % (24 * args.days),
                "mem-model-history-length": "%dh" % (24 * args.days)}}],
        },
    }
    t0 = time.time()
    status, payload = cl.request("POST", "%s/recommendationrules" % GROUP, rule)
    if status != 201:
        sys.exit("creating the RecommendationRule: HTTP %d %s" % (status, payload[:300]))
    def progress():
        log("  %.0fs: %d Recommendations written" % (time.time() - t0, count_recommendations(cl, args.name)))
    st = wait_round(cl, args, lambda d, st: int(st.get("runNumber") or 0) >= 1, progress)
    t1 = time.time()
    with open(args.stats, "w") as f:
        f.write("round_start=%.3f\nround_end=%.3f\nround_s=%.3f\nlast_update_time=%s\n"
                % (t0, t1, t1 - t0, st.get("lastUpdateTime", "")))
    log("round finished after %.1fs (status.lastUpdateTime %s)" % (t1 - t0, st.get("lastUpdateTime")))


def cmd_rerun(args):
    # craned's (and Crane's) trigger for a round before runInterval is due: the rule's
    # run-once annotation, removed by craned once the round is recorded.
    cl = client()
    path = "%s/recommendationrules/%s" % (GROUP, args.name)
    before = int((get_json(cl, path).get("status") or {}).get("runNumber") or 0)
    patch = {"metadata": {"annotations": {"analysis.crane.io/run-once": "bench-%d" % before}}}
    t0 = time.time()
    status, payload = cl.request("PATCH", path, patch, content_type="application/merge-patch+json")
    if status != 200:
        sys.exit("annotating the RecommendationRule: HTTP %d %s" % (status, payload[:300]))
    def done(d, st):
        pending = "analysis.crane.io/run-once" in (d["metadata"].get("annotations") or {})
        return int(st.get("runNumber") or 0) > before and not pending
    st = wait_round(cl, args, done, None)
    t1 = time.time()
    with open(args.stats, "w") as f:
        f.write("round_start=%.3f\nround_end=%.3f\nround_s=%.3f\nrun_number=%s\n"
                % (t0, t1, t1 - t0, st.get("runNumber")))
    log("round %s finished after %.1fs" % (st.get("runNumber"), t1 - t0))


def cmd_check(args):
    cl = client()
    sel = urllib.request.quote("analysis.crane.io/recommendation-rule-name=%s" % args.name)
    total = valued = ready = 0
    reasons = {}
    cont = ""
    while True:
        d = get_json(cl, "%s/recommendations?limit=500&labelSelector=%s%s"
                     % (GROUP, sel, "&continue=" + urllib.request.quote(cont) if cont else ""))
        for r in d["items"]:
            total += 1
            st = r.get("status") or {}
            if st.get("recommendedValue"):
                valued += 1
            cond = [c for c in st.get("conditions") or [] if c.get("type") == "Ready"]
            if cond and cond[0].get("status") == "True":
                ready += 1
            else:
                why = cond[0].get("reason", "?") if cond else "no Ready condition"
                reasons[why] = reasons.get(why, 0) + 1
        cont = d["metadata"].get("continue") or ""
        if not cont:
            break
    with open(args.stats, "w") as f:
        f.write("recommendations=%d\nrecommended_values=%d\nready=%d\nnot_ready=%s\n"
                % (total, valued, ready, ",".join("%s:%d" % kv for kv in sorted(reasons.items()))))
    log("%d Recommendations, %d with a recommendedValue, %d Ready%s"
        % (total, valued, ready, (" (not Ready: %s)" % reasons) if reasons else ""))


def cmd_prom_stats(args):
    """Prometheus' own counters for the history handlers: range queries and remote reads,
    requests and seconds spent answering; instant queries."""
    text = urllib.request.urlopen(args.url.rstrip("/") + "/metrics", timeout=30).read().decode()
    vals = {k: 0.0 for k in ("range", "range_s", "query", "read", "read_s")}
    handlers = {'handler="/api/v1/query_range"': "range", 'handler="/api/v1/query"': "query",
                'handler="/api/v1/read"': "read"}
    for line in text.splitlines():
        for handler, key in handlers.items():
            if handler not in line:
                continue
            if line.startswith("prometheus_http_requests_total{"):
                vals[key] += float(line.rsplit(" ", 1)[1])
            elif line.startswith("prometheus_http_request_duration_seconds_sum{") and key != "query":
                vals[key + "_s"] += float(line.rsplit(" ", 1)[1])
    print("%d %.3f %d %d %.3f" % (vals["range"], vals["range_s"], vals["query"], vals["read"], vals["read_s"]))


def cmd_free_ports(args):
    """Loopback ports for the bench's servers, from the suite's one port source."""
    print(" ".join(str(p) for p in free_port.free_ports(args.count)))


def cmd_proc(args):
    """A process' CPU ticks (utime+stime, /proc/PID/stat) or peak / current RSS in KiB."""
    if args.what == "ticks":
        # Fields after the command name, which may hold spaces: utime and stime are 14 and 15.
        fields = open("/proc/%d/stat" % args.pid).read().rsplit(")", 1)[1].split()
        print(int(fields[11]) + int(fields[12]))
        return
    key = {"hwm": "VmHWM:", "rss": "VmRSS:"}[args.what]
    for line in open("/proc/%d/status" % args.pid):
        if line.startswith(key):
            print(line.split()[1])
            return
    sys.exit("no %s in /proc/%d/status" % (key, args.pid))


BEGIN = "<!-- hack/bench/craned.sh: generated block, begin -->"
END = "<!-- hack/bench/craned.sh: generated block, end -->"
SECTION = "## craned"
HEADING = "### Full round"


def write_docs(path, block):
    """Puts block between the markers; without them, appends "### Full round" and the block at
    the end of the "## craned" section (made at the end of the file when missing). The rest of
    the file is left as it is."""
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    generated = BEGIN + "\n" + block.strip("\n") + "\n" + END
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: generated, text, flags=re.S)
    else:
        m = re.search(r"^%s[ \t]*$" % re.escape(SECTION), text, flags=re.M)
        if m is None:
            text = text.rstrip("\n") + "\n\n" + SECTION + "\n"
            at = len(text)
        else:
            nxt = re.search(r"^## ", text[m.end():], flags=re.M)
            at = m.end() + nxt.start() if nxt else len(text)
        head, tail = text[:at].rstrip("\n"), text[at:]
        text = head + "\n\n" + HEADING + "\n\n" + generated + "\n" + ("\n" + tail if tail else "")
    with open(path, "w") as f:
        f.write(text)


def cmd_docs(args):
    write_docs(args.docs, open(args.block).read())


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("history")
    h.add_argument("--data", required=True, help="the TSDB directory to write blocks into")
    h.add_argument("--work", help="where the OpenMetrics slices go (default: --data)")
    h.add_argument("--workloads", type=int, required=True)
    h.add_argument("--namespaces", type=int, required=True)
    h.add_argument("--pods", type=int, required=True)
    h.add_argument("--days", type=int, required=True)
    h.add_argument("--block-hours", type=int, default=18)
    h.add_argument("--lead-minutes", type=int, default=15)
    h.add_argument("--stats", required=True)
    r = sub.add_parser("rule")
    r.add_argument("--name", required=True)
    r.add_argument("--namespaces", type=int, required=True)
    r.add_argument("--days", type=int, required=True)
    r.add_argument("--craned-pid", type=int, required=True)
    r.add_argument("--timeout", type=int, default=7200)
    r.add_argument("--stats", required=True)
    rr = sub.add_parser("rerun")
    rr.add_argument("--name", required=True)
    rr.add_argument("--craned-pid", type=int, required=True)
    rr.add_argument("--timeout", type=int, default=7200)
    rr.add_argument("--stats", required=True)
    c = sub.add_parser("check")
    c.add_argument("--name", required=True)
    c.add_argument("--stats", required=True)
    p = sub.add_parser("prom-stats")
    p.add_argument("url")
    fp = sub.add_parser("free-ports")
    fp.add_argument("count", type=int)
    pr = sub.add_parser("proc")
    pr.add_argument("pid", type=int)
    pr.add_argument("what", choices=["ticks", "hwm", "rss"])
    d = sub.add_parser("docs")
    d.add_argument("--docs", required=True)
    d.add_argument("--block", required=True)
    args = ap.parse_args()
    {"history": cmd_history, "rule": cmd_rule, "rerun": cmd_rerun, "check": cmd_check, "prom-stats": cmd_prom_stats,
     "free-ports": cmd_free_ports, "proc": cmd_proc, "docs": cmd_docs}[args.cmd](args)


if __name__ == "__main__":
    main()
