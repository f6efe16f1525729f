#!/usr/bin/env python3
"""twin28: the host's fault as the bench's launch meets it: the app's 32 code files (40 MiB,
`code_file_sizes`' sizes) read cold in 128 KiB read()s, once at once after their drop (memory
just freed, backed) and once after the host's reporting passes took the freed memory (a 768 MiB
file dropped beside them, so that the passes have memory to take), each file's wall and CPU
time. Usage: launchfault.py DIR [reps]."""
import os, sys, time, statistics as st
d = sys.argv[1]; reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
P = "/sys/module/page_reporting/parameters/reported_kib"
M, K128 = 1 << 20, 128 << 10
def rep():
    try: return int(open(P).read())
    except Exception: return None
n, total = 32, 40 << 20
w = [1 + (i % 8) * (i % 8) for i in range(n)]
sizes = [max(4096, total * x // sum(w)) for x in w]
paths = [os.path.join(d, f"lf-part{i:03}") for i in range(n)]
big = os.path.join(d, "lf-big.dat")
buf = os.urandom(M)
def write(p, size):
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    for o in range(0, size, M): os.pwrite(fd, buf[: min(M, size - o)], o)
    os.fdatasync(fd); return fd
fds = [write(p, s) for p, s in zip(paths, sizes)]
bfd = write(big, 768 << 20)
def drop(fd): os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
def launch():
    t, c = time.perf_counter(), time.thread_time()
    for fd, s in zip(fds, sizes):
        for o in range(0, s, K128): os.pread(fd, K128, o)
    return (time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3
def settle():
    r0, t0 = rep(), time.time(); last, lt = r0, time.time()
    while time.time() - t0 < 9:
        time.sleep(0.02); r = rep()
        if r != last: last, lt = r, time.time()
        if r is not None and r != r0 and time.time() - lt > 2.5: break
        if r is None and time.time() - t0 > 5: break
    return ((last or 0) - (r0 or 0)) / 1024
try:
    pages = sum(sizes) // 4096
    for k in range(reps):
        for fd in fds: drop(fd)
        drop(bfd)
        w0, c0 = launch()
        for fd in fds: drop(fd)
        reported = settle()
        w1, c1 = launch()
        print(f"rep {k}: {pages} pages; at once: {w0:.1f} ms wall, {c0:.1f} ms CPU; after {reported:.0f} MiB reported: "
              f"{w1:.1f} ms wall, {c1:.1f} ms CPU; {(c1 - c0) * 1e3 / pages:.2f} us CPU a page more", flush=True)
finally:
    for fd, p in zip(fds + [bfd], paths + [big]): os.close(fd); os.unlink(p)
