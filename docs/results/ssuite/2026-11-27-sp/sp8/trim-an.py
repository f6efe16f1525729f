#!/usr/bin/env python3
"""From a blk-tracer capture: per replay-startup process (pid = thread that submitted), the BFQ 'too many requests'
messages for its queues (limit, level), and other BFQ messages about weight-raising for those pids."""
import re, sys, collections
path = sys.argv[1]
replay = set(); trims = collections.defaultdict(list); wr = collections.defaultdict(list)
for line in open(path, errors="replace"):
    m = re.search(r"\s(\d+)\s+[QGIDC]\s+\S+\s+\d+ \+ \d+ \[replay-startup", line)
    if m: replay.add(m[1])
    m = re.search(r"bfq(\d+)([SA]?) too many requests: allocated (\d+) limit (\d+) level (\d+)", line)
    if m: trims[m[1]].append((int(m[3]), int(m[4]), int(m[5])))
    m = re.search(r"bfq(\d+)[SA]? (wr_|weight|raising|interactive|new_ioprio)(.*)", line)
    if m and m[1] in replay: wr[m[1]].append(m[2] + m[3][:60])
print("replayer pids", len(replay))
for pid in sorted(set(trims) | set()):
    t = trims[pid]
    print(pid, "(replayer)" if pid in replay else "", len(t), "trims; limits", sorted(set(x[1] for x in t))[:8], "levels", sorted(set(x[2] for x in t)))
for pid in sorted(replay)[:6]:
    print(pid, wr[pid][:4])
