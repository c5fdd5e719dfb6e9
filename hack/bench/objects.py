#!/usr/bin/env python3
"""Creates the benchmark's objects in the cluster that KUBECONFIG points at, fast.

    objects.py --pods N --deployments N --replicasets N --services N --configmaps N [--namespaces N]
               [--nodes N] [--running] [--deployment-replicas N]
    objects.py --pods N --churn RATE --churn-seconds S [--namespaces N]

Python 3 standard library only: one keep-alive TLS connection per worker thread, POSTing
objects that look like a real cluster's (labels, annotations, two containers with resources,
probes, env). The client certificate and CA come from the kubeconfig that hack/local-up.sh
writes (files, not inline data).

The pod count stays exact: no object is owned by a controller that would make or delete pods.
  - Deployments are paused (replicas 0 unless --deployment-replicas): a paused Deployment gets no ReplicaSet, so the
    ReplicaSet count stays exact too.
  - ReplicaSets have replicas 0 and a selector (rs=<name>) that matches no pod, so they adopt
    nothing and create nothing.
  - Pods have no owner references (the garbage collector would delete pods whose owner does
    not exist) and no nodeName (the pod GC deletes pods bound to unknown nodes), and they name
    a scheduler that does not run (schedulerName bench-unscheduled): local-up's kube-scheduler
    leaves them alone (no status writes while the benchmark runs) and they stay Pending.
  - Services: the local service CIDR is a /24, so only the first 100 get a cluster IP; the rest
    are headless.
Re-running is harmless: objects that already exist (409) count as created.

For hack/bench/ksm.sh: --churn RATE --churn-seconds S creates nothing; it writes pod status
changes (PodScheduled flipping between False and True, through the status subresource, as the
scheduler and kubelet would) to the --pods N pods made before, RATE per second for S seconds,
and prints what it did as JSON: {"patches": ..., "failed": ..., "seconds": ...,
"unschedulable": pods left with PodScheduled False}.

For hack/bench/adapter.sh: --nodes N creates Node objects (bench-node-NN; no kubelet runs them),
and --running writes every pod's status as Running with its containers running, through the
status subresource, as a kubelet would (metrics.k8s.io answers for running pods only).
"""

import argparse
import http.client
import json
import os
import queue
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

TEAMS = ["payments", "search", "checkout", "identity", "platform", "data", "ml", "growth"]
ENVS = ["prod", "staging", "canary"]


def kubeconfig():
    # hack/lib.sh exports KUBECTL (the kubectl hack/setup.sh builds); plain kubectl otherwise.
    raw = subprocess.run([os.environ.get("KUBECTL", "kubectl"), "config", "view", "--raw", "--minify", "-o", "json"],
                         check=True, capture_output=True, text=True).stdout
    cfg = json.loads(raw)
    cluster = cfg["clusters"][0]["cluster"]
    user = cfg["users"][0]["user"]
    url = urllib.parse.urlparse(cluster["server"])
    ctx = ssl.create_default_context(cafile=cluster["certificate-authority"])
    ctx.load_cert_chain(user["client-certificate"], user["client-key"])
    return url.hostname, url.port, ctx


def ns_name(i, namespaces):
    return "bench-%02d" % (i % namespaces)


def common_labels(i):
    team = TEAMS[i % len(TEAMS)]
    app = "%s-svc-%03d" % (team, i % 250)
    return team, app, {
        "app": app,
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/part-of": team,
        "app.kubernetes.io/version": "1.%d.%d" % (i % 7, i % 13),
        "app.kubernetes.io/managed-by": "helm",
        "team": team,
        "env": ENVS[i % len(ENVS)],
    }


def common_annotations(i, team):
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9102",
        "kubectl.kubernetes.io/default-container": "app",
        "meta.helm.sh/release-name": "%s-release" % team,
        "meta.helm.sh/release-namespace": "bench",
        "example.com/owner-email": "%s-oncall@example.com" % team,
        "example.com/git-sha": "%040x" % (i * 2654435761 % (1 << 160)),
    }


def pod_spec(i, app):
    return {
        "containers": [
            {
                "name": "app",
                "image": "registry.example.com/%s:1.%d.%d" % (app, i % 7, i % 13),
                "imagePullPolicy": "IfNotPresent",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9102, "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "GOMAXPROCS", "value": "2"}],
                "resources": {"requests": {"cpu": "%dm" % (100 + 50 * (i % 4)), "memory": "%dMi" % (128 * (1 + i % 4))},
                              "limits": {"cpu": "1", "memory": "%dMi" % (256 * (1 + i % 4))}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 10},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 20},
            },
            {
                "name": "proxy",
                "image": "registry.example.com/envoy:v1.31.%d" % (i % 5),
                "args": ["--config-path", "/etc/envoy/envoy.yaml", "--log-level", "warn"],
                "ports": [{"name": "admin", "containerPort": 15000, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                              "limits": {"cpu": "500m", "memory": "128Mi"}},
            },
        ],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "example.com/dedicated", "operator": "Equal", "value": "apps", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 30,
        "automountServiceAccountToken": False,
        "schedulerName": "bench-unscheduled",
    }


def pod(i, namespaces):
    team, app, labels = common_labels(i)
    labels["pod-template-hash"] = "%010x" % (i * 40503 % (1 << 40))
    spec = pod_spec(i, app)
    return ns_name(i, namespaces), "/api/v1/namespaces/%s/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "%s-%05d" % (app, i), "labels": labels,
                     "annotations": common_annotations(i, team)},
        "spec": spec,
    }


def template(i, key, name):
    team, app, labels = common_labels(i)
    labels[key] = name
    spec = pod_spec(i, app)
    return labels, {"metadata": {"labels": labels, "annotations": common_annotations(i, team)}, "spec": spec}


# --deployment-replicas: 0 by default; an EHPA needs a workload that is not scaled to zero.
DEPLOYMENT_REPLICAS = 0


def deployment(i, namespaces):
    name = "deploy-%05d" % i
    labels, tmpl = template(i, "deploy", name)
    team = labels["team"]
    return ns_name(i, namespaces), "/apis/apps/v1/namespaces/%s/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels, "annotations": common_annotations(i, team)},
        "spec": {"replicas": DEPLOYMENT_REPLICAS, "paused": True, "revisionHistoryLimit": 5,
                 "selector": {"matchLabels": {"deploy": name}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                 "template": tmpl},
    }


def replicaset(i, namespaces):
    name = "rs-%05d" % i
    labels, tmpl = template(i, "rs", name)
    team = labels["team"]
    return ns_name(i, namespaces), "/apis/apps/v1/namespaces/%s/replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": labels, "annotations": common_annotations(i, team)},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"rs": name}}, "template": tmpl},
    }


def service(i, namespaces):
    team, app, labels = common_labels(i)
    spec = {"selector": {"app": app, "team": team},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                      {"name": "metrics", "port": 9102, "targetPort": "metrics", "protocol": "TCP"}]}
    if i >= 100:
        spec["clusterIP"] = "None"
    return ns_name(i, namespaces), "/api/v1/namespaces/%s/services", {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "svc-%05d" % i, "labels": labels, "annotations": common_annotations(i, team)},
        "spec": spec,
    }


def configmap(i, namespaces):
    team, app, labels = common_labels(i)
    data = {
        "app.properties": "".join("%s.setting.%d=value-%d-%d\n" % (app, k, i, k) for k in range(20)),
        "LOG_LEVEL": "info",
        "FEATURE_FLAGS": ",".join("flag-%d" % ((i + k) % 50) for k in range(10)),
    }
    return ns_name(i, namespaces), "/api/v1/namespaces/%s/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm-%05d" % i, "labels": labels, "annotations": common_annotations(i, team)},
        "data": data,
    }


def node(i, _namespaces):
    return None, "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "bench-node-%02d" % i,
                     "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": "bench-node-%02d" % i,
                                "node.kubernetes.io/instance-type": "bench.large"}},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "allocatable": {"cpu": "7800m", "memory": "30Gi", "pods": "110"}},
    }


def running_status(pod_obj, now):
    """The status a kubelet writes for a started pod (a merge patch body)."""
    containers = pod_obj["spec"]["containers"]
    return {"status": {
        "phase": "Running",
        "startTime": now,
        "podIP": "10.244.0.1",
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "", "ready": True,
                               "restartCount": 0, "started": True,
                               "state": {"running": {"startedAt": now}}} for c in containers],
    }}


def scheduled_status(scheduled, now, run):
    """A PodScheduled condition flip (a merge patch body): what kube-state-metrics shows as
    kube_pod_status_scheduled and kube_pod_status_unschedulable. `run` makes every churn run's
    patches real changes (an identical patch is no write and no watch event)."""
    condition = {"type": "PodScheduled", "status": "True" if scheduled else "False", "lastTransitionTime": now,
                 "message": "benchmark churn %s" % run}
    if not scheduled:
        condition["reason"] = "Unschedulable"
    return {"status": {"conditions": [condition]}}


def churn(args, host, port, ctx):
    """Status patches to existing pods at a fixed rate; each pass over the pods flips them the other way."""
    due = queue.Queue(maxsize=args.workers * 4)
    counts = {"patches": 0, "failed": 0}
    run = "%.6f" % time.time()
    lock = threading.Lock()

    def worker():
        client = Client(host, port, ctx)
        while True:
            item = due.get()
            if item is None:
                return
            k, at = item
            delay = at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            i = k % args.pods
            ns, path, obj = pod(i, args.namespaces)
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            try:
                status, _ = client.request("PATCH", "%s/%s/status" % (path % ns, obj["metadata"]["name"]),
                                           scheduled_status((k // args.pods) % 2 == 1, now, run),
                                           content_type="application/merge-patch+json")
            except RuntimeError:
                status = 0
            with lock:
                counts["patches" if status == 200 else "failed"] += 1

    threads = [threading.Thread(target=worker) for _ in range(args.workers)]
    for t in threads:
        t.start()
    start = time.monotonic()
    total = int(args.churn * args.churn_seconds)
    for k in range(total):
        due.put((k, start + k / args.churn))
    for _ in threads:
        due.put(None)
    for t in threads:
        t.join()
    counts["seconds"] = round(time.monotonic() - start, 3)
    # Pod i was last patched in pass (total - 1 - i) // pods; even passes set PodScheduled False.
    counts["unschedulable"] = sum(1 for i in range(min(total, args.pods)) if (total - 1 - i) // args.pods % 2 == 0)
    print(json.dumps(counts))
    if counts["failed"]:
        sys.exit("%d of %d status patches failed" % (counts["failed"], total))


class Client:
    def __init__(self, host, port, ctx):
        self.host, self.port, self.ctx = host, port, ctx
        self.conn = None

    def request(self, method, path, body=None, content_type="application/json"):
        for attempt in range(20):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
                data = json.dumps(body).encode() if body is not None else None
                self.conn.request(method, path, body=data, headers={"Content-Type": content_type,
                                                                      "Accept": "application/json"})
                resp = self.conn.getresponse()
                payload = resp.read()
                if resp.status == 429 or resp.status >= 500:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                return resp.status, payload
            except (OSError, http.client.HTTPException):
                self.conn = None
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError("%s %s: giving up after retries" % (method, path))


def main():
    ap = argparse.ArgumentParser()
    for kind in ("pods", "deployments", "replicasets", "services", "configmaps"):
        ap.add_argument("--" + kind, type=int, default=0)
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--nodes", type=int, default=0)
    ap.add_argument("--running", action="store_true", help="write every created pod's status as Running")
    ap.add_argument("--churn", type=float, default=0, help="status patches per second to the --pods pods")
    ap.add_argument("--churn-seconds", type=float, default=60)
    ap.add_argument("--deployment-replicas", type=int, default=0,
                    help="spec.replicas of the (paused, so podless) Deployments")
    args = ap.parse_args()
    global DEPLOYMENT_REPLICAS
    DEPLOYMENT_REPLICAS = args.deployment_replicas
    host, port, ctx = kubeconfig()
    if args.churn > 0:
        if args.pods <= 0:
            sys.exit("--churn needs --pods: how many pods objects.py made before")
        churn(args, host, port, ctx)
        return
    main_client = Client(host, port, ctx)

    start = time.monotonic()
    for n in range(args.namespaces):
        name = "bench-%02d" % n
        status, payload = main_client.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"team": TEAMS[n % len(TEAMS)], "purpose": "benchmark"}}})
        if status not in (201, 409):
            sys.exit("creating namespace %s: HTTP %d %s" % (name, status, payload[:300]))
    # Pods need the namespace's default ServiceAccount, which the controller manager creates.
    deadline = time.monotonic() + 120
    for n in range(args.namespaces):
        while main_client.request("GET", "/api/v1/namespaces/bench-%02d/serviceaccounts/default" % n)[0] != 200:
            if time.monotonic() > deadline:
                sys.exit("the default ServiceAccount of bench-%02d did not appear in 120s" % n)
            time.sleep(0.2)

    work = queue.Queue()
    makers = [(node, args.nodes), (configmap, args.configmaps), (service, args.services), (replicaset, args.replicasets),
              (deployment, args.deployments), (pod, args.pods)]
    for make, count in makers:
        for i in range(count):
            work.put((make, i))
    total = work.qsize()
    errors = []
    done = [0]
    lock = threading.Lock()

    def worker():
        client = Client(host, port, ctx)
        while True:
            try:
                make, i = work.get_nowait()
            except queue.Empty:
                return
            ns, path, obj = make(i, args.namespaces)
            if ns is not None:
                path = path % ns
            try:
                status, payload = client.request("POST", path, obj)
                if status in (201, 409) and make is pod and args.running:
                    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    status, payload = client.request(
                        "PATCH", "%s/%s/status" % (path, obj["metadata"]["name"]), running_status(obj, now),
                        content_type="application/merge-patch+json")
                    status = 201 if status == 200 else status
            except RuntimeError as e:
                status, payload = 0, str(e).encode()
            with lock:
                if status not in (201, 409):
                    errors.append("%s %s/%s: HTTP %d %s" % (obj["kind"], ns or "", obj["metadata"]["name"], status,
                                                             payload[:300].decode(errors="replace")))
                done[0] += 1
                if done[0] % 2000 == 0:
                    print("  created %d/%d objects (%.0f/s)" % (done[0], total, done[0] / (time.monotonic() - start)),
                          file=sys.stderr, flush=True)

    threads = [threading.Thread(target=worker) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for e in errors[:10]:
            print(e, file=sys.stderr)
        sys.exit("%d of %d objects failed" % (len(errors), total))
    print("created %d objects in %.1fs" % (total, time.monotonic() - start), file=sys.stderr)


if __name__ == "__main__":
    main()
