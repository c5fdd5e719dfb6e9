#!/usr/bin/env python3
"""Numbers for hack/bench/ksm.sh (Python 3 standard library only).

    report.py scrapes FILE...        curl -w lines "code seconds bytes encoding" -> one line:
                                     n bad p50_ms p99_ms median_bytes encodings
    report.py table RESULTS_DIR [--docs FILE --command CMD --notes FILE] [--targets at-scale]
                                     medians over rounds -> a markdown table on stdout; with --docs,
                                     also into the "## ksm vs kube-state-metrics" section of FILE
                                     (between the generated-block markers, or a new section).
                                     --targets at-scale: issue 15's targets at 100,000 pods, into
                                     the "### 100,000 pods" section and its own markers.
"""

import argparse
import glob
import os
import re
import statistics
import sys

SECTION = "## ksm vs kube-state-metrics"
BEGIN = "<!-- hack/bench/ksm.sh: generated block, begin -->"
END = "<!-- hack/bench/ksm.sh: generated block, end -->"
AT_SCALE_SECTION = "### 100,000 pods (issue 15)"
AT_SCALE_BEGIN = "<!-- hack/bench/ksm.sh at scale: generated block, begin -->"
AT_SCALE_END = "<!-- hack/bench/ksm.sh at scale: generated block, end -->"


def percentile(values, p):
    """Nearest-rank percentile."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def scrapes(files):
    lat, size, enc, bad = [], [], set(), 0
    for f in files:
        for line in open(f):
            parts = line.split()
            if not parts:
                continue
            if parts[0] != "200":
                bad += 1
                continue
            lat.append(float(parts[1]) * 1000)
            size.append(int(parts[2]))
            enc.add(parts[3] if len(parts) > 3 else "identity")
    if not lat:
        print("0 %d nan nan 0 none" % bad)
        return
    print("%d %d %.1f %.1f %d %s" % (len(lat), bad, percentile(lat, 50), percentile(lat, 99),
                                     statistics.median(size), ",".join(sorted(enc))))


def load_results(d):
    runs = {}
    for f in sorted(glob.glob(os.path.join(d, "run-*.txt"))):
        kv = dict(line.rstrip("\n").split("=", 1) for line in open(f) if "=" in line)
        # The start-up spike: how far the initial lists push RSS above what the exporter then keeps.
        if kv.get("vmhwm_synced_mib") and kv.get("rss_synced_mib"):
            kv["startup_spike"] = "%.3f" % (float(kv["vmhwm_synced_mib"]) / float(kv["rss_synced_mib"]))
        runs.setdefault(kv["exporter"], []).append(kv)
    return runs


# Targets: ("ratio", x) ours/Go at most x; ("own", x) ours' own value at most x.
ROWS = [
    # key, label, format, {targets name: target}
    ("vmhwm_mib", "peak RSS (VmHWM), MiB", "%.1f", {"base": ("ratio", 1 / 3), "at-scale": ("ratio", 1 / 5)}),
    ("vmhwm_synced_mib", "peak RSS up to the first complete scrape, MiB", "%.1f", {}),
    ("vmhwm_after_plain_mib", "peak RSS up to the end of the plain scrapes, MiB", "%.1f", {}),
    ("rss_synced_mib", "RSS after first complete scrape, MiB", "%.1f", {}),
    ("startup_spike", "start-up spike: peak up to the first complete scrape ÷ RSS after it", "%.2f",
     {"at-scale": ("own", 1.25)}),
    ("start_s", "start → first complete scrape, s", "%.2f", {}),
    ("plain_p50_ms", "/metrics p50, plain, ms", "%.1f", {"base": ("ratio", 1 / 2)}),
    ("plain_p99_ms", "/metrics p99, plain, ms", "%.1f", {"base": ("ratio", 1 / 2), "at-scale": ("ratio", 1 / 4)}),
    ("gzip_p50_ms", "/metrics p50, gzip, ms", "%.1f", {"base": ("ratio", 1 / 2)}),
    ("gzip_p99_ms", "/metrics p99, gzip, ms", "%.1f", {"base": ("ratio", 1 / 2), "at-scale": ("ratio", 1 / 4)}),
    ("plain_bytes", "bytes per scrape, plain", "%.0f", {}),
    ("gzip_bytes", "bytes per scrape, gzip", "%.0f", {}),
    ("plain_cpu_ms", "CPU per scrape, plain, ms", "%.1f", {}),
    ("gzip_cpu_ms", "CPU per scrape, gzip, ms", "%.1f", {}),
    ("metric_lines", "sample lines per scrape", "%.0f", {}),
    ("churn_patches", "pod status changes written during the churn phase", "%.0f", {}),
    ("churn_unschedulable", "pods the changes left unschedulable", "%.0f", {}),
    ("churn_seen", "of which the exporter shows after it (kube_pod_status_scheduled false)", "%.0f", {}),
    ("churn_cpu_us", "CPU per watch event (churn phase), µs", "%.0f", {}),
    ("idle_cpu_ms_per_s", "CPU while idle (just before the churn), ms per s", "%.2f", {}),
    ("vmhwm_after_churn_mib", "peak RSS at the end of the churn phase, MiB", "%.1f", {}),
]


def target_text(target, g, o):
    kind, x = target
    if kind == "ratio":
        text = "≤ 1/%d" % round(1 / x)
        met = g and o is not None and o / g <= x
        known = bool(g) and o is not None
    else:
        text = "ours ≤ %.2f" % x
        met = o is not None and o <= x
        known = o is not None
    return text + (" " + ("met" if met else "**missed**") if known else "")


def med(runs, key):
    vals = [float(r[key]) for r in runs if r.get(key) not in (None, "", "nan")]
    return statistics.median(vals) if vals else None


def table(d, targets="base"):
    runs = load_results(d)
    go, ours = runs.get("go", []), runs.get("ours", [])
    # Other exporters (e.g. "ours-main": another build of ours, for a before/after) get a
    # value and a ratio column each, after the target column.
    extra = sorted(k for k in runs if k not in ("go", "ours"))
    head = "| | kube-state-metrics v2.20.0 (Go) | ferrocrane ksm | ksm / Go | target |"
    rule = "|---|---:|---:|---:|---|"
    for e in extra:
        head += " %s | %s / Go |" % (e, e)
        rule += "---:|---:|"
    out = [head, rule]
    for key, label, fmt, row_targets in ROWS:
        g, o = med(go, key), med(ours, key)
        if g is None and o is None:
            continue
        gs = fmt % g if g is not None else "—"
        os_ = fmt % o if o is not None else "—"
        ratio = "%.2f" % (o / g) if g and o is not None else "—"
        tgt = target_text(row_targets[targets], g, o) if targets in row_targets else ""
        line = "| %s | %s | %s | %s | %s |" % (label, gs, os_, ratio, tgt)
        for e in extra:
            x = med(runs[e], key)
            line += " %s | %s |" % (fmt % x if x is not None else "—", "%.2f" % (x / g) if g and x is not None else "—")
        out.append(line)
    n = "rounds: " + ", ".join("%s %d" % (k, len(v)) for k, v in sorted(runs.items())) + \
        " (medians over rounds; p50/p99 are per round, over all scrapers' scrapes)"
    return "\n".join(out), n, runs


def write_docs(path, block, section=SECTION, begin=BEGIN, end=END):
    """Puts block between the begin/end markers of FILE, or under section's heading (made at
    the end of the file when missing); the rest of the file is left as it is."""
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    generated = begin + "\n" + block.rstrip("\n") + "\n" + end
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: generated, text, flags=re.S)
    elif section in text:
        # The section exists without markers: put the block right under its heading.
        text = text.replace(section + "\n", section + "\n\n" + generated + "\n", 1)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n\n" + generated + "\n"
    with open(path, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "scrapes":
        scrapes(sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["table"])
    ap.add_argument("results")
    ap.add_argument("--docs")
    ap.add_argument("--command", default="")
    ap.add_argument("--notes", help="markdown file to put under the table (setup, machine)")
    ap.add_argument("--targets", choices=["base", "at-scale"], default="base")
    args = ap.parse_args()
    tbl, n, _ = table(args.results, args.targets)
    print(tbl)
    print()
    print(n)
    if args.docs:
        notes = open(args.notes).read() if args.notes else ""
        block = "%s\n\n%s\n\n%s" % (tbl, n + ".", notes)
        if args.targets == "at-scale":
            write_docs(args.docs, block, AT_SCALE_SECTION, AT_SCALE_BEGIN, AT_SCALE_END)
        else:
            write_docs(args.docs, block)


if __name__ == "__main__":
    main()
