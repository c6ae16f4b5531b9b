#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The table of tests/fabrics/bench.sh: each way to the namespace (local,
tcp, loop) against local, medians over the rounds.

usage: report.py BENCH.CSV

Bandwidth (GB/s, ratios: the fabric's over local's, below 1 is slower)
for restore-mmap, restore-pread, restore-fault and raw fio; latency (us,
ratios: the fabric's over local's, above 1 is slower): per 4 KiB touch of
restore-fault (p50, p99; most touches hit pages readahead brought in) and
the module's major faults (mod_major p50/p99, bucket upper bounds from
debugfs latency) in restore-fault.
"""
import csv
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
ways = [w for w in ("local", "tcp", "loop")
        if any(r["system"] in ("kvtier-" + w, "raw-" + w) for r in rows)]


def med(system, workload, col):
    vals = []
    for r in rows:
        if r["system"] == system and r["workload"] == workload and r[col] not in ("", None):
            try:
                vals.append(float(r[col]))
            except ValueError:
                pass
    return statistics.median(vals) if vals else None


def fmt(v, nd=3):
    return "-" if v is None else ("%.*f" % (nd, v))


def ratio(a, b):
    return "-" if a is None or b is None or not b else "%.2fx" % (a / b)


head = "%-24s %-8s" % ("workload", "unit")
for w in ways:
    head += " %10s" % w
    if w != "local":
        head += " %9s" % (w + "/loc")
print(head)
print("-" * len(head))
lines = [
    ("restore-mmap", "kvtier", "gbps", "GB/s", 4),
    ("restore-pread", "kvtier", "gbps", "GB/s", 4),
    ("restore-fault", "kvtier", "gbps", "GB/s", 4),
    ("restore-fault", "kvtier", "p50_us", "p50 us", 1),
    ("restore-fault", "kvtier", "p99_us", "p99 us", 1),
    ("restore-fault", "kvtier", "mod_major_p50_us", "maj p50", 0),
    ("restore-fault", "kvtier", "mod_major_p99_us", "maj p99", 0),
    ("restore-pread", "kvtier", "p50_us", "p50 us", 0),
    ("fio-read-1M-qd16", "raw", "gbps", "GB/s", 4),
    ("fio-read-1M-qd1", "raw", "gbps", "GB/s", 4),
    ("fio-read-1M-qd1", "raw", "p50_us", "p50 us", 0),
]
for wl, kind, col, unit, nd in lines:
    line = "%-24s %-8s" % (wl if kind == "kvtier" else "raw " + wl, unit)
    base = med(kind + "-local", wl, col)
    for w in ways:
        v = med(kind + "-" + w, wl, col)
        line += " %10s" % fmt(v, nd)
        if w != "local":
            line += " %9s" % ratio(v, base)
    print(line)
n = {w: sum(1 for r in rows if r["system"] == "kvtier-" + w and r["workload"].startswith("restore"))
     for w in ways}
print("\nrestore rows per way: " + ", ".join("%s %d" % (w, n[w]) for w in ways) +
      "; medians; ratios are the fabric's over local's")
