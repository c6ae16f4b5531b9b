#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Side-by-side table and plots from the CSV tests/bench/guest.sh writes.
#
# usage: tests/bench/report.py RESULTS.csv OUTDIR
#        tests/bench/report.py --reuse RESULTS.csv
#        tests/bench/report.py --ab RESULTS.csv
#   --ab: the A/B table (tests/bench/ab-guest.sh's CSV): each kvtier row of
#   module A and B with its ratio to fio's best sequential 1 MiB read
#   (restore) or write (writeback) in the same boot, and B's mean over A's
#   the second: the reuse table (tests/bench/reuse-guest.sh's CSV): each
#   step's time, GB/s and its ratio to fio's 1 MiB sequential read at
#   iodepth 16 of the same bytes (the median of its runs; above 1: faster
#   than fio)
#   prints the comparison table (ratios: kvtier's value over the other
#   system's, so > 1 means kvtier is better for throughput, and for latency
#   the other system's p99 over kvtier's), the targets of issue 7, and the
#   scaling tables; writes OUTDIR/throughput.png and OUTDIR/cdf-*.png with
#   gnuplot when it is installed (data files OUTDIR/*.dat beside them).
import csv
import os
import shutil
import subprocess
import sys


# --- what a row cost the machine, and whether it measured a cold read --------
#
# kvbench and tests/bench/fio2csv.py both record, over the timed interval,
# the guest's CPU seconds on every CPU (cpu_s: kworkers and interrupts
# included) and the namespace's own counters (dev_*: MiB and requests each
# way, after merging; dev_queue_s: request time summed over requests). A
# row that reads a region back cold must have read at least the region
# from the device: one that read less found part of it in memory and is
# rejected (shown, never compared).
COLD = ("restore", "pread", "pread-uring", "restore-mmap", "restore-pread",
        "restore-fault")

# Each kvtier workload's raw-namespace shape in the same boot: restore
# touches 64 KiB at a time in order; pread and pwrite (with its fsync;
# pwrite-direct: O_DIRECT) move 4 MiB per call; pread-uring keeps 32 reads
# of 1 MiB in flight, pwrite-uring 32 writes (and ends with an fsync);
# write-back is judged against the best sequential write at depth.
SHAPE = {
    "restore": "fio-read-64k-qd1",
    "pread": "fio-read-4M-qd1",
    "pread-uring": "fio-read-1M-qd32",
    "pwrite": "fio-write-4M-qd1",
    "pwrite-direct": "fio-write-4M-qd1",
    "pwrite-uring": "fio-write-1M-qd32",
    "writeback": "fio-write-1M-qd32",
}


def num(r, k):
    try:
        return float(r[k])
    except (KeyError, TypeError, ValueError):
        return None


def warm(r):
    """Why a cold-read row is rejected, or None."""
    if r.get("workload") not in COLD or r.get("system") == "raw":
        return None
    got, size = num(r, "dev_read_mib"), num(r, "mib")
    if got is None or size is None:
        return None
    if got < size:
        return "read %.1f of its %.1f MiB from the device" % (got, size)
    return None


def cost(r):
    """CPU s per GB moved, mean read/write KiB per request, mean in flight."""
    gb = (num(r, "gbps") or 0) * (num(r, "seconds") or 0)
    cpu = num(r, "cpu_s")
    out = {"cpu_gb": cpu / gb if cpu is not None and gb else None}
    for d in ("read", "write"):
        mib, ios = num(r, "dev_%s_mib" % d), num(r, "dev_%s_ios" % d)
        out[d] = mib * 1024 / ios if mib is not None and ios else None
    q, secs = num(r, "dev_queue_s"), num(r, "seconds")
    out["qd"] = q / secs if q is not None and secs else None
    return out


def cost_lines(rows):
    """The cost table: one line per row that has the columns."""
    def f1(v, spec="%.3g"):
        return "-" if v is None else spec % v
    lines = ["", "what each row cost the guest (CPU s per GB moved, every CPU;"
             " the namespace's requests: mean KiB each way, mean in flight):",
             "  %-12s %-24s %8s %8s %9s %8s %9s %8s %6s  %s" % (
                 "system", "workload", "GB/s", "CPU s/GB", "read MiB",
                 "KiB/req", "write MiB", "KiB/req", "depth", "cold")]
    for r in rows:
        if not r.get("cpu_s") and not r.get("dev_read_mib"):
            continue
        c = cost(r)
        w = warm(r)
        cold = "-" if r["workload"] not in COLD or r["system"] == "raw" else \
            ("REJECTED: " + w if w else "yes")
        lines.append("  %-12s %-24s %8s %8s %9s %8s %9s %8s %6s  %s" % (
            r["system"][:12], r["workload"][:24], r["gbps"], f1(c["cpu_gb"]),
            r["dev_read_mib"] or "-", f1(c["read"], "%.0f"),
            r["dev_write_mib"] or "-", f1(c["write"], "%.0f"),
            f1(c["qd"], "%.1f"), cold))
    return lines


def shape_lines(rows, systems):
    """Each kvtier row against fio of its own shape, libaio and io_uring."""
    fio = {r["workload"]: r for r in rows if r["system"] == "raw"}
    lines = ["", "against fio of the same shape in this boot (GB/s ratio; CPU s"
             " per GB, kvtier's over fio's libaio):",
             "  %-12s %-14s %-14s %9s %9s %9s" % (
                 "system", "workload", "fio job", "vs libaio", "vs uring",
                 "CPU/GB")]
    for r in rows:
        base = SHAPE.get(r["workload"])
        if not base or not any(r["system"].startswith(s) for s in systems):
            continue
        g = num(r, "gbps")
        ratios = []
        for name in (base, base + "-uring"):
            b = num(fio.get(name, {}), "gbps")
            ratios.append("%.3fx" % (g / b) if g and b else "-")
        if warm(r):
            ratios = ["rejected", "rejected"]
        ca, cb = cost(r)["cpu_gb"], cost(fio.get(base, {}))["cpu_gb"]
        lines.append("  %-12s %-14s %-14s %9s %9s %9s" % (
            r["system"][:12], r["workload"], base[4:], ratios[0], ratios[1],
            "%.2fx" % (ca / cb) if ca and cb else "-"))
    return lines



def reuse_table(rows):
    """The reuse run: every row, then per restore method the mean of its
    rounds and its ratio to fio iodepth 16 (the median of fio's runs)."""
    fios = [r for r in rows if r["system"] == "raw"]
    q16 = sorted(num(r, "gbps") for r in fios
                 if r["workload"].endswith("-qd16") and num(r, "gbps"))
    q1 = [num(r, "gbps") for r in fios
          if r["workload"].endswith("-qd1") and num(r, "gbps")]
    bg = q16[len(q16) // 2] if q16 else None
    k = [r for r in rows if r["system"] == "kvtier-reuse"]
    if k:
        r0 = k[0]
        print("reuse: persistent region %s MiB (%s tokens of %s), %.2fx the host budget"
              % (r0["mib"], r0["ctx_tokens"], r0["model"], float(r0["ratio"])))
    hdr = "%-24s %8s %9s %9s %10s %7s %9s  %s" % (
        "step", "seconds", "GB/s", "vs fio16", "p99 us", "majflt", "read MiB",
        "note")
    print(hdr)
    print("-" * 100)
    for r in k + fios:
        g = num(r, "gbps")
        print("%-24s %8s %9s %9s %10s %7s %9s  %s" % (
            r["workload"], r["seconds"], "%.4g" % g if g else "-",
            "%.3fx" % (g / bg) if g and bg and "persist" not in r["workload"] else "-",
            r["p99_us"] or "-", r["majflt"] or "-", r["mod_read_mib"] or "-",
            r["note"]))
    if not bg:
        return
    print("")
    print("fio read 1M iodepth 16, same bytes: median of %d runs %.4g GB/s "
          "(%.4g to %.4g)%s" % (len(q16), bg, q16[0], q16[-1],
                                "; iodepth 1: %.4g GB/s" % q1[0] if q1 else ""))
    print("%-36s %6s %9s %9s %10s %10s" % (
        "restore (mean time of runs)", "runs", "seconds", "GB/s", "range GB/s", "vs fio16"))
    for w, what in (("restore-mmap", "(a) fadvise WILLNEED + touch (mmap)"),
                    ("restore-pread", "(b) pread 1 MiB chunks"),
                    ("restore-fault", "(c) touch only (fault path)")):
        rs = [r for r in k if r["workload"] == w]
        if not rs:
            continue
        t = sum(num(r, "seconds") for r in rs) / len(rs)
        gs = [num(r, "gbps") for r in rs]
        g = num(rs[0], "mib") * 2**20 / 1e9 / t
        print("%-36s %6d %9.3f %9.4g %4.3g-%-5.3g %9.3fx" % (
            what, len(rs), t, g, min(gs), max(gs), g / bg))


def ab_table(rows):
    """Module A against module B in one boot, each against fio."""
    fio = {r["workload"]: num(r, "gbps") for r in rows if r["system"] == "raw"}
    for name, g in sorted(fio.items()):
        print("%-22s %9.4g GB/s" % (name, g))
    # restore and writeback against fio's best; the explicit path (one call
    # at a time) against fio at iodepth 1.
    best = {"restore": max([g for n, g in fio.items() if "-read-" in n] or [0]),
            "writeback": max([g for n, g in fio.items() if "-write-" in n] or [0]),
            "pread": fio.get("fio-read-1M-qd1") or 0,
            "pwrite": fio.get("fio-write-1M-qd1") or 0,
            "pwrite-direct": fio.get("fio-write-1M-qd1") or 0,
            "pread-uring": fio.get("fio-read-1M-qd32") or 0,
            "pwrite-uring": fio.get("fio-write-1M-qd32") or 0}
    print("%-10s %-13s %9s %9s %9s %9s %9s %9s" % (
        "module", "workload", "GB/s", "vs fio", "p50 us", "p99 us",
        "majflt", "read MiB"))
    mean = {}
    for r in rows:
        if not r["system"].startswith("kvtier-"):
            continue
        m, w, g = r["system"][7:], r["workload"], num(r, "gbps")
        ref = best.get(w)
        print("%-10s %-13s %9.4g %8.3fx %9s %9s %9s %9s%s" % (
            m, w, g, g / ref if ref else 0, r["p50_us"], r["p99_us"],
            r["majflt"], r["mod_read_mib"],
            "  REJECTED: " + warm(r) if warm(r) else ""))
        if not warm(r):
            mean.setdefault((m, w), []).append(g)
    for w in ("restore", "writeback", "pwrite", "pwrite-direct", "pread",
              "pread-uring", "pwrite-uring"):
        a, b = mean.get(("A", w)), mean.get(("B", w))
        if a and b:
            ma, mb = sum(a) / len(a), sum(b) / len(b)
            ref = best[w]
            print("%-13s mean A %.4g GB/s (%.3fx fio), B %.4g GB/s (%.3fx fio): B/A %.2fx" % (
                w, ma, ma / ref if ref else 0, mb, mb / ref if ref else 0,
                mb / ma if ma else 0))
    print("\n".join(shape_lines(rows, ("kvtier-",)) + cost_lines(rows)))


if sys.argv[1] == "--ab":
    ab_table(list(csv.DictReader(open(sys.argv[2]))))
    sys.exit(0)

if sys.argv[1] == "--reuse":
    reuse_table(list(csv.DictReader(open(sys.argv[2]))))
    sys.exit(0)

res, outdir = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(res)))
SYSTEMS = ["kvtier", "swap", "pagecache"]


f = num


def key(r):
    return (r["workload"], r["model"], r["ratio"], r["nseq"])


by = {}
for r in rows:
    by[(r["system"],) + key(r)] = r
order = []
for r in rows:
    if r["system"] in SYSTEMS and key(r) not in order:
        order.append(key(r))
fio = {r["workload"]: r for r in rows if r["system"] == "raw"}


def label(k):
    w, model, ratio, nseq = k
    s = w
    if w in ("decode", "churn", "writeback", "restore"):
        s += " %sx" % ratio.rstrip("0").rstrip(".")
    if w in ("decode", "churn"):
        s += " n=%s" % nseq
    if model == "llama-70b":
        s += " 70B"
    return s


def metric(r):
    """(value, unit) of the headline throughput of a row; None for a
    rejected (warm) one."""
    if warm(r):
        return None, "GB/s"
    if r["workload"] in ("decode", "churn"):
        return f(r, "tokens_s"), "tok/s"
    if r["workload"].startswith("hot-"):
        return f(r, "mean_us"), "us/page"
    return f(r, "gbps"), "GB/s"


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    return "%.3g" % v


lines = []
hdr = "%-22s %-8s" % ("workload", "unit")
for s in SYSTEMS:
    hdr += " %9s %9s" % (s[:9], "p99 us")
hdr += " %8s %8s" % ("kvt/swap", "kvt/pc")
lines.append(hdr)
lines.append("-" * len(hdr))
for k in order:
    vals, unit = {}, ""
    line = ""
    for s in SYSTEMS:
        r = by.get((s,) + k)
        v, u = metric(r) if r else (None, unit)
        unit = u or unit
        vals[s] = v
        line += " %9s %9s" % (fmt(v), fmt(f(r, "p99_us")) if r else "-")
    rat = []
    for s in ("swap", "pagecache"):
        a, b = vals.get("kvtier"), vals.get(s)
        if a and b:
            # lower is better for a time per page
            rat.append("%.2fx" % (b / a if unit == "us/page" else a / b))
        else:
            rat.append("-")
    lines.append("%-22s %-8s%s %8s %8s" % (label(k), unit, line, rat[0], rat[1]))

lines.append("")
lines.append("raw device, fio --direct=1 (GB/s, p50/p99 completion latency us):")
for name in sorted(fio):
    r = fio[name]
    lines.append("  %-22s %8s GB/s  p50 %8s  p99 %8s" % (
        name[4:], fmt(f(r, "gbps")), fmt(f(r, "p50_us")), fmt(f(r, "p99_us"))))

lines += shape_lines(rows, ("kvtier",)) + cost_lines(rows)

# Issue 7's targets, measured.
lines.append("")
lines.append("targets (issue 7), measured in this run:")


def get(s, w, ratio=None, model="llama-3.1-8b"):
    for r in rows:
        if r["system"] == s and r["workload"] == w and r["model"] == model and \
                (ratio is None or abs(float(r["ratio"]) - ratio) < 1e-6):
            return r
    return None


def tgt(what, have, goal):
    if have is None:
        lines.append("  %-52s    n/a (goal %s)" % (what, goal))
    else:
        lines.append("  %-52s %6.2fx (goal %s)" % (what, have, goal))


def seqmax(rw):
    v = [f(fio[n], "gbps") for n in fio if n.startswith("fio-%s-1M" % rw)]
    v = [x for x in v if x]
    return max(v) if v else None


rr, sr = get("kvtier", "restore"), seqmax("read")
tgt("cold restore / raw sequential read (best 1M)",
    f(rr, "gbps") / sr if rr and sr else None, ">= 0.9x")
k2, s2, p2 = get("kvtier", "decode", 2), get("swap", "decode", 2), get("pagecache", "decode", 2)
tgt("decode 2x: kvtier / swap tokens/s",
    f(k2, "tokens_s") / f(s2, "tokens_s") if k2 and s2 else None, ">= 3x")
tgt("decode 2x: kvtier / page cache tokens/s",
    f(k2, "tokens_s") / f(p2, "tokens_s") if k2 and p2 else None, ">= 2x")
tgt("decode 2x: swap p99 / kvtier p99",
    f(s2, "p99_us") / f(k2, "p99_us") if k2 and s2 else None, "> 1x")
tgt("decode 2x: page cache p99 / kvtier p99",
    f(p2, "p99_us") / f(k2, "p99_us") if k2 and p2 else None, "> 1x")
wk, sw = get("kvtier", "writeback"), seqmax("write")
tgt("write-back / raw sequential write (best 1M)",
    f(wk, "gbps") / sw if wk and sw else None, ">= 0.9x")
km, af = get("kvtier", "hot-remap"), get("swap", "hot-first")
tgt("minor fault (elapsed/fault) / anon first touch (p50/page)",
    f(km, "us_per_fault") / f(af, "p50_us")
    if km and af and f(km, "us_per_fault") and f(af, "p50_us") else None,
    "<= 1.5x")
kh, ah = get("kvtier", "hot-mapped"), get("swap", "hot-mapped")
tgt("resident mapped page: kvtier / anon time per page",
    f(kh, "mean_us") / f(ah, "mean_us") if kh and ah and f(ah, "mean_us") else None,
    "~1x")

# Scaling (kvtier only).
sc = [r for r in rows if r["system"] == "kvtier-scale"]
if sc:
    lines.append("")
    lines.append("scaling, kvtier (budget fixed): cold restore by region size")
    lines.append("  %8s %8s %8s %9s %9s %10s %10s" % (
        "MiB", "GB/s", "s/GB", "majflt", "us/fault", "mod p50us", "mod p99us"))
    for r in sc:
        if r["workload"] != "restore":
            continue
        g = f(r, "gbps")
        lines.append("  %8s %8s %8s %9s %9s %10s %10s" % (
            r["mib"], fmt(g), fmt(1 / g if g else None), r["majflt"],
            r["us_per_fault"] or "-", r["mod_major_p50_us"] or "-",
            r["mod_major_p99_us"] or "-"))
    lines.append("scaling, kvtier: decode at 2x the budget by concurrent sequences")
    lines.append("  %8s %8s %8s %8s %8s %9s %9s %10s" % (
        "nseq", "ctx tok", "tok/s", "GB/s", "s/GB", "faults", "us/fault", "p99 us"))
    for r in sc:
        if r["workload"] != "decode":
            continue
        g = f(r, "gbps")
        nf = int(r["minflt"] or 0) + int(r["majflt"] or 0)
        lines.append("  %8s %8s %8s %8s %8s %9d %9s %10s" % (
            r["nseq"], r["ctx_tokens"], fmt(f(r, "tokens_s")), fmt(g),
            fmt(1 / g if g else None), nf, r["us_per_fault"] or "-",
            fmt(f(r, "p99_us"))))

print("\n".join(lines))

# --- plots ----------------------------------------------------------------------
gp = shutil.which("gnuplot")
if not gp:
    print("(gnuplot not installed: no plots)")
    sys.exit(0)

# Throughput (GB/s of KV touched) of decode against working set / budget.
with open(os.path.join(outdir, "throughput.dat"), "w") as d:
    for s in SYSTEMS:
        d.write("# %s\n" % s)
        for r in rows:
            if r["system"] == s and r["workload"] == "decode" and r["model"] == "llama-3.1-8b":
                d.write("%s %s\n" % (r["ratio"], r["gbps"]))
        d.write("\n\n")
ceil = seqmax("read") or 0
rnd = f(fio.get("fio-randread-4k-qd1", {}), "gbps") or 0
script = """
set terminal pngcairo size 720,440 font ',10'
set output '%(o)s/throughput.png'
set title 'decode scan (Llama-3.1-8B shape): KV touched per second vs working set'
set xlabel 'working set / host budget'
set ylabel 'GB/s (log)'
set logscale y
set logscale x 2
set key outside right
set grid
plot '%(o)s/throughput.dat' index 0 using 1:2 with linespoints lw 2 title 'kvtier', \\
     '' index 1 using 1:2 with linespoints lw 2 title 'swap (memcg)', \\
     '' index 2 using 1:2 with linespoints lw 2 title 'ext4 mmap (memcg)', \\
     %(c)g with lines dt 2 lw 2 title 'raw seq read 1M (fio)', \\
     %(r)g with lines dt 3 lw 2 title 'raw rand read 4k qd1 (fio)'
""" % {"o": outdir, "c": ceil, "r": rnd}

cdf = os.path.join(os.path.dirname(res), "vm", "cdf.txt")
if not os.path.exists(cdf):
    cdf = os.path.join(outdir, "vm", "cdf.txt")
if os.path.exists(cdf):
    pts = {}
    for line in open(cdf):
        p = line.split()
        if len(p) == 6:
            pts.setdefault((p[0], p[1], p[2], p[3]), []).append((float(p[5]), float(p[4])))
    for w, ratio, title in (("decode", "2.00", "decode scan at 2x budget, per layer x sequence access"),
                            ("restore", "0.50", "cold restore, per 64 KiB unit"),
                            ("hot-first", "0.25", "first touch, per 4 KiB page")):
        fn = os.path.join(outdir, "cdf-%s.dat" % w)
        plots = []
        with open(fn, "w") as d:
            idx = 0
            for s in SYSTEMS:
                ks = [k for k in pts if k[0] == s and k[1] == w and k[2] == ratio and
                      (w != "decode" or k[3] == "4")]
                if not ks:
                    continue
                d.write("# %s\n" % s)
                # 202 points per run; a key can hold several runs (the
                # 70B decode has the same ratio and nseq): the first is 8B.
                for lat, q in pts[ks[0]][:202]:
                    d.write("%g %g\n" % (max(lat, 0.01), q))
                d.write("\n\n")
                plots.append("'%s' index %d using 1:2 with lines lw 2 title '%s'" % (fn, idx, s))
                idx += 1
        if plots:
            script += """
set output '%s/cdf-%s.png'
set title '%s'
set xlabel 'latency, us (log)'
set ylabel 'fraction of accesses'
unset logscale y
set logscale x 10
set yrange [0:1]
plot %s
set yrange [*:*]
""" % (outdir, w, title, ", ".join(plots))
subprocess.run([gp], input=script, text=True, check=False)
