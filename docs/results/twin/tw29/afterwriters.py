#!/usr/bin/env python3
"""twin29: after the host's passes settle on memory a drop freed, which allocations pay the
host's fault, in order: a writer (aw.c's pattern, one process, 1 MiB write()s, fdatasync every
32 MiB) writing W MiB of new pages, the launch (32 code files, 40 MiB, 128 KiB read()s), a second
writer, and a cold read of a 256 MiB file in 1 MiB calls. Each step's CPU time a page; the
kernel's reported_kib. Usage: afterwriters.py DIR [reps] [W_MIB] [WAIT]."""
import os, sys, time
d = sys.argv[1]; reps = int(sys.argv[2]) if len(sys.argv) > 2 else 2
W = (int(sys.argv[3]) if len(sys.argv) > 3 else 512) << 20
WAIT = float(sys.argv[4]) if len(sys.argv) > 4 else 12
P = "/sys/module/page_reporting/parameters/reported_kib"
M, K128, BIG = 1 << 20, 128 << 10, 256 << 20
def rep():
    try: return int(open(P).read()) // 1024
    except Exception: return 0
n, total = 32, 40 << 20
w = [1 + (i % 8) * (i % 8) for i in range(n)]
sizes = [max(4096, total * x // sum(w)) for x in w]
paths = [os.path.join(d, f"aw-part{i:03}") for i in range(n)]
others = [os.path.join(d, x) for x in ("aw-w0", "aw-w1", "aw-big", "aw-free")]
buf = os.urandom(M)
def write(p, size):
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    for o in range(0, size, M): os.pwrite(fd, buf[: min(M, size - o)], o)
    os.fdatasync(fd); return fd
def drop():
    os.sync(); open("/proc/sys/vm/drop_caches", "w").write("3\n")
def timed(f):
    r0, c = rep(), time.thread_time(); t = time.perf_counter(); f()
    return (time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3, rep() - r0
def writer(fd):
    def go():
        for i, o in enumerate(range(0, W, M)):
            os.pwrite(fd, buf, o)
            if i % 32 == 31: os.fdatasync(fd)
    return go
def launch():
    for fd, s in zip(fds, sizes):
        for o in range(0, s, K128): os.pread(fd, K128, o)
def bigread():
    for o in range(0, BIG, M): os.pread(bfd, M, o)
fds = [write(p, s) for p, s in zip(paths, sizes)]
w0, w1, bfd = write(others[0], W), write(others[1], W), write(others[2], BIG)
ffd = write(others[3], 2 << 30)  # the memory the drop frees and the passes take
try:
    for k in range(reps):
        for fd in (ffd, bfd):
            os.lseek(fd, 0, 0)
            while os.read(fd, 8 * M): pass
        r0 = rep(); drop(); time.sleep(WAIT); r1 = rep()
        out = [f"rep {k}: {r1 - r0} MiB reported in the {WAIT:.0f} s after the drop"]
        for name, f, pages in (("writer", writer(w0), W // 4096), ("launch", launch, sum(sizes) // 4096),
                               ("writer", writer(w1), W // 4096), ("big read", bigread, BIG // 4096)):
            wall, cpu, rp = timed(f)
            out.append(f"{name} {wall:.0f} ms wall, {cpu:.0f} ms CPU, {cpu * 1e3 / pages:.2f} us a page ({rp} MiB reported meanwhile)")
        print("; ".join(out), flush=True)
finally:
    for fd in fds + [w0, w1, bfd, ffd]: os.close(fd)
    for p in paths + others: os.unlink(p)
