#!/usr/bin/env python3
"""Per start-up: where each process whose comm starts with PREFIX waits. Samples
/proc/PID/task/TID/{stat,stack} every INTERVAL ms until SIGTERM/SIGINT; every 20 ms also the
machine's Dirty/Writeback (/proc/meminfo) and the disk's in-flight requests
(/sys/block/DEV/inflight). Writes one line per process (tgid), in order of first sight:
first-seen time, life, samples per state, waiting samples per innermost frame, and the mean
Dirty, Writeback (MiB) and in-flight reads/writes over its life.
Usage: stall-probe2.py PREFIX OUT [INTERVAL_MS] [DEV]"""
import os, sys, time, signal, collections

prefix, out = sys.argv[1], sys.argv[2]
interval = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.002
dev = sys.argv[4] if len(sys.argv) > 4 else "vda"
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

class P:
    def __init__(s, t): s.first = t; s.last = t; s.states = collections.Counter(); s.frames = collections.Counter(); s.ctx = []
procs = {}
pids, last_scan, last_ctx, ctx = [], 0.0, 0.0, (0, 0, 0, 0, (0, 256))
t0 = time.monotonic()
while not stop:
    now = time.monotonic()
    if now - last_scan > 0.01:
        last_scan = now
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                c = read(f"/proc/{d}/comm")
                if c and c.startswith(prefix): pids.append(d)
    if now - last_ctx > 0.02:
        last_ctx = now
        m = read("/proc/meminfo") or ""
        kv = {l.split(":")[0]: int(l.split()[1]) for l in m.splitlines() if l.split()[1:2] and l.split()[1].isdigit()}
        inf = (read(f"/sys/block/{dev}/inflight") or "0 0").split()
        st = read(f"/sys/kernel/debug/block/{dev}/hctx0/sched_tags") or ""
        busy = next((int(l.split("=")[1]) for l in st.splitlines() if l.startswith("busy=")), -1)
        ntags = next((int(l.split("=")[1]) for l in st.splitlines() if l.startswith("nr_tags=")), 256)
        busy = -1 if busy < 0 else (busy, ntags)
        ctx = (kv.get("Dirty", 0) / 1024, kv.get("Writeback", 0) / 1024, int(inf[0]), int(inf[1]), busy)
    for pid in pids:
        p = procs.get(pid)
        if p is None: p = procs[pid] = P(now - t0)
        p.last = now - t0
        p.ctx.append(ctx)
        try: tids = os.listdir(f"/proc/{pid}/task")
        except OSError: continue
        for tid in tids:
            st = read(f"/proc/{pid}/task/{tid}/stat")
            if not st: continue
            state = st[st.rfind(")") + 2]
            stack = read(f"/proc/{pid}/task/{tid}/stack") or ""
            fns = [l.split("] ", 1)[-1].split("+")[0] for l in stack.splitlines()]
            waiting = state == "D" or (state == "S" and any("read_events" in f or "io_getevents" in f for f in fns))
            key = state if state != "S" else ("S-aio" if waiting else "S")
            p.states[key] += 1
            if waiting:
                inner = [f for f in fns if not f.startswith(SKIP)]
                p.frames[inner[0] if inner else "?"] += 1
    time.sleep(interval)

with open(out, "w") as f:
    for pid, p in sorted(procs.items(), key=lambda kv: kv[1].first):
        n = max(len(p.ctx), 1)
        mean = [sum(c[i] for c in p.ctx) / n for i in range(4)] + [sum(c[4][0] for c in p.ctx if c[4] != -1) / n]
        full = sum(1 for c in p.ctx if c[4] != -1 and c[4][0] >= c[4][1] - 6) / n
        st = " ".join(f"{k}={v}" for k, v in p.states.most_common())
        fr = " ".join(f"{k}={v}" for k, v in p.frames.most_common(6))
        f.write(f"pid {pid} first {p.first:.3f} life {1000*(p.last-p.first):.0f}ms dirty {mean[0]:.0f} wb {mean[1]:.0f} inflight {mean[2]:.1f}/{mean[3]:.1f} schedtags {mean[4]:.0f} full {100*full:.0f}% | {st} | {fr}\n")
