#!/usr/bin/env python3
"""twin28: what a cold buffered read costs on memory the VM's host took back, against one on
memory just freed (recycled, still backed): each 1 MiB read() call's wall time and the calling
thread's CPU time. Usage: readfault.py DIR [MiB] [reps]."""
import os, sys, time, subprocess, statistics as st
d = sys.argv[1]; mib = int(sys.argv[2]) if len(sys.argv) > 2 else 768; reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
P = "/sys/module/page_reporting/parameters/"
def rep():
    try: return int(open(P + "reported_kib").read())
    except Exception: return None
path = os.path.join(d, "readfault.dat")
M = 1 << 20
buf = os.urandom(M)
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
try:
    for i in range(mib): os.pwrite(fd, buf, i * M)
    os.fdatasync(fd)
    def drop(): os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    def readpass():
        out = []
        for i in range(mib):
            t, c = time.perf_counter(), time.thread_time()
            n = len(os.pread(fd, M, i * M))
            out.append(((time.perf_counter() - t) * 1e6, (time.thread_time() - c) * 1e6))
        return out
    def settle():
        r0, t0, last, lt = rep(), time.time(), rep(), time.time()
        while time.time() - t0 < 9:
            time.sleep(0.02); r = rep()
            if r != last: last, lt = r, time.time()
            if r is not None and r != r0 and time.time() - lt > 2.5: break
            if r is None and time.time() - t0 > 5: break
        return ((last or 0) - (r0 or 0)) / 1024
    for k in range(reps):
        drop(); print(subprocess.run(["fincore", path], capture_output=True, text=True).stdout.splitlines()[-1], flush=True); recyc = readpass()
        drop(); freed = settle(); cold = readpass()
        rw = st.median(x[0] for x in recyc); rc = st.median(x[1] for x in recyc)
        slow = [x for x in cold if x[0] > 1.5 * rw]
        fast = [x for x in cold if x[0] <= 1.5 * rw]
        sw = st.median(x[0] for x in slow) if slow else float('nan')
        sc = st.median(x[1] for x in slow) if slow else float('nan')
        print(f"rep {k}: reported {freed:.0f} MiB after the drop; recycled read: wall {rw:.0f} us cpu {rc:.0f} us per MiB; "
              f"after the passes: {len(fast)} calls as fast, {len(slow)} slower: wall {sw:.0f} us cpu {sc:.0f} us per MiB; "
              f"per page: wall +{(sw - rw) / 256:.2f} us, cpu +{(sc - rc) / 256:.2f} us", flush=True)
finally:
    os.close(fd); os.unlink(path)
