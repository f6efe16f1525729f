#!/usr/bin/env python3
"""Per start-up of a traced S-suite cell: BFQ's tag trims of its queues and its soft real-time
queues (issue 31, docs/agent.md "Soft real-time ghosts").

Reads the blk trace with BFQ's messages that `forefront trace capture --dev vda` writes around a
`scripts/ssuite cell ...` run. A start-up is a cluster of processes named `replay-startup-`
(the replayer and its threads; in agent modes the replayer's main pid first appears as
`forefront-exec`) whose first events lie within 1 s of each other. For each: its queues' "too
many requests" trims (bfq_limit_depth cutting a queue's tag depth to 1 when its allocated
requests reach nr_requests * weight / wsum) with the smallest limit seen, and how many of its
queues were raised to soft real-time (weight coefficient 3000: 100x an interactive queue's).

Usage: softrt-trims.py TRACE [RUNS_IN_ORDER...]   e.g. ... bfqmsg.txt bfq agent agent-pin agent agent-pin bfq ...
With the runs' mode names in time order (10 start-ups each, or --per N), prints a summary per mode.
Clusters of a single process (the suite's warm-up replay before each run) are left out.
"""
import collections
import re
import sys


def main():
    args = sys.argv[1:]
    per = 10
    if "--per" in args:
        i = args.index("--per")
        per = int(args[i + 1])
        del args[i : i + 2]
    trace, runs = args[0], args[1:]
    first = {}
    comms = collections.defaultdict(set)
    trims = collections.defaultdict(list)
    soft = set()
    trim_re = re.compile(r"bfq(\d+)[AS] too many requests: allocated (\d+) limit (\d+) level (\d+)")
    soft_re = re.compile(r"bfq(\d+)[AS] raising period .*old coeff 3000")
    with open(trace, errors="replace") as f:
        for line in f:
            x = line.split()
            if len(x) < 7:
                continue
            if x[5] == "m":
                m = trim_re.search(line)
                if m:
                    trims[m.group(1)].append(int(m.group(3)))
                    continue
                m = soft_re.search(line)
                if m:
                    soft.add(m.group(1))
                continue
            pid, t = x[4], float(x[3])
            c = x[-1] if x[-1].startswith("[") else x[-2]
            comms[pid].add(c)
            first.setdefault(pid, t)
    rp = sorted((first[p], p) for p in first if "[replay-startup-]" in comms[p])
    clusters = []
    for t, p in rp:
        if clusters and t - clusters[-1][-1][0] < 1.0:
            clusters[-1].append((t, p))
        else:
            clusters.append([(t, p)])
    clusters = [c for c in clusters if len(c) > 1]
    rows = []
    for c in clusters:
        pids = [p for _, p in c]
        lims = [l for p in pids for l in trims[p]]
        rows.append((c[0][0], len(pids), len(lims), min(lims) if lims else None, sum(p in soft for p in pids)))
    print(f"{len(rows)} start-ups in {trace}")
    print("start_s   queues trims min_limit softrt_queues")
    for r in rows:
        print(f"{r[0]:.3f} {r[1]:6d} {r[2]:5d} {str(r[3]):>9} {r[4]:13d}")
    if runs:
        by = collections.defaultdict(list)
        for k, r in enumerate(rows):
            if k // per < len(runs):
                by[runs[k // per]].append(r)
        print("mode: start-ups, trimmed, trims (median), smallest limit, start-ups with a soft real-time queue")
        for m, rs in by.items():
            tr = sorted(r[2] for r in rs)
            lim = [r[3] for r in rs if r[3] is not None]
            print(f"{m}: {len(rs)}, {sum(1 for r in rs if r[2])}, {tr[len(tr) // 2]}, {min(lim) if lim else '-'}, {sum(1 for r in rs if r[4])}")


if __name__ == "__main__":
    main()
