#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-compare-table.py DIR: the tables of scripts/bench-compare.sh from
# DIR/raw.csv (every run: kernel,tool,test,bytes,rep,value), DIR/reg.csv
# and DIR/nixl-*.csv.  Kept apart from the runs so a table can be
# re-rendered (bench-compare.sh --table DIR) and its verdict rule tested.
#
# The verdict of a row is decided on the paired ratios (ours / peer of the
# two runs of one repetition, adjacent in time, so under the same load):
#   parity      median ratio within +-10 % of 1.0
#   ahead       median above 1.10 and the lower quartile above 1.0
#   behind      median below 0.90 and the upper quartile below 1.0
#   unresolved  otherwise: the runs disagree more than the band, or
#               fewer than 3 repetitions lie outside it
# For latency the ratio is peer / ours, so above 1.0 always means ours is
# better.  stable@ is the number of repetitions after which the verdict of
# the first k repetitions equals the final one for every k: what this row
# needed.  A benchmark number is never a pass/fail test: the table reports.
import csv
import os
import statistics
import sys

BAND = 0.10

# (test, our side, peer side, label of the pair)
PAIRS = (
    ("ours16", "pt_l16", "--batch 16 vs perftest -l 16"),
    ("ours1", "pt_q1", "--batch 1 vs perftest -Q 1"),
    ("ours1", "pt", "--batch 1 vs perftest default"),
    ("ours16", "ucx", "default vs ucx_perftest"),
)
LAT_PAIRS = (
    ("ours", "pt", "write_lat vs ib_write_lat"),
    ("ours", "ucx", "write_lat vs ucp_put_lat"),
)


def quartiles(v):
    v = sorted(v)
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def verdict(ratios):
    if not ratios:
        return "n/a"
    m = statistics.median(ratios)
    lo, hi = quartiles(ratios)
    if abs(m - 1.0) <= BAND:
        return "parity"
    if len(ratios) < 3:     # no quartiles worth the name
        return "unresolved"
    if m > 1.0 + BAND and lo > 1.0:
        return "ahead"
    if m < 1.0 - BAND and hi < 1.0:
        return "behind"
    return "unresolved"


def stable_at(ratios):
    final = verdict(ratios)
    k = len(ratios)
    while k > 1 and verdict(ratios[:k - 1]) == final:
        k -= 1
    return k


def load(path):
    rows = list(csv.DictReader(open(path)))
    d = {}
    for r in rows:
        key = (r["tool"], r["test"], int(r["bytes"]))
        d.setdefault(key, {})[int(r["rep"])] = float(r["value"])
    return rows, d


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def side(d, tool, test, size):
    v = list(d.get((tool, test, size), {}).values())
    if not v:
        return None, "FAILED"
    return statistics.median(v), \
        f"{fmt(statistics.median(v))} ({fmt(min(v))}-{fmt(max(v))})"


def main():
    out = sys.argv[1]
    rows, d = load(os.path.join(out, "raw.csv"))
    if not rows:
        print("no runs in raw.csv")
        return 1
    kernel = rows[0]["kernel"]
    tools = {r["tool"] for r in rows}
    nrep = max(int(r["rep"]) for r in rows)
    print(f"Like for like on {kernel}: medians (range) of {nrep} "
          "interleaved repetitions, same boot")
    print("ratio: median of the per-repetition ratios [quartiles]; "
          "> 1.0 = ours better (bandwidth ours/peer, latency peer/ours)")
    print("verdict: parity within +-10 %; ahead/behind only when the "
          "quartiles agree; stable@: repetitions needed")
    hdr = (f"{'test':<9} {'bytes':>7}  {'pair':<30} {'ours':>20} "
           f"{'peer':>20} {'ratio [q1-q3]':>18} {'n':>2} {'stable@':>7}  "
           "verdict")
    print(hdr)
    print("-" * len(hdr))
    rows_out = []
    for test, sizes, pairs in (
            ("write_bw", (64, 4096, 65536, 1048576), PAIRS),
            ("read_bw", (64, 4096, 65536, 1048576), PAIRS),
            ("write_lat", (2, 4096), LAT_PAIRS)):
        lat = test.endswith("_lat")
        for s in sizes:
            for ours, peer, label in pairs:
                if peer not in tools or ours not in tools:
                    continue
                # bench-compare.sh runs -Q 1 only up to 4 KiB
                if peer == "pt_q1" and s > 4096:
                    continue
                a = d.get((ours, test, s), {})
                b = d.get((peer, test, s), {})
                if not a and not b:
                    continue
                _, fa = side(d, ours, test, s)
                _, fb = side(d, peer, test, s)
                reps = sorted(set(a) & set(b))
                ratios = [(b[k] / a[k] if lat else a[k] / b[k])
                          for k in reps if a[k] > 0 and b[k] > 0]
                if ratios:
                    m = statistics.median(ratios)
                    lo, hi = quartiles(ratios)
                    fr = f"{m:.2f} [{lo:.2f}-{hi:.2f}]"
                    st = str(stable_at(ratios))
                else:
                    fr, st = "n/a", "-"
                v = verdict(ratios)
                rows_out.append((test, s, label, v))
                print(f"{test:<9} {s:>7}  {label:<30} {fa:>20} {fb:>20} "
                      f"{fr:>18} {len(ratios):>2} {st:>7}  {v}")
    print("units: bandwidth MiB/s (2^20 B/s, all three tools), latency "
          "usec (t_typical / 50th percentile, half the round trip)")
    cmds = os.path.join(out, "commands.txt")
    if os.path.exists(cmds):
        print()
        print("Exact command lines: SIZE as in the row; N = 4096 (64 B), "
              "2048 (4 KiB), 256 (64 KiB), 32 (1 MiB), 1000 (latency);")
        print("PORT new for every run; server on one CPU, client on the "
              "other:")
        for line in open(cmds):
            print("  " + line.rstrip())
    vers = os.path.join(out, "versions.txt")
    if os.path.exists(vers):
        for line in open(vers):
            print("  " + line.rstrip())
    counts = {}
    for r in rows_out:
        counts[r[3]] = counts.get(r[3], 0) + 1
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in
                                   sorted(counts.items())))

    reg = os.path.join(out, "reg.csv")
    if os.path.exists(reg):
        print()
        print("registration: raw ibv_reg_mr+ibv_dereg_mr vs cache hit "
              "(median usec)")
        try:
            print(f"{'bytes':>10} {'raw':>10} {'hit':>8} {'miss':>10} "
                  f"{'raw/hit':>8}  ODP")
            for r in csv.DictReader(open(reg)):
                odp = r.get("odp_reg_usec") or "n/a"
                print(f"{int(r['bytes']):>10} "
                      f"{float(r['raw_reg_usec']):>10.1f} "
                      f"{float(r['cache_hit_usec']):>8.2f} "
                      f"{float(r['cache_miss_usec']):>10.1f} "
                      f"{float(r['speedup']):>8.0f}  {odp}")
        except (KeyError, ValueError) as e:
            print("  (no reg table:", e, ")")
        regtxt = os.path.join(out, "reg.txt")
        if os.path.exists(regtxt):
            for line in open(regtxt):
                if line.startswith("# ODP"):
                    print(line.rstrip())
    total = os.environ.get("RC_NIXL_TOTAL", "")
    nixl = [(n, lab) for n, lab in
            (("seed", f"{total} in 128 chunks"),
             ("small", "8M in 2048 x 4 KiB"))
            if os.path.exists(os.path.join(out, f"nixl-{n}.csv"))]
    if nixl:
        print()
        print("nixl scenario: registration share of each iteration, cache "
              "off (problem) vs on (cure)")
        print(f"{'scenario':<28} {'cache':<6} {'phase':<7} {'reg ms':>9} "
              f"{'xfer ms':>10} {'reg share %':>12}")
        for name, label in nixl:
            p = os.path.join(out, f"nixl-{name}.csv")
            if not os.path.getsize(p):
                print(f"{label:<28} FAILED")
                continue
            for r in csv.reader(open(p)):
                print(f"{label:<28} {r[0]:<6} {r[1]:<7} "
                      f"{float(r[5]):>9.2f} {float(r[6]):>10.2f} "
                      f"{float(r[7]):>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
