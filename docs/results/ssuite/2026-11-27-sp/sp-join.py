#!/usr/bin/env python3
"""Joins stall-probe2 lines (one per start-up process, in order) with the suite's times.txt."""
import sys, glob, re, statistics
d = sys.argv[1]
rows = []
for probe in sorted(glob.glob(f"{d}/probe-*.txt")):
    tag = probe.split("probe-")[1][:-4]          # mode-rN
    mode = tag.split("-")[0]
    times = [float(x) for x in open(glob.glob(f"{d}/{tag}/*/*/round0/times.txt")[0]).read().split()]
    lines = open(probe).read().splitlines()
    if len(lines) != len(times):
        print(f"{tag}: {len(lines)} processes, {len(times)} times: skipped"); continue
    for t, l in zip(times, lines):
        m = re.search(r"dirty (\d+) wb (\d+) inflight ([\d.]+)/([\d.]+)", l)
        tag_n = int((re.search(r"blk_mq_get_tag=(\d+)", l) or [0, 0])[1])
        dio = int((re.search(r"__iomap_dio_rw=(\d+)", l) or [0, 0])[1])
        ino = sum(int(x) for x in re.findall(r"(?:__ext4_get_inode_loc|ext4_read_bh|folio_wait_bit_common)=(\d+)", l))
        rows.append((mode, tag, t, tag_n, dio, ino, float(m[1]), float(m[2]), float(m[3]), float(m[4])))
print("mode tag time_s getTag_samples dio_samples meta_samples dirtyMiB wbMiB inflR inflW")
for r in sorted(rows, key=lambda r: (r[0], r[2])):
    print(" ".join(str(x) if not isinstance(x, float) else f"{x:.3f}" if i == 2 else f"{x:.1f}" for i, x in enumerate(r)))
for mode in sorted({r[0] for r in rows}):
    rs = [r for r in rows if r[0] == mode]
    slow = [r for r in rs if r[2] > 0.45]; fast = [r for r in rs if r[2] <= 0.45]
    f = lambda g, i: statistics.mean(r[i] for r in g) if g else float("nan")
    print(f"{mode}: n {len(rs)} median {statistics.median(r[2] for r in rs):.3f} s; slow (>0.45 s) {len(slow)}: tag {f(slow,3):.0f} dio {f(slow,4):.0f} meta {f(slow,5):.0f} dirty {f(slow,6):.0f} wb {f(slow,7):.0f}; fast {len(fast)}: tag {f(fast,3):.0f} dio {f(fast,4):.0f} meta {f(fast,5):.0f} dirty {f(fast,6):.0f} wb {f(fast,7):.0f}")
