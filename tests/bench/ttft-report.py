#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The TTFT benchmark's table and plots (tests/bench/ttft-guest.sh's CSVs).

usage: tests/bench/ttft-report.py DIR
  reads DIR/ttft.csv (python/tests/reuse_tool.py restore rows) and
  DIR/fio.csv; prints per model and prompt length the time to first token
  by recompute and by restore, their ratio, what the restore read and how
  long, and that read against fio reading the same slots of the raw
  namespace (at one region per request, iodepth 1, as the store reads,
  and 128 KiB at iodepth 16); then a text plot of the speedup; writes
  DIR/ttft.png (and DIR/ttft.dat) with gnuplot when it is installed.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys


def main(d: str) -> int:
    rows = list(csv.DictReader(open(os.path.join(d, "ttft.csv"))))
    fio: dict[tuple[str, str, str], float] = {}
    fio_path = os.path.join(d, "fio.csv")
    if os.path.exists(fio_path):
        for r in csv.DictReader(open(fio_path)):
            kind = "qd1" if r["iodepth"] == "1" else "qd16"
            fio[(r["model"], r["tokens"], kind)] = float(r["seconds"])
    head = ("model", "tokens", "blocks", "KV MiB", "recompute s",
            "restore s", "speedup", "read s", "read MB/s", "fio qd1 s",
            "read/fio1", "fio 128k qd16")
    print("TTFT: recompute vs restore from kvtier (one boot; ratios > 1: "
          "restore is faster)")
    fmt = "%-6s %6s %6s %7s %11s %9s %7s %7s %9s %9s %9s %13s"
    print(fmt % head)
    for r in rows:
        read_s = float(r["restore_s"])
        f1 = fio.get((r["model"], r["tokens"], "qd1"))
        f16 = fio.get((r["model"], r["tokens"], "qd16"))
        mbps = int(r["read_bytes"]) / read_s / 1e6 if read_s else 0
        print(fmt % (r["model"], r["tokens"], r["blocks"],
                     "%.2f" % (int(r["kv_bytes"]) / 2**20),
                     "%.3f" % float(r["ttft_recompute_s"]),
                     "%.3f" % float(r["ttft_restore_s"]),
                     "%.2fx" % float(r["speedup"]), "%.3f" % read_s,
                     "%.1f" % mbps, "%.3f" % f1 if f1 else "-",
                     "%.1fx" % (read_s / f1) if f1 else "-",
                     "%.3f" % f16 if f16 else "-"))
    print()
    print("speedup (recompute / restore time to first token)")
    top = max((float(r["speedup"]) for r in rows), default=1.0) or 1.0
    for r in rows:
        s = float(r["speedup"])
        bar = "#" * max(1, round(40 * s / top))
        print("  %-5s %5s  %-40s %.2fx" % (r["model"], r["tokens"], bar, s))

    if not shutil.which("gnuplot"):
        print("(gnuplot not installed: no plot)")
        return 0
    models = sorted({r["model"] for r in rows})
    dat = os.path.join(d, "ttft.dat")
    with open(dat, "w") as f:
        for m in models:
            f.write("# %s: tokens recompute_s restore_s\n" % m)
            for r in rows:
                if r["model"] == m:
                    f.write("%s %s %s\n" % (r["tokens"], r["ttft_recompute_s"],
                                            r["ttft_restore_s"]))
            f.write("\n\n")
    plots = []
    for i, m in enumerate(models):
        plots.append("'%s' index %d using 1:2 with linespoints lw 2 "
                     "title '%s: recompute'" % (dat, i, m))
        plots.append("'' index %d using 1:3 with linespoints lw 2 dt 2 "
                     "title '%s: restore from kvtier'" % (i, m))
    script = """
set terminal pngcairo size 720,440 font ',10'
set output '%s'
set title 'time to first token: recompute vs restore of the prompt KV (TCG VM)'
set xlabel 'prompt tokens'
set ylabel 'seconds (log)'
set logscale xy 2
set key top left
set grid
plot %s
""" % (os.path.join(d, "ttft.png"), ", \\\n     ".join(plots))
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    print("plot: %s" % os.path.join(d, "ttft.png"))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__ or "")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
