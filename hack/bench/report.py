#!/usr/bin/env python3
"""Numbers for hack/bench/ksm.sh (Python 3 standard library only).

    report.py scrapes FILE...        curl -w lines "code seconds bytes encoding" -> one line:
                                     n bad p50_ms p99_ms median_bytes encodings
    report.py table RESULTS_DIR [--docs FILE --command CMD --notes FILE]
                                     medians over rounds -> a markdown table on stdout; with --docs,
                                     also into the "## ksm vs kube-state-metrics" section of FILE
                                     (between the generated-block markers, or a new section).
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
        runs.setdefault(kv["exporter"], []).append(kv)
    return runs


ROWS = [
    # key, label, format, target (ours/go at most)
    ("vmhwm_mib", "peak RSS (VmHWM), MiB", "%.1f", 1 / 3),
    ("vmhwm_synced_mib", "peak RSS up to the first complete scrape, MiB", "%.1f", None),
    ("vmhwm_after_plain_mib", "peak RSS up to the end of the plain scrapes, MiB", "%.1f", None),
    ("rss_synced_mib", "RSS after first complete scrape, MiB", "%.1f", None),
    ("start_s", "start → first complete scrape, s", "%.2f", None),
    ("plain_p50_ms", "/metrics p50, plain, ms", "%.1f", 1 / 2),
    ("plain_p99_ms", "/metrics p99, plain, ms", "%.1f", 1 / 2),
    ("gzip_p50_ms", "/metrics p50, gzip, ms", "%.1f", 1 / 2),
    ("gzip_p99_ms", "/metrics p99, gzip, ms", "%.1f", 1 / 2),
    ("plain_bytes", "bytes per scrape, plain", "%.0f", None),
    ("gzip_bytes", "bytes per scrape, gzip", "%.0f", None),
    ("plain_cpu_ms", "CPU per scrape, plain, ms", "%.1f", None),
    ("gzip_cpu_ms", "CPU per scrape, gzip, ms", "%.1f", None),
    ("metric_lines", "sample lines per scrape", "%.0f", None),
]


def med(runs, key):
    vals = [float(r[key]) for r in runs if r.get(key) not in (None, "", "nan")]
    return statistics.median(vals) if vals else None


def table(d):
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
    for key, label, fmt, target in ROWS:
        g, o = med(go, key), med(ours, key)
        gs = fmt % g if g is not None else "—"
        os_ = fmt % o if o is not None else "—"
        ratio = "%.2f" % (o / g) if g and o is not None else "—"
        tgt = ""
        if target is not None:
            tgt = "≤ %s" % ("1/3" if target < 0.4 else "1/2")
            if g and o is not None:
                tgt += " " + ("met" if o / g <= target else "**missed**")
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
    args = ap.parse_args()
    tbl, n, _ = table(args.results)
    print(tbl)
    print()
    print(n)
    if args.docs:
        notes = open(args.notes).read() if args.notes else ""
        block = "%s\n\n%s\n\n%s" % (tbl, n + ".", notes)
        write_docs(args.docs, block)


if __name__ == "__main__":
    main()
