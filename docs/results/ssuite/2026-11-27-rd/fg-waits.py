#!/usr/bin/env python3
"""Per start-up of a traced S-suite cell: where its block requests waited (issue 31, docs/agent.md
"The readers' cell traced").

Reads the blkparse text that `forefront trace capture --dev vda` writes around a
`scripts/ssuite cell ...` run. A start-up is a cluster of processes named `replay-startup-` (in
agent modes the replayer's main pid first appears as `forefront-exec`) whose first events lie
within 1 s of each other; clusters of one process (the suite's warm-up replay) are left out.
A request is followed by its sector from Q (queued, with the issuing pid) to D (dispatched to
the driver) to C (completed). For each start-up:

  span       first Q to last C of its requests (s)
  reqs       its requests (Q events that reached a D; merged bios are not requests)
  sched_ms   the sum over its requests of Q->D (time in the I/O scheduler)
  dev_ms     the sum of D->C (time in the driver and the device)
  bg_in_dev  mean number of other processes' requests dispatched and not completed at each of
             its D events (what its requests queued behind in the device)
  bg_disp    other processes' requests dispatched between its first Q and its last C
  bg_mib     their size in MiB

Usage: fg-waits.py TRACE [RUNS_IN_ORDER...] [--per N]   (modes in time order, N start-ups each)
"""
import collections
import statistics
import sys


def main():
    args = sys.argv[1:]
    per = 10
    if "--per" in args:
        i = args.index("--per")
        per = int(args[i + 1])
        del args[i : i + 2]
    trace, runs = args[0], args[1:]
    comms = collections.defaultdict(set)
    first = {}
    queued = {}  # sector -> (pid, t_q)
    reqs = []  # [pid, t_q, t_d, t_c, sectors]
    by_sector = {}  # sector -> index in reqs of the request dispatched and not completed
    with open(trace, errors="replace") as f:
        for line in f:
            x = line.split()
            if len(x) < 8 or x[5] == "m" or not x[0][0].isdigit():
                continue
            try:
                t = float(x[3])
            except ValueError:
                continue
            pid, act = x[4], x[5]
            c = x[-1] if x[-1].startswith("[") else x[-2]
            if act == "Q":
                comms[pid].add(c)
                first.setdefault(pid, t)
                try:
                    sector, n = int(x[7]), int(x[9])
                except (ValueError, IndexError):
                    continue
                queued[sector] = (pid, t, n)
            elif act == "D":
                try:
                    sector = int(x[7])
                except ValueError:
                    continue
                q = queued.pop(sector, None)
                if q is None:
                    continue
                by_sector[sector] = len(reqs)
                reqs.append([q[0], q[1], t, None, int(x[9]) if len(x) > 9 and x[9].isdigit() else q[2]])
            elif act == "C":
                try:
                    sector = int(x[7])
                except ValueError:
                    continue
                k = by_sector.pop(sector, None)
                if k is not None:
                    reqs[k][3] = t
    fg_pids = {p for p in first if "[replay-startup-]" in comms[p]}
    rp = sorted((first[p], p) for p in fg_pids)
    clusters = []
    for t, p in rp:
        if clusters and t - clusters[-1][-1][0] < 1.0:
            clusters[-1].append((t, p))
        else:
            clusters.append([(t, p)])
    clusters = [set(p for _, p in c) for c in clusters if len(c) > 1]
    done = [r for r in reqs if r[3] is not None]
    # in-flight other requests at each D: sweep over D and C events
    events = sorted([(r[2], 1, k) for k, r in enumerate(done)] + [(r[3], -1, k) for k, r in enumerate(done)])
    inflight = set()
    behind = {}
    for t, kind, k in events:
        if kind == 1:
            behind[k] = inflight.copy()
            inflight.add(k)
        else:
            inflight.discard(k)
    rows = []
    for pids in clusters:
        mine = [k for k, r in enumerate(done) if r[0] in pids]
        if not mine:
            continue
        t0 = min(done[k][1] for k in mine)
        t1 = max(done[k][3] for k in mine)
        sched = sum(done[k][2] - done[k][1] for k in mine) * 1e3
        dev = sum(done[k][3] - done[k][2] for k in mine) * 1e3
        bgin = statistics.mean(sum(1 for j in behind[k] if done[j][0] not in pids) for k in mine)
        others = [r for r in done if r[0] not in pids and t0 <= r[2] <= t1]
        rows.append((t0, t1 - t0, len(mine), sched, dev, bgin, len(others), sum(r[4] for r in others) * 512 / 2**20))
    print(f"{len(rows)} start-ups in {trace}")
    print("start_s    span_s reqs sched_ms dev_ms bg_in_dev bg_disp bg_mib")
    for r in rows:
        print(f"{r[0]:.3f} {r[1]:7.3f} {r[2]:4d} {r[3]:8.1f} {r[4]:6.1f} {r[5]:9.2f} {r[6]:7d} {r[7]:6.1f}")
    if runs:
        by = collections.defaultdict(list)
        for k, r in enumerate(rows):
            if k // per < len(runs):
                by[runs[k // per]].append(r)
        print("mode: start-ups, medians of span_s, reqs, sched_ms, dev_ms, bg_in_dev, bg_disp, bg_mib")
        for m, rs in by.items():
            med = [statistics.median(r[i] for r in rs) for i in range(1, 8)]
            print(f"{m}: {len(rs)}, " + ", ".join(f"{v:.3f}" if i == 0 else f"{v:.1f}" for i, v in enumerate(med)))


if __name__ == "__main__":
    main()
