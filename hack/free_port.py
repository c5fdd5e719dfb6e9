#!/usr/bin/env python3
"""The one source of TCP ports for servers the scripts, benches and e2e tests start on loopback.

    hack/free_port.py [COUNT]        prints COUNT ports (default 1), one per line

(hack/lib.sh's free_port, hack/bench/ and tests/src/ports.rs all ask this file.)

A port handed out here is
  - below the kernel's ephemeral range, so no outgoing connection can take it between this
    answer and the server's bind (ports from bind(":0") come from that range, and the adapter
    bench once lost its port to a connection that way);
  - in no socket of any state in /proc/net/tcp and tcp6;
  - not handed out to anyone else in the last RESERVE_SECONDS, across processes: reservations
    live in one file under a lock, so concurrent tests (cargo-nextest runs each in its own
    process) and scripts never get the same port.
"""
import fcntl
import json
import os
import random
import sys
import time

LOW = 20000
RESERVE_SECONDS = 600


def state_dir():
    cache = os.environ.get("FERROCRANE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ferrocrane")
    os.makedirs(cache, exist_ok=True)
    return cache


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def ports_in_use():
    used = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) > 2:
                        used.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return used


def free_ports(count=1):
    high = ephemeral_low()
    if high <= LOW + 500:
        raise SystemExit(f"error: the ephemeral port range starts at {high}; free_port.py needs ports from {LOW} up below it")
    path = os.path.join(state_dir(), "ports-given.json")
    with open(path + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path) as f:
                given = {int(p): t for p, t in json.load(f).items()}
        except (OSError, ValueError):
            given = {}
        now = time.time()
        given = {p: t for p, t in given.items() if t > now - RESERVE_SECONDS}
        in_use = ports_in_use()
        picked = []
        for _ in range(count):
            for _attempt in range(10000):
                p = random.randrange(LOW, high)
                if p not in given and p not in in_use:
                    break
            else:
                raise SystemExit(f"error: no free port between {LOW} and {high}")
            given[p] = now
            picked.append(p)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({str(p): t for p, t in given.items()}, f)
        os.replace(tmp, path)
    return picked


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    print("\n".join(str(p) for p in free_ports(n)))
