#!/usr/bin/env python3
"""For the start-ups of a traced S-suite cell (10 start-ups per run; the runs' modes in time
order as arguments, rd1's by default) whose requests waited more than 30 ms in all in the I/O
scheduler: which BFQ queue was in service (its last `set_in_service_queue` message) when each
request that waited over 4 ms was queued, with the process that owns it (issue 31, docs/agent.md
"The readers' cell traced"). Usage: inservice.py TRACE [RUNS_IN_ORDER...]
"""
import collections, re, sys
trace = sys.argv[1]
comm = {}
first = {}
events = []  # (t, kind, data)
svc_re = re.compile(r"bfq(\d+)([AS]) set_in_service_queue")
exp_re = re.compile(r"bfq(\d+)([AS]) expire \((\d+), slow (\d+)")
queued = {}
waits = []  # (pid, tq, td)
with open(trace, errors="replace") as f:
    for line in f:
        x = line.split()
        if len(x) < 7 or not x[0][0].isdigit():
            continue
        try: t = float(x[3])
        except ValueError: continue
        if x[5] == "m":
            m = svc_re.search(line)
            if m: events.append((t, "svc", m.group(1) + m.group(2))); continue
            m = exp_re.search(line)
            if m: events.append((t, "exp", m.group(1) + m.group(2) + " reason " + m.group(3))); continue
            continue
        pid, act = x[4], x[5]
        c = x[-1] if x[-1].startswith("[") else x[-2]
        if act == "Q":
            comm.setdefault(pid, c); first.setdefault(pid, t)
            try: queued[int(x[7])] = (pid, t)
            except: pass
        elif act == "D":
            try: s = int(x[7])
            except: continue
            q = queued.pop(s, None)
            if q: waits.append((q[0], q[1], t))
fg = {p for p in comm if comm[p] == "[replay-startup-]"}
# clusters as in fg-waits.py
rp = sorted((first[p], p) for p in fg)
cl = []
for t, p in rp:
    if cl and t - cl[-1][-1][0] < 1.0: cl[-1].append((t, p))
    else: cl.append([(t, p)])
cl = [set(p for _, p in c) for c in cl if len(c) > 1]
modes = sys.argv[2:] or ["bfq", "agent", "agent-strict", "agent", "agent-strict", "bfq"]
events.sort()
import bisect
ets = [e[0] for e in events]
for k, pids in enumerate(cl):
    m = modes[k // 10] if k // 10 < len(modes) else "?"
    long = [(p, tq, td) for p, tq, td in waits if p in pids and td - tq > 0.004]
    tot = sum(td - tq for _, tq, td in long) * 1e3
    if tot < 30: continue
    svc = collections.Counter()
    for p, tq, td in long:
        i = bisect.bisect_right(ets, tq) - 1
        # the in-service queue at tq (last svc event before) and any set during the wait
        j = i
        while j >= 0 and events[j][1] != "svc": j -= 1
        cur = events[j][2] if j >= 0 else "?"
        svc[cur] += td - tq
    top = ", ".join(f"{q} {comm.get(q[:-1], '?')} {'FG' if q[:-1] in pids else ''} {v*1e3:.0f} ms" for q, v in svc.most_common(4))
    print(f"start-up {k} ({m}): {len(long)} requests waited > 4 ms, {tot:.0f} ms; in service when they were queued: {top}")
