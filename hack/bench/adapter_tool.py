#!/usr/bin/env python3
"""Helpers for hack/bench/adapter.sh (Python 3 standard library only).

    adapter_tool.py wait-relist URL T0 EXPECTED_FILE TIMEOUT_S
        Polls URL's custom.metrics.k8s.io/v1beta2 discovery (front-proxy client cert from the
        BENCH_CERT/BENCH_KEY/BENCH_CACERT environment, user from BENCH_USER/BENCH_GROUP) until
        every name in EXPECTED_FILE is listed as pods/NAME and metrics.k8s.io answers; prints
        the seconds since T0 (a Unix time) when it first did.
    adapter_tool.py get URL PATH OUT
        One request, the body saved to OUT; prints "status items" (items in a list answer).
    adapter_tool.py urls KIND EXPECTED_FILE NAMESPACES
        The URL paths of one load phase (custom | top-pods | top-nodes), one a line.
    adapter_tool.py prom-stats PROMETHEUS_URL
        One line: "series_count series_sum_s query_count query_sum_s" from Prometheus's own
        http request histograms (how often and how long it answered /api/v1/series and
        /api/v1/query).
    adapter_tool.py table RESULTS_DIR [--docs FILE --notes FILE]
        Medians over rounds as a markdown table; with --docs also into the
        "## metrics-adapter vs prometheus-adapter" section of FILE.
"""

import argparse
import glob
import http.client
import json
import os
import random
import re
import ssl
import statistics
import sys
import time
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (same folder: write_docs)

SECTION = "## metrics-adapter vs prometheus-adapter"
BEGIN = "<!-- hack/bench/adapter.sh: generated block, begin -->"
END = "<!-- hack/bench/adapter.sh: generated block, end -->"
LABEL_SELECTOR = "app.kubernetes.io/managed-by=helm"


def tls_context():
    ctx = ssl.create_default_context(cafile=os.environ["BENCH_CACERT"])
    ctx.load_cert_chain(os.environ["BENCH_CERT"], os.environ["BENCH_KEY"])
    return ctx


def headers():
    return {"X-Remote-User": os.environ.get("BENCH_USER", "ferrocrane-admin"),
            "X-Remote-Group": os.environ.get("BENCH_GROUP", "system:masters"),
            "Accept": "application/json"}


class Conn:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.ctx, self.conn = u.hostname, u.port, tls_context(), None

    def get(self, path):
        try:
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
            self.conn.request("GET", path, headers=headers())
            resp = self.conn.getresponse()
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException) as e:
            self.conn = None
            return 0, str(e).encode()


def wait_relist(url, t0, expected_file, timeout):
    expected = {line.strip() for line in open(expected_file) if line.strip()}
    conn = Conn(url)
    deadline = time.time() + timeout
    last = ""
    while time.time() < deadline:
        status, body = conn.get("/apis/custom.metrics.k8s.io/v1beta2")
        if status == 200:
            names = {r["name"].split("/", 1)[1] for r in json.loads(body).get("resources", [])
                     if r["name"].startswith("pods/")}
            missing = expected - names
            last = "%d of %d metrics listed" % (len(expected) - len(missing), len(expected))
            if not missing:
                s2, _ = conn.get("/apis/metrics.k8s.io/v1beta1/nodes")
                if s2 == 200:
                    print("%.3f" % (time.time() - t0))
                    return
                last = "metrics.k8s.io/v1beta1/nodes: HTTP %d" % s2
        else:
            last = "HTTP %d %s" % (status, body[:200])
        time.sleep(0.1)
    sys.exit("no complete discovery within %ss: %s" % (timeout, last))


def get(url, path, out):
    status, body = Conn(url).get(path)
    with open(out, "wb") as f:
        f.write(body)
    items = "-"
    if status == 200:
        items = str(len(json.loads(body).get("items", [])))
    print("%d %s" % (status, items))


def urls(kind, expected_file, namespaces):
    names = [line.strip() for line in open(expected_file) if line.strip()]
    nss = ["bench-%02d" % i for i in range(namespaces)]
    if kind == "custom":
        # 50 of the application metrics (gauges and counters alike) x every namespace, the way
        # an HPA with a Pods metric asks: all pods its selector matches in one namespace.
        apps = [n for n in names if n.startswith("bench_")]
        step = max(1, len(apps) // 50)
        picked = apps[::step][:50]
        sel = urllib.parse.quote(LABEL_SELECTOR, safe="")
        out = ["/apis/custom.metrics.k8s.io/v1beta2/namespaces/%s/pods/%%2A/%s?labelSelector=%s" % (ns, m, sel)
               for m in picked for ns in nss]
    elif kind == "top-pods":  # kubectl top pods -n NS
        out = ["/apis/metrics.k8s.io/v1beta1/namespaces/%s/pods" % ns for ns in nss]
    elif kind == "top-nodes":  # kubectl top nodes
        out = ["/apis/metrics.k8s.io/v1beta1/nodes"]
    else:
        sys.exit("unknown kind %r" % kind)
    # A fixed shuffle: consecutive requests hit different namespaces and metrics, the same
    # order for both adapters.
    random.Random(1).shuffle(out)
    print("\n".join(out))


def prom_stats(prom_url):
    text = urllib.request.urlopen(prom_url.rstrip("/") + "/metrics", timeout=10).read().decode()
    v = {}
    for line in text.splitlines():
        for handler in ("/api/v1/series", "/api/v1/query"):
            for suffix in ("_count", "_sum"):
                key = 'prometheus_http_request_duration_seconds%s{handler="%s"}' % (suffix, handler)
                if line.startswith(key + " "):
                    v[(handler, suffix)] = float(line.split()[-1])
    print("%d %.6f %d %.6f" % (v.get(("/api/v1/series", "_count"), 0), v.get(("/api/v1/series", "_sum"), 0),
                               v.get(("/api/v1/query", "_count"), 0), v.get(("/api/v1/query", "_sum"), 0)))


PHASES = [("custom", "custom metrics, `pods/*` in a namespace (HPA Pods metric)"),
          ("top-pods", "`kubectl top pods -n NS`"),
          ("top-nodes", "`kubectl top nodes`")]


# Targets: ("<=", ratio) — ours at most that fraction of Go's; (">=", ratio) — at least that
# multiple. Issue 4 set the first ones; issue 15 the peak RSS, custom-metrics p99 and throughput.
AT_MOST_HALF = ("<=", 1 / 2, "1/2")


def rows():
    r = [
        ("relist_first_s", "start → all metrics discoverable (first relist), s", "%.2f", AT_MOST_HALF),
        ("relist_cpu_ms", "adapter CPU per steady relist, ms", "%.0f", AT_MOST_HALF),
        ("relist_prom_ms", "of which Prometheus answering /api/v1/series, per relist, ms", "%.0f", None),
        ("vmhwm_mib", "peak RSS (VmHWM), MiB", "%.1f", ("<=", 1 / 5, "1/5")),
        ("vmhwm_relisted_mib", "peak RSS up to the first relist, MiB", "%.1f", None),
        ("rss_relisted_mib", "RSS after the first relist, MiB", "%.1f", None),
    ]
    for key, label in PHASES:
        custom = key == "custom"
        r += [
            (key + "_p50_ms", "%s: p50, ms" % label, "%.1f", None),
            (key + "_p99_ms", "%s: p99, ms" % label, "%.1f", ("<=", 1 / 4, "1/4") if custom else AT_MOST_HALF),
            (key + "_rps", "%s: throughput, requests/s" % label, "%.0f", (">=", 10, "10×") if custom else None),
            (key + "_cpu_ms", "%s: adapter CPU per request, ms" % label, "%.2f", None),
            (key + "_prom_ms", "%s: Prometheus query time per request, ms" % label, "%.2f", None),
            (key + "_overhead_ms", "%s: mean latency beyond the Prometheus queries, ms" % label, "%.1f", None),
            (key + "_vmhwm_mib", "%s: peak RSS (VmHWM) at the end of the phase, MiB" % label, "%.1f", None),
        ]
    return r


def load_results(d):
    runs = {}
    for f in sorted(glob.glob(os.path.join(d, "run-*.json"))):
        if not re.fullmatch(r"run-[a-z0-9-]+-[0-9]+\.json", os.path.basename(f)):
            continue  # load and sample answers saved beside the results
        kv = json.load(open(f))
        runs.setdefault(kv["adapter"], []).append(kv)
    return runs


def med(runs, key):
    vals = [float(r[key]) for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def table(d):
    runs = load_results(d)
    go, ours = runs.get("go", []), runs.get("ours", [])
    out = ["| | prometheus-adapter v0.12.0 (Go) | ferrocrane metrics-adapter | ours / Go | target |",
           "|---|---:|---:|---:|---|"]
    for key, label, fmt, target in rows():
        g, o = med(go, key), med(ours, key)
        ratio = "%.2f" % (o / g) if g and o is not None else "—"
        tgt = ""
        if target is not None:
            op, bound, text = target
            tgt = "%s %s" % ("≤" if op == "<=" else "≥", text)
            if g and o is not None:
                met = o / g <= bound if op == "<=" else o / g >= bound
                tgt += " " + ("met" if met else "**missed**")
        out.append("| %s | %s | %s | %s | %s |" % (label, fmt % g if g is not None else "—",
                                                  fmt % o if o is not None else "—", ratio, tgt))
    n = "rounds: Go %d, ours %d (medians over rounds; p50/p99 are per round, over all clients' requests)" % (
        len(go), len(ours))
    return "\n".join(out), n


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    a = sys.argv[2:]
    if cmd == "wait-relist":
        wait_relist(a[0], float(a[1]), a[2], float(a[3]))
    elif cmd == "get":
        get(a[0], a[1], a[2])
    elif cmd == "urls":
        urls(a[0], a[1], int(a[2]))
    elif cmd == "prom-stats":
        prom_stats(a[0])
    elif cmd == "table":
        ap = argparse.ArgumentParser()
        ap.add_argument("results")
        ap.add_argument("--docs")
        ap.add_argument("--notes")
        args = ap.parse_args(a)
        tbl, n = table(args.results)
        print(tbl)
        print()
        print(n)
        if args.docs:
            notes = open(args.notes).read() if args.notes else ""
            report.write_docs(args.docs, "%s\n\n%s.\n\n%s" % (tbl, n, notes), SECTION, BEGIN, END)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
