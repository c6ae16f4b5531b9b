#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# fio's JSON output as rows of kvbench's CSV, so that a raw-device baseline
# and a kvtier row sit in one table with the same columns.
#
# usage: tests/bench/fio2csv.py [--system NAME] [--snaps DIR] CSV JSON NOTE
#                               [JSON NOTE ...]
#   appends one row per fio job of each JSON to CSV, whose first line is
#   kvbench's header. system is NAME (raw); workload is the job's name;
#   the note is the engine, block size and iodepth, then NOTE. With
#   --snaps, DIR/<job>.pre and DIR/<job>.post (tests/bench/snap.sh, run as
#   the job's exec_prerun and exec_postrun) give cpu_s and the dev_*
#   columns, measured as kvbench measures its own runs.
import argparse
import json
import os
import sys


def snap(path):
    """CPU ticks (non-idle, all CPUs) and the device's stat fields."""
    with open(path) as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
        dev = [int(x) for x in f.readline().split()]
    # user nice system idle iowait irq softirq steal ...
    return sum(cpu[i] for i in (0, 1, 2, 5, 6, 7)), dev


def sys_cols(snaps, job):
    if not snaps:
        return {}
    pre = os.path.join(snaps, job + ".pre")
    post = os.path.join(snaps, job + ".post")
    if not (os.path.exists(pre) and os.path.exists(post)):
        return {}
    (c0, d0), (c1, d1) = snap(pre), snap(post)
    d = [b - a for a, b in zip(d0, d1)]
    return {
        "cpu_s": "%.2f" % ((c1 - c0) / os.sysconf("SC_CLK_TCK")),
        "dev_read_mib": "%.1f" % (d[2] * 512 / 2**20),
        "dev_read_ios": str(d[0]),
        "dev_write_mib": "%.1f" % (d[6] * 512 / 2**20),
        "dev_write_ios": str(d[4]),
        "dev_queue_s": "%.3f" % (d[10] / 1000),
    }


def rows(fn, note, system, snaps):
    data = json.load(open(fn))
    glob = data.get("global options", {})
    for job in data["jobs"]:
        opts = dict(glob, **job.get("job options", {}))
        j = job["write"] if job["write"]["io_bytes"] else job["read"]
        p = j["clat_ns"].get("percentile", {})

        def pc(k):
            return "%.1f" % (p[k] / 1000) if k in p else ""
        secs = j["runtime"] / 1000
        r = {
            "system": system, "workload": job["jobname"], "nseq": "1",
            "mib": "%.1f" % (j["io_bytes"] / 2**20), "seconds": "%.3f" % secs,
            "gbps": "%.4f" % (j["io_bytes"] / secs / 1e9 if secs else 0),
            "units": str(j["total_ios"]), "p50_us": pc("50.000000"),
            "p99_us": pc("99.000000"), "p999_us": pc("99.900000"),
            "mean_us": "%.2f" % (j["clat_ns"]["mean"] / 1000),
            "note": "; ".join(x for x in (
                "fio --direct=1 %s bs=%s iodepth=%s" % (
                    opts.get("ioengine", "psync"), opts.get("bs", "4k"),
                    opts.get("iodepth", "1")), note) if x),
        }
        r.update(sys_cols(snaps, job["jobname"]))
        yield r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default="raw")
    ap.add_argument("--snaps")
    ap.add_argument("csv")
    ap.add_argument("pairs", nargs="+", help="JSON NOTE ...")
    a = ap.parse_args()
    if len(a.pairs) % 2:
        ap.error("JSON and NOTE come in pairs")
    with open(a.csv) as f:
        cols = f.readline().strip().split(",")
    out = []
    for fn, note in zip(a.pairs[0::2], a.pairs[1::2]):
        for r in rows(fn, note, a.system, a.snaps):
            out.append(",".join(r.get(c, "") for c in cols))
    with open(a.csv, "a") as f:
        for line in out:
            f.write(line + "\n")
            r = dict(zip(cols, line.split(",")))
            print("  %-24s %8s GB/s  cpu %5s s  device: read %s MiB in %s,"
                  " wrote %s MiB in %s, %s s in flight" % (
                      r["workload"], r["gbps"], r["cpu_s"] or "-",
                      r["dev_read_mib"] or "-", r["dev_read_ios"] or "-",
                      r["dev_write_mib"] or "-", r["dev_write_ios"] or "-",
                      r["dev_queue_s"] or "-"), file=sys.stderr)


if __name__ == "__main__":
    main()
