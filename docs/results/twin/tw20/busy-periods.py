#!/usr/bin/env python3
"""twin20: how the disk is busy in a bench cell, real or simulated.

Usage: busy-periods.py TRACE
  TRACE: a real block trace (`scripts/twin-probe OUTDIR --run forefront bench run ...` leaves
  OUTDIR/run/trace.txt) or a simulated one (`forefront bench predict ... --trace-out DIR`
  writes DIR/MODE.json).

Prints, for the background's large requests (>= 1 MiB): the device's busy periods (a run of
requests in flight back to back) by what they carried (R, W or both), with their MiB, length
and rate (MiB moved / length: the rate of the host's stage while busy); the gaps between busy
periods and the share of each launch's time the device was busy with the background; and the
launch's requests by what they met at the device: nothing (`alone`), background requests
already in flight (`A`), background requests arriving while it was in flight (`B`), or both.
A trace without foreground requests (the workers alone) gives the busy periods only.
Launches are the foreground requests' runs (the processes that moved < 256 MiB in a real
trace, `app:` in a simulated one), split at gaps of 0.5 s; the first is left out (warm-up).
"""
import bisect
import collections
import json
import re
import statistics
import sys

LINE = re.compile(r"\s(\d+\.\d+): (block_\w+): (\d+),(\d+) (\S+) .*?(\d+) \+ (\d+)")
CONTEXT = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\]")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def real(path):
    """Requests (issue, complete, bytes, 'R'/'W', foreground?) of a twin-probe trace."""
    queued, at_dev, moved, reqs = {}, {}, collections.Counter(), []
    with open(path) as f:
        for line in f:
            m, c = LINE.search(line), CONTEXT.search(line)
            if not m or not c:
                continue
            t, ev, _ma, _mi, rwbs, sector, n = m.groups()
            t, n = float(t), int(n)
            key = ("W" if "W" in rwbs else "R", int(sector))
            if ev == "block_bio_queue":
                pid = f"{c.group(1)}-{c.group(2)}"
                moved[pid] += n * 512
                queued[key] = pid
            elif ev == "block_rq_issue":
                at_dev[key] = (t, n, key[0], queued.pop(key, "?"))
            elif ev == "block_rq_complete" and key in at_dev:
                d, n0, rw, pid = at_dev.pop(key)
                reqs.append([d, t, n0 * 512, rw, pid])
    fg = {p for p, b in moved.items() if b < 256 * 2**20 and re.match(r"(ff|forefront)-", p)}
    return [(d, c, b, rw, pid in fg) for d, c, b, rw, pid in reqs]


def sim(path):
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    return [(e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6, e["args"]["bytes"], "W" if "W" in e["name"].split()[0] else "R",
             e["args"]["comm"].startswith("app:")) for e in ev if e.get("cat") == "device"]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    reqs = sorted(sim(path) if path.endswith(".json") else real(path))
    bg = [r for r in reqs if not r[4] and r[2] >= 2**20]
    fg = [r for r in reqs if r[4]]
    if not bg:
        sys.exit(f"{path}: no background requests of 1 MiB or more")
    busy = []
    for d, c, b, rw, _ in bg:
        if busy and d <= busy[-1][1]:
            busy[-1][1] = max(busy[-1][1], c)
            busy[-1][2][rw] += b
        else:
            busy.append([d, c, collections.Counter({rw: b})])
    print(f"{path}: {len(bg)} background requests >= 1 MiB, {len(busy)} busy periods")
    by = collections.defaultdict(list)
    for s, e, c in busy:
        by["+".join(sorted(c))].append((sum(c.values()) / 2**20, (e - s) * 1e3, sum(c.values()) / (e - s) / 1e6))
    for k, g in sorted(by.items()):
        mbs = [x[2] for x in g]
        print(f"  busy {k:3}: {len(g):5d}; MiB p50 {pct([x[0] for x in g], 50):5.1f}; ms p50 {pct([x[1] for x in g], 50):5.1f}; "
              f"MB/s p10/p50/p90 {pct(mbs, 10):5.0f}/{pct(mbs, 50):5.0f}/{pct(mbs, 90):5.0f}")
    if not fg:
        print("  no foreground requests (a trace of the workers alone)")
        return
    launches = []
    for d, c, *_ in fg:
        if launches and d - launches[-1][1] < 0.5:
            launches[-1][1] = max(launches[-1][1], c)
        else:
            launches.append([d, c])
    launches = launches[1:]
    gaps, frac = [], []
    for s, e in launches:
        inside = [x for x in busy if x[0] < e and x[1] > s]
        gaps += [(inside[i + 1][0] - inside[i][1]) * 1e3 for i in range(len(inside) - 1)]
        frac.append(sum(min(x[1], e) - max(x[0], s) for x in inside) / (e - s))
    print(f"  {len(launches)} launches, p50 {pct([(e - s) * 1e3 for s, e in launches], 50):.0f} ms; the background's busy share of "
          f"a launch p50 {pct(frac, 50):.2f}; gaps between busy periods p50/mean {pct(gaps, 50):.2f}/{statistics.mean(gaps):.2f} ms")
    starts = [r[0] for r in bg]
    met = collections.defaultdict(list)
    for d, c, b, rw, _ in fg:
        i = bisect.bisect_left(starts, d)
        a = any(x[1] > d for x in bg[max(0, i - 64):i])
        later = any(x[0] < c for x in bg[i:i + 64])
        size = "4K" if b <= 4096 else (">128K" if b > 131072 else "<=128K")
        met[(size, {(False, False): "alone", (True, False): "A", (False, True): "B", (True, True): "A+B"}[(a, later)])].append((c - d) * 1e6)
    n = len(launches) + 1
    for size in ("4K", "<=128K", ">128K"):
        row = [f"{k}: {len(met[(size, k)]) / n:5.1f}/launch, D->C p50 {pct(met[(size, k)], 50):6.0f} us" for k in ("alone", "A", "B", "A+B") if met[(size, k)]]
        print(f"  launch {size:>6}: " + "; ".join(row))


if __name__ == "__main__":
    main()
