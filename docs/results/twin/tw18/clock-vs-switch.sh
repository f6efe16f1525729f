#!/bin/sh
# twin18: the bench's copy cell (baseline, 3 runs) with sched_switch, sched_wakeup and
# sched_stat_runtime traced through tracefs; then, per launch, its time on a CPU (switch-in to
# switch-out), the runtime the scheduler charged it (sched_stat_runtime, what its CPU clock
# sums) and, slice by slice, the excess against the wait from its wake-up to its switch-in.
# Usage (root, alone): ff-quiet clock-vs-switch.sh FOREFRONT OUTDIR
set -e
FF=$1; OUT=$2; mkdir -p "$OUT"
T=/sys/kernel/tracing
[ -d $T/events/sched ] || mount -t tracefs nodev $T
old=$(cat $T/buffer_size_kb)
restore() { echo 0 > $T/tracing_on; for e in sched_switch sched_wakeup sched_stat_runtime; do echo 0 > $T/events/sched/$e/enable; done; echo > $T/trace; echo "$old" > $T/buffer_size_kb; }
trap restore EXIT INT TERM
echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb
for e in sched_switch sched_wakeup sched_stat_runtime; do echo 1 > $T/events/sched/$e/enable; done
echo 1 > $T/tracing_on
"$FF" bench run --fg launch --bg copy --runs 3 --mode baseline --format json > "$OUT/run.json" 2> "$OUT/run.err"
echo 0 > $T/tracing_on
cat $T/trace > "$OUT/trace.txt"
python3 - "$OUT/trace.txt" <<'PY'
import re, sys, collections
sw = re.compile(r'\[(\d+)\].*?\s([\d.]+): sched_switch: prev_comm=(.*?) prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
rt = re.compile(r'\[(\d+)\].*?\s([\d.]+): sched_stat_runtime: comm=(.*?) pid=(\d+) runtime=(\d+)')
wk = re.compile(r'\[(\d+)\].*?\s([\d.]+): sched_wakeup: comm=(.*?) pid=(\d+) ')
lines = open(sys.argv[1]).read().splitlines()
ops = sorted({m.group(7) for l in lines if (m := sw.search(l)) and m.group(6).startswith('ff-op')})
for op in ops:
    s = None; slices = []; woke = None
    for l in lines:
        if (m := sw.search(l)):
            cpu, t, pc, pp, st, nc, np_ = m.groups(); t = float(t)
            if pp == op and s: s['len'] = t - s['t0']; slices.append(s); s = None
            if np_ == op: s = {'t0': t, 'charged': 0.0, 'wait': (t - woke) if woke else 0.0}
        elif (m := rt.search(l)):
            if m.group(4) == op and s: s['charged'] += int(m.group(5)) / 1e9
        elif (m := wk.search(l)):
            if m.group(4) == op: woke = float(m.group(2))
    if len(slices) < 50: continue   # not a launch (a helper that only waited for its `go`)
    L = sum(x['len'] for x in slices); C = sum(x['charged'] for x in slices)
    short = [x for x in slices if x['wait'] < 1e-3]; long_ = [x for x in slices if x['wait'] >= 1e-3]
    ex = lambda xs: sum(x['charged'] - x['len'] for x in xs) * 1e3
    wt = lambda xs: sum(x['wait'] for x in xs) * 1e3
    print(f"launch {op}: {len(slices)} slices; on a CPU {L*1e3:.1f} ms, charged {C*1e3:.1f} ms; "
          f"waits under 1 ms: {len(short)}, {wt(short):.1f} ms waited, {ex(short):.1f} ms charged beyond the slices; "
          f"waits of 1 ms or more: {len(long_)}, {wt(long_):.1f} ms waited, {ex(long_):.1f} ms beyond")
PY
