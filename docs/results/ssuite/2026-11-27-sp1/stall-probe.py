#!/usr/bin/env python3
"""Where a start-up's threads wait (the diagnostic behind "A pause that holds while the start-up
waits for I/O" in docs/agent.md). Samples /proc/PID/task/TID/{stat,stack} of every process whose
comm starts with PREFIX every INTERVAL ms (default 2) until SIGTERM/SIGINT, then writes to OUT:
the share of samples per state (S-aio: asleep in io_getevents) and, for waiting threads (D, or
S-aio), the innermost kernel frame that is not the scheduler's, and the first four such frames.
Root only (/proc/PID/stack). Usage: stall-probe.py PREFIX OUT [INTERVAL_MS]"""
import os, sys, time, signal, collections

prefix, out = sys.argv[1], sys.argv[2]
interval = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.002
SKIP = ("__schedule", "schedule", "io_schedule", "schedule_timeout", "schedule_hrtimeout",
        "io_schedule_timeout", "schedule_preempt", "__cond_resched", "preempt_schedule",
        "do_syscall_64", "entry_SYSCALL", "__x64_sys", "__do_sys", "x64_sys_call",
        "hrtimer_nanosleep", "common_nsleep", "do_nanosleep", "wait_for_completion",
        "bit_wait_io", "__wait_on_bit", "out_of_line_wait_on_bit", "__flush_work")
stop = False
def handler(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, handler); signal.signal(signal.SIGINT, handler)

def read(p):
    try:
        with open(p) as f: return f.read()
    except OSError: return None

pids, last_scan = [], 0.0
states = collections.Counter(); frames = collections.Counter(); chains = collections.Counter()
samples = 0
while not stop:
    now = time.monotonic()
    if now - last_scan > 0.02:
        last_scan = now
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                c = read(f"/proc/{d}/comm")
                if c and c.startswith(prefix): pids.append(d)
    for pid in pids:
        try: tids = os.listdir(f"/proc/{pid}/task")
        except OSError: continue
        for tid in tids:
            st = read(f"/proc/{pid}/task/{tid}/stat")
            if not st: continue
            state = st[st.rfind(")") + 2]
            samples += 1
            stack = read(f"/proc/{pid}/task/{tid}/stack") or ""
            fns = [l.split("] ", 1)[-1].split("+")[0] for l in stack.splitlines()]
            waiting = state == "D" or (state == "S" and any("read_events" in f or "io_getevents" in f for f in fns))
            key = state if state != "S" else ("S-aio" if waiting else "S")
            states[key] += 1
            if waiting:
                inner = [f for f in fns if not f.startswith(SKIP)]
                frames[inner[0] if inner else "?"] += 1
                chains[" < ".join(inner[:4])] += 1
    time.sleep(interval)

with open(out, "w") as f:
    f.write(f"samples {samples}\n")
    for k, n in states.most_common(): f.write(f"state {k} {n} {100*n/max(samples,1):.1f}%\n")
    w = sum(frames.values())
    for k, n in frames.most_common(15): f.write(f"frame {n} {100*n/max(w,1):.1f}% {k}\n")
    for k, n in chains.most_common(15): f.write(f"chain {n} {k}\n")
