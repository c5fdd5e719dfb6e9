#!/usr/bin/env python3
"""Prints hack/test.sh's phase table: each phase's wall time, then where the test phase's time
went, per test group, from cargo-nextest's JUnit report.

    phase_table.py PHASES_TSV TOTAL_SECONDS [JUNIT_XML]

PHASES_TSV has one "name<TAB>seconds<TAB>exit code" line per phase. Test groups: unit tests per
crate, the fuzz corpus replay, and the end-to-end tests per area (the part of the test binary's
name before its first "_": ksm, adapter, craned, helm...). Tests run side by side, so a group's
wall time is from its first test's start to its last test's end, and the groups overlap.
"""
import sys
import xml.etree.ElementTree as ET
from datetime import datetime


def minutes(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


def group_of(suite):
    # nextest names a suite "<package>" for a library's unit tests and
    # "<package>::<binary>" for a test binary (or "<package>::bin/<name>").
    package, _, binary = suite.partition("::")
    if package == "ferrocrane-fuzz-targets":
        return "fuzz corpus replay"
    if package == "ferrocrane-e2e" and binary:
        return "e2e " + binary.split("_")[0]
    return "unit " + package.removeprefix("ferrocrane-")


def junit_groups(path):
    groups = {}
    slowest = []
    for suite in ET.parse(path).getroot().iter("testsuite"):
        group = groups.setdefault(group_of(suite.get("name", "")), {"tests": 0, "failed": 0, "sum": 0.0, "start": None, "end": None})
        for case in suite.iter("testcase"):
            seconds = float(case.get("time", "0"))
            group["tests"] += 1
            group["sum"] += seconds
            if case.find("failure") is not None or case.find("error") is not None:
                group["failed"] += 1
            stamp = case.get("timestamp")
            if stamp:
                start = datetime.fromisoformat(stamp).timestamp()
                group["start"] = start if group["start"] is None else min(group["start"], start)
                end = start + seconds
                group["end"] = end if group["end"] is None else max(group["end"], end)
            slowest.append((seconds, f"{suite.get('name')} {case.get('name')}"))
    return groups, sorted(slowest, reverse=True)[:10]


def main():
    phases_file, total = sys.argv[1], float(sys.argv[2])
    rows = [line.rstrip("\n").split("\t") for line in open(phases_file) if line.strip()]
    print()
    print("hack/test.sh phases (wall time, m:ss)")
    print(f"  {'phase':<44} {'time':>7}  result")
    for name, seconds, rc in rows:
        print(f"  {name:<44} {minutes(float(seconds)):>7}  {'ok' if rc == '0' else 'FAILED (exit ' + rc + ')'}")
    print(f"  {'total':<44} {minutes(total):>7}")
    if len(sys.argv) > 3:
        try:
            groups, slowest = junit_groups(sys.argv[3])
        except (OSError, ET.ParseError) as e:
            print(f"  (no test report: {e})")
            return
        print()
        print("test groups (side by side: wall = first start to last end; busy = sum of test times)")
        print(f"  {'group':<28} {'tests':>5} {'failed':>6} {'wall':>7} {'busy':>7}")
        for name, g in sorted(groups.items(), key=lambda kv: -(kv[1]["end"] or 0) + (kv[1]["start"] or 0)):
            wall = (g["end"] - g["start"]) if g["start"] is not None else g["sum"]
            print(f"  {name:<28} {g['tests']:>5} {g['failed']:>6} {minutes(wall):>7} {minutes(g['sum']):>7}")
        print()
        print("slowest tests")
        for seconds, name in slowest:
            print(f"  {minutes(seconds):>7}  {name}")


if __name__ == "__main__":
    main()
