#!/usr/bin/env python3
"""Per mode over a probe run directory: start-ups, median, slow (> 0.45 s) count, mean get-tag samples in slow/fast,
and the scheduler's tags (mean busy; share of samples with the pool full)."""
import sys, glob, re, statistics
d = sys.argv[1]
by = {}
for probe in sorted(glob.glob(f"{d}/probe-*.txt")):
    tag = probe.split("probe-")[1][:-4]; mode = tag.rsplit("-r", 1)[0]
    times = [float(x) for x in open(glob.glob(f"{d}/{tag}/*/*/round0/times.txt")[0]).read().split()]
    lines = open(probe).read().splitlines()
    if len(lines) > len(times):  # the suite's own check of the replayer before its start-ups (a few ms)
        lines = [l for l in lines if int(re.search(r"life (\d+)ms", l)[1]) >= 50]
    if len(lines) != len(times): print(f"{tag}: {len(lines)} vs {len(times)}"); continue
    for t, l in zip(times, lines):
        g = lambda k: int((re.search(k + r"=(\d+)", l) or [0, 0])[1])
        st = re.search(r"schedtags (\d+) full (\d+)%", l)
        by.setdefault(mode, []).append((t, g("blk_mq_get_tag"), g("__bio_queue_enter"), int(st[1]) if st else -1, int(st[2]) if st else -1))
for mode, rs in by.items():
    slow = [r for r in rs if r[0] > 0.45]; fast = [r for r in rs if r[0] <= 0.45]
    m = lambda g, i: statistics.mean(r[i] for r in g) if g else float("nan")
    print(f"{mode}: {len(rs)} start-ups, median {statistics.median(r[0] for r in rs):.3f} s, slow {len(slow)} "
          f"(get-tag samples {m(slow,1):.0f} vs {m(fast,1):.0f} in the fast; queue-frozen samples {m(rs,2):.0f}); "
          f"scheduler tags busy {m(rs,3):.0f} on average, pool full in {max(r[4] for r in rs)} % of samples at most")
