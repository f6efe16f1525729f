#!/usr/bin/env python3
"""twin19: classify the bench launch's waits for a CPU in a `lag-probe.sh` trace.

For every wake-up of a launch (`ff-op-launch`, ops with at least 50 switch-ins) it finds the
switch-in that ends it (the wait), the task running on the target CPU at the wake-up and when
that task was switched in there (its pick), and what happened on the CPU the launch last left:
whether the next task to run there had just been migrated in (a newly idle CPU pulling a
worker: `sched_migrate_task` to that CPU between the launch's switch-out and the switch-in),
ran there already, or the CPU went idle.
Usage: lag-probe.py TRACE
"""
import re, sys, collections

SW = re.compile(r'\[(\d+)\]\s+\S+\s+([\d.]+): sched_switch: prev_comm=(.*?) prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
WK = re.compile(r'\[(\d+)\]\s+\S+\s+([\d.]+): sched_wakeup: comm=(.*?) pid=(\d+) .*?target_cpu=(\d+)')
MG = re.compile(r'\[(\d+)\]\s+\S+\s+([\d.]+): sched_migrate_task: comm=(.*?) pid=(\d+) .*?orig_cpu=(\d+) dest_cpu=(\d+)')

ev = []
comm = {}
for line in open(sys.argv[1]):
    if (m := SW.search(line)):
        cpu, t, pc, pp, st, nc, np_ = m.groups()
        comm[pp] = pc; comm[np_] = nc
        ev.append(('sw', float(t), int(cpu), pp, st, np_))
    elif (m := WK.search(line)):
        cpu, t, c, pid, tgt = m.groups()
        comm[pid] = c
        ev.append(('wk', float(t), int(cpu), pid, int(tgt)))
    elif (m := MG.search(line)):
        cpu, t, c, pid, o, d = m.groups()
        comm[pid] = c
        ev.append(('mg', float(t), int(cpu), pid, int(o), int(d)))
ev.sort(key=lambda e: e[1])
ins = collections.Counter(e[5] for e in ev if e[0] == 'sw')
ops = {p for p, n in ins.items() if comm.get(p, '').startswith('ff-op-launch') and n >= 50}

cur = {}            # cpu -> (pid, picked at)
last_mig = {}       # pid -> (t, dest)
left = {}           # launch pid -> (t, cpu) of its last blocking switch-out
after = {}          # launch pid -> what ran next on the CPU it left: 'pulled' / 'local' / 'idle'
pending = {}        # launch pid -> wake record
rows = []
for e in ev:
    if e[0] == 'mg':
        last_mig[e[3]] = (e[1], e[5])
    elif e[0] == 'wk':
        _, t, cpu, pid, tgt = e
        if pid in ops:
            run, picked = cur.get(tgt, ('0', t))
            pending[pid] = dict(pid=pid, t=t, tgt=tgt, run=comm.get(run, run), since_pick=(t - picked) * 1e6,
                                run_migrated=(run in last_mig and last_mig[run][1] == tgt and last_mig[run][0] >= picked - 50e-6
                                              and last_mig[run][0] <= t),
                                slept=(t - left[pid][0]) * 1e6 if pid in left else None,
                                same_cpu=(left[pid][1] == tgt) if pid in left else None,
                                after=after.get(pid))
    else:
        _, t, cpu, prev, st, nxt = e
        if prev in ops and st not in ('R', 'R+'):
            left[prev] = (t, cpu); after[prev] = None
        for lp, (lt, lc) in left.items():
            if after.get(lp) is None and lc == cpu and prev == lp and nxt != lp:
                if nxt == '0':
                    after[lp] = 'idle'
                else:
                    mg = last_mig.get(nxt)
                    after[lp] = 'pulled' if mg and mg[1] == cpu and lt - 200e-6 <= mg[0] <= t + 1e-9 else 'local'
        if nxt in ops and nxt in pending:
            w = pending.pop(nxt)
            w['wait'] = (t - w['t']) * 1e6
            rows.append(w)
        cur[cpu] = (nxt, t)

def summary(name, rs):
    if not rs:
        print(f"{name}: none"); return
    ws = sorted(r['wait'] for r in rs)
    print(f"{name}: {len(rs)}; wait p50 {ws[len(ws)//2]:.0f} us, p90 {ws[9*len(ws)//10]:.0f}, sum {sum(ws)/1e3:.1f} ms")

print(f"launches: {len(ops)}; wake-ups with a switch-in: {len(rows)}")
long_ = [r for r in rows if r['wait'] >= 1000]
short = [r for r in rows if r['wait'] < 1000]
summary('all', rows); summary('>= 1 ms', long_); summary('< 1 ms', short)
for key in ('after', 'same_cpu', 'run'):
    for name, rs in (('long', long_), ('short', short)):
        c = collections.Counter(str(r[key]) for r in rs)
        print(f"{key} ({name}): " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
for name, rs in (('long', long_), ('short', short)):
    sp = sorted(r['since_pick'] for r in rs)
    if sp:
        print(f"the running task's time since its pick at the wake-up ({name}): p10 {sp[len(sp)//10]:.0f}, p50 {sp[len(sp)//2]:.0f}, p90 {sp[9*len(sp)//10]:.0f} us;"
              f" within 200 us {sum(1 for x in sp if x <= 200)} of {len(sp)}")
    sl = sorted(r['slept'] for r in rs if r['slept'] is not None)
    if sl:
        print(f"the launch's sleep before the wake-up ({name}): p10 {sl[len(sl)//10]:.0f}, p50 {sl[len(sl)//2]:.0f}, p90 {sl[9*len(sl)//10]:.0f} us")
# the cross table: what ran after the launch left its CPU x whether the wait was long
tab = collections.Counter((r['after'], r['same_cpu'], r['wait'] >= 1000) for r in rows)
print("after the launch blocked, on the CPU it left / woken on that CPU / long wait: count")
for k, v in sorted(tab.items(), key=lambda kv: str(kv[0])):
    print(f"  {k[0]} / {k[1]} / {k[2]}: {v}")

# The launch's own history before each wake-up: its slices on a CPU (switch-in to switch-out)
# and, over its previous wake-ups, the time on a CPU against the time waited for one: the
# share EEVDF's lag keeps account of while the launch is queued.
hist = collections.defaultdict(list)   # pid -> [(t_in, t_out)]
state = {}
for e in ev:
    if e[0] != 'sw':
        continue
    _, t, cpu, prev, st, nxt = e
    if prev in ops and prev in state:
        hist[prev].append((state.pop(prev), t))
    if nxt in ops:
        state[nxt] = t
byop = collections.defaultdict(list)
for r in rows:
    byop[r['pid']].append(r)
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float('nan')
def windows(k, want_long):
    """For each wake-up whose wait is long (or short) after at least k others of its launch:
    the launch's time on a CPU over its k previous wake-ups (us) and those wake-ups."""
    for pid, rs in byop.items():
        sl = hist[pid]
        for i, r in enumerate(rs):
            if (r['wait'] >= 1000) != want_long or i < k:
                continue
            prev = rs[i - k:i]
            yield sum(b - a for a, b in sl if prev[0]['t'] <= a < r['t']) * 1e6, prev
for k in (1, 3, 10):
    out = {}
    for name, want in (('long', True), ('short', False)):
        ratios, slices = [], []
        for run, prev in windows(k, want):
            ratios.append(run - sum(p['wait'] for p in prev))
            slices.append(run / k)
        out[name] = (ratios, slices)
    print(f"over the {k} wake-up(s) before: time on a CPU minus time waited, p10/p50/p90 (us): "
          + "; ".join(f"{n} {pct(v[0], .1):.0f} / {pct(v[0], .5):.0f} / {pct(v[0], .9):.0f}" for n, v in out.items())
          + "  | mean slice: " + "; ".join(f"{n} p50 {pct(v[1], .5):.0f} us" for n, v in out.items()))

# The same balance as the kernel charges it (twin18: a wait that a preempting wake-up deferred
# to a system call's end is charged to the launch as runtime, a wait that spans a tick is not):
# the launch's charge over its last k wake-ups is its time on a CPU plus its waits under 1 ms,
# the running worker's the waits of 1 ms or more; EEVDF's lag falls by half the difference.
for k in (3, 10, 20):
    out = {}
    for name, want in (('long', True), ('short', False)):
        bal = []
        for run, prev in windows(k, want):
            short_w = sum(p['wait'] for p in prev if p['wait'] < 1000)
            long_w = sum(p['wait'] for p in prev if p['wait'] >= 1000)
            bal.append(run + short_w - long_w)
        out[name] = bal
    print(f"over the {k} wake-ups before, as charged: (on a CPU + waits < 1 ms) - waits >= 1 ms, p10/p50/p90 (us): "
          + "; ".join(f"{n} {pct(v, .1):.0f} / {pct(v, .5):.0f} / {pct(v, .9):.0f}" for n, v in out.items()))
