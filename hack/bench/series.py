#!/usr/bin/env python3
"""A scrape target holding the adapter benchmark's series (hack/bench/adapter.sh).

    series.py --port P --metrics 500 --expected FILE [--bind 127.0.0.1]

Reads the pods of the bench-* namespaces and the bench-node-* nodes from the cluster that
KUBECONFIG points at (made by objects.py --running --nodes), and serves /metrics in the text
format with, for a realistic mix of what Prometheus holds in a cluster:

  - cAdvisor-style container_cpu_usage_seconds_total (counter) and
    container_memory_working_set_bytes (gauge), one series per container of every pod
    (namespace, pod, container, node labels);
  - kubelet resource-metrics-style node_cpu_usage_seconds_total and node_memory_working_set_bytes,
    one series per node;
  - METRICS - 4 application metrics, half gauges (bench_queue_depth_NNN) and half counters
    (bench_http_requests_NNN_total), one series per pod (namespace, pod labels).

With 200 pods of 2 containers, 10 nodes and --metrics 500 that is 100,020 series across 500
metric names. Counters grow at a per-series rate, so rate() and irate() have something to say;
gauges are fixed per series. --expected FILE receives the custom metric names the benchmark's
adapter config (adapter-config.yaml) derives from these series, one a line, so adapter.sh can
tell when an adapter's discovery lists all of them.

Python 3 standard library only; serves loopback only.
"""

import argparse
import http.server
import json
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objects  # noqa: E402  (same folder: kubeconfig() and Client)


def list_cluster():
    host, port, ctx = objects.kubeconfig()
    client = objects.Client(host, port, ctx)
    status, payload = client.request("GET", "/api/v1/pods")
    if status != 200:
        sys.exit("listing pods: HTTP %d %s" % (status, payload[:300]))
    pods = []
    for p in json.loads(payload)["items"]:
        ns = p["metadata"]["namespace"]
        if ns.startswith("bench-"):
            pods.append((ns, p["metadata"]["name"], [c["name"] for c in p["spec"]["containers"]]))
    status, payload = client.request("GET", "/api/v1/nodes")
    if status != 200:
        sys.exit("listing nodes: HTTP %d %s" % (status, payload[:300]))
    nodes = sorted(n["metadata"]["name"] for n in json.loads(payload)["items"]
                   if n["metadata"]["name"].startswith("bench-node-"))
    if not pods or not nodes:
        sys.exit("no bench-* pods (%d) or bench-node-* nodes (%d) in the cluster: run objects.py --running --nodes N"
                 % (len(pods), len(nodes)))
    return sorted(pods), nodes


class Family:
    """One metric family: its header and, per series, the label part and how its value moves."""

    def __init__(self, name, kind, help_text):
        self.name, self.kind = name, kind
        self.header = "# HELP %s %s\n# TYPE %s %s\n" % (name, help_text, name, kind)
        self.prefixes, self.levels = [], []

    def add(self, labels, level):
        self.prefixes.append("%s{%s} " % (self.name, ",".join('%s="%s"' % kv for kv in labels)))
        self.levels.append(level)

    def render(self, elapsed):
        if self.kind == "counter":
            # A counter at `level` per second since the exporter started.
            lines = ["%s%.3f\n" % (p, 1000 + lvl * elapsed) for p, lvl in zip(self.prefixes, self.levels)]
        else:
            lines = ["%s%g\n" % (p, lvl) for p, lvl in zip(self.prefixes, self.levels)]
        return self.header + "".join(lines)


def build(pods, nodes, metrics):
    fams, expected = [], []
    cpu = Family("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed in seconds.")
    mem = Family("container_memory_working_set_bytes", "gauge", "Current working set in bytes.")
    for k, (ns, pod, containers) in enumerate(pods):
        node = nodes[k % len(nodes)]
        for c, container in enumerate(containers):
            labels = (("namespace", ns), ("pod", pod), ("container", container), ("node", node))
            cpu.add(labels, 0.05 + 0.01 * ((k * 7 + c * 3) % 40))             # 50m .. 440m
            mem.add(labels, float((64 + (k * 13 + c * 29) % 448) * 1048576))  # 64Mi .. 511Mi
    ncpu = Family("node_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the node in core-seconds.")
    nmem = Family("node_memory_working_set_bytes", "gauge", "Current working set of the node in bytes.")
    for k, node in enumerate(nodes):
        ncpu.add((("node", node),), 1.5 + 0.25 * (k % 8))
        nmem.add((("node", node),), float((8 + k % 8) * 1073741824))
    fams += [cpu, mem, ncpu, nmem]
    expected += ["cpu_usage", "memory_working_set_bytes"]
    for m in range(max(0, metrics - 4)):
        if m % 2 == 0:
            f = Family("bench_queue_depth_%03d" % m, "gauge", "Items waiting in queue %d." % m)
            expected.append(f.name)
        else:
            f = Family("bench_http_requests_%03d_total" % m, "counter", "Requests served by handler %d." % m)
            expected.append(f.name[: -len("_total")])
        for k, (ns, pod, _) in enumerate(pods):
            f.add((("namespace", ns), ("pod", pod)), float((k * 31 + m * 17) % 97 + 1))
        fams.append(f)
    return fams, expected


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--metrics", type=int, default=500)
    ap.add_argument("--expected", help="write the expected custom metric names here")
    args = ap.parse_args()
    pods, nodes = list_cluster()
    fams, expected = build(pods, nodes, args.metrics)
    n_series = sum(len(f.prefixes) for f in fams)
    if args.expected:
        with open(args.expected, "w") as f:
            f.write("\n".join(expected) + "\n")
    start = time.monotonic()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            with lock:
                body = "".join(f.render(time.monotonic() - start) for f in fams).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer((args.bind, args.port), Handler)
    print("series.py: %d series in %d families for %d pods and %d nodes on http://%s:%d/metrics"
          % (n_series, len(fams), len(pods), len(nodes), args.bind, args.port), file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
