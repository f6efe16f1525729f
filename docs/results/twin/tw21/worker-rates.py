#!/usr/bin/env python3
"""twin21: each bench worker's write()/read() rate over its life, in 250 ms steps, from a
worker-sampler.py log (its /proc/PID/io wchar every ~5 ms).

Usage: worker-rates.py SAMPLES.txt   (worker-sampler.py OUT.txt runs beside `forefront bench run`)
"""
import sys

rows = [l.split() for l in open(sys.argv[1])]
seen, order = {}, []
for r in rows:
    t = float(r[0])
    for x in r[3:]:
        pid, name, wchar, _rchar = x.rsplit(":", 3)
        if "worker" not in name:
            continue
        if pid not in seen:
            order.append(pid)
        seen.setdefault(pid, []).append((t, int(wchar)))
for pid in order:
    s = seen[pid]
    t0 = s[0][0]

    def at(dt):
        for t, w in s:
            if t - t0 >= dt:
                return w
        return s[-1][1]

    life = s[-1][0] - t0
    rates = [(at(k * 0.25 + 0.25) - at(k * 0.25)) / 0.25 / 1e6 for k in range(int(life / 0.25))]
    print(f"worker {pid}: life {life:.2f} s, mean {s[-1][1] / 1e6 / life:.0f} MB/s; MB/s per 250 ms: {' '.join(f'{r:.0f}' for r in rates)}")
