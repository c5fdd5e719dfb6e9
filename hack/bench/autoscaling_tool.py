#!/usr/bin/env python3
"""Helpers of hack/bench/autoscaling.sh (the 1,000-EHPA benchmark).

    autoscaling_tool.py ehpas --workloads N --namespaces M --window S --days D --out FILE
    autoscaling_tool.py wait-tsps --count N --since UNIX --window S --craned-pid PID
                                  --timeout S --stats FILE
    autoscaling_tool.py urls --workloads N --namespaces M

ehpas: one EffectiveHorizontalPodAutoscaler per Deployment of hack/bench/objects.py
(deploy-NNNNN in bench-NN), as a List for `kubectl apply --server-side`: a CPU utilization
target, a DSP prediction of it over D days of 1-minute history (window S seconds), and one
daily cron, so each EHPA has a TimeSeriesPrediction and both of Crane's external metrics.

wait-tsps: lists, then watches, every TimeSeriesPrediction until N of them are Ready (PredictSucceed) with a
status written for a window of S seconds after UNIX (their last sample at least
UNIX + 2 × S - 2 minutes); writes the time that took, and when the first and the half were done.

urls: the external-metrics paths an HPA of each EHPA asks metrics-adapter for
(crane_autoscaling_prediction and crane_autoscaling_cron with Crane's selector labels).

Python 3 standard library only; talks to 127.0.0.1 only (the kubeconfig of hack/local-up.sh).
"""

import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import craned_tool  # noqa: E402  (same folder: the API client and log())
import objects  # noqa: E402  (same folder: the Deployments' names and namespaces)

TSPS = "/apis/prediction.crane.io/v1alpha1/timeseriespredictions"


def workload(i, namespaces):
    return objects.ns_name(i, namespaces), "deploy-%05d" % i


def cmd_ehpas(args):
    items = []
    for i in range(args.workloads):
        ns, name = workload(i, args.namespaces)
        items.append({
            "apiVersion": "autoscaling.crane.io/v1alpha1", "kind": "EffectiveHorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": 1, "maxReplicas": 10, "scaleStrategy": "Auto",
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 50}}}],
                "prediction": {"predictionWindowSeconds": args.window, "predictionAlgorithm": {
                    "algorithmType": "dsp",
                    "dsp": {"sampleInterval": "1m", "historyLength": "%dd" % args.days}}},
                "crons": [{"name": "office", "timezone": "UTC", "start": "0 8 * * *",
                           "end": "0 18 * * *", "targetReplicas": 3}],
            },
        })
    with open(args.out, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)


def done(tsp, since, window):
    st = tsp.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("reason") == "PredictSucceed"
                for c in st.get("conditions") or [])
    if not ready or (tsp.get("spec") or {}).get("predictionWindowSeconds") != window:
        return False
    last = max((s.get("timestamp", 0) for m in st.get("predictionMetrics") or []
                for p in m.get("prediction") or [] for s in p.get("samples") or []), default=0)
    return last >= since + 2 * window - 120


def watch_lines(cl, path):
    """The watch events of `path` (one JSON object per line), on a connection of its own so
    the list client stays usable; ends when the server closes the watch."""
    conn = http.client.HTTPSConnection(cl.host, cl.port, context=cl.ctx, timeout=120)
    conn.request("GET", path, headers={"Accept": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError("GET %s: HTTP %d %s" % (path, resp.status, resp.read()[:300]))
    while True:
        line = resp.readline()
        if not line:
            conn.close()
            return
        yield json.loads(line)


def cmd_wait_tsps(args):
    # One list, then a watch: polling lists of a thousand statuses would load the API server
    # more than craned does, and slow down what is measured.
    cl = craned_tool.client()
    tsps, token = {}, ""
    while True:
        d = craned_tool.get_json(cl, TSPS + "?limit=250" + ("&continue=" + urllib.parse.quote(token) if token else ""))
        for t in d["items"]:
            tsps[(t["metadata"]["namespace"], t["metadata"]["name"])] = done(t, args.since, args.window)
        token = d["metadata"].get("continue") or ""
        if not token:
            break
    rv = d["metadata"]["resourceVersion"]
    first = half = None
    deadline = time.monotonic() + args.timeout
    next_log = time.monotonic() + 30

    def count():
        return sum(1 for v in tsps.values() if v)

    def check(now):
        nonlocal first, half
        n = count()
        if n and first is None:
            first = now
        if n * 2 >= args.count and half is None:
            half = now
        return n >= args.count

    now = time.time()
    while not check(now):
        for event in watch_lines(cl, TSPS + "?watch=1&timeoutSeconds=60&resourceVersion=" + rv):
            now = time.time()
            obj = event.get("object") or {}
            if event.get("type") == "ERROR":
                sys.exit("the watch failed: %s" % obj.get("message"))
            rv = obj.get("metadata", {}).get("resourceVersion", rv)
            key = (obj["metadata"].get("namespace"), obj["metadata"]["name"])
            if event.get("type") == "DELETED":
                tsps.pop(key, None)
            else:
                tsps[key] = done(obj, args.since, args.window)
            if check(now):
                break
            if time.monotonic() >= next_log:
                craned_tool.log("  %.0fs: %d of %d TimeSeriesPredictions done (%d exist)"
                                % (now - args.since, count(), args.count, len(tsps)))
                next_log += 30
        else:
            now = time.time()
        try:
            os.kill(args.craned_pid, 0)
        except OSError:
            sys.exit("craned (pid %d) exited" % args.craned_pid)
        if time.monotonic() > deadline and not check(now):
            sys.exit("only %d of %d TimeSeriesPredictions done in %ds" % (count(), args.count, args.timeout))
    with open(args.stats, "w") as f:
        f.write("all_s=%.1f\nfirst_s=%.1f\nhalf_s=%.1f\n"
                % (now - args.since, first - args.since, half - args.since))


def cmd_urls(args):
    for i in range(args.workloads):
        ns, name = workload(i, args.namespaces)
        for metric, ident in (("crane_autoscaling_prediction", "resource.cpu"),
                              ("crane_autoscaling_cron", "cron")):
            sel = "targetKind=Deployment,targetName=%s,targetNamespace=%s,resourceIdentifier=%s" % (name, ns, ident)
            print("/apis/external.metrics.k8s.io/v1beta1/namespaces/%s/%s?labelSelector=%s"
                  % (ns, metric, urllib.parse.quote(sel)))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("ehpas")
    for a in ("--workloads", "--namespaces", "--window", "--days"):
        e.add_argument(a, type=int, required=True)
    e.add_argument("--out", required=True)
    w = sub.add_parser("wait-tsps")
    for a in ("--count", "--since", "--window", "--craned-pid"):
        w.add_argument(a, type=int, required=True)
    w.add_argument("--timeout", type=int, default=3600)
    w.add_argument("--stats", required=True)
    u = sub.add_parser("urls")
    u.add_argument("--workloads", type=int, required=True)
    u.add_argument("--namespaces", type=int, required=True)
    args = ap.parse_args()
    {"ehpas": cmd_ehpas, "wait-tsps": cmd_wait_tsps, "urls": cmd_urls}[args.cmd](args)


if __name__ == "__main__":
    main()
