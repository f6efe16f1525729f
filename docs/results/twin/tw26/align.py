# twin26: a bench run's timeline beside mon2.py's log: for each sample, its mode, window rate,
# launch time, and the reporting passes from its drop to its end (ms after the drop, MiB), and
# MemFree at the drop and at the operation's start.
import json, sys
b = json.load(open(sys.argv[1])); log = [l.split() for l in open(sys.argv[2])]
rows = [(int(l[0]), int(l[2]), int(l[4]), int(l[6])) for l in log]  # unix ms, rep MiB, passes, free MiB
t0 = b["timeline_start_unix_ms"]
def at(ms):
    u = t0 + ms
    return min(rows, key=lambda r: abs(r[0] - u))
# passes: (unix ms of first report, MiB) grouping increments of `rep` less than 500 ms apart
passes = []; prev = rows[0]
for r in rows[1:]:
    if r[1] > prev[1]:
        if passes and r[0] - passes[-1][2] < 500: passes[-1][1] += r[1] - prev[1]; passes[-1][2] = r[0]
        else: passes.append([r[0], r[1] - prev[1], r[0]])
    prev = r
idx = {}
for t in b["timeline"]:
    m = t["mode"]; k = idx.get((m, t.get("warmup", False)), 0); idx[(m, t.get("warmup", False))] = k + 1
    mode = b["modes"][m]
    w = mode.get("bg_window_samples_mb_s", [])
    rate = "" if t.get("warmup") or not w else f"{w[k]:6.0f}"
    fg = "" if t.get("warmup") else f"{mode['samples_ms'][k]:6.0f}"
    d = t["dropped_ms"] or t["window_ms"]
    ps = [f"{p[0]-(t0+d):+.0f}:{p[1]}" for p in passes if t0 + d - 2500 <= p[0] <= t0 + t["end_ms"]]
    print(f"{d:9.0f} {m:9s}{' w' if t.get('warmup') else '  '} win {rate:>6} fg {fg:>6} end +{t['end_ms']-d:5.0f} free@drop {at(d)[3]:6d} free@op {at(t['op_ms'])[3]:6d} passes(ms after drop:MiB) {' '.join(ps)}")
