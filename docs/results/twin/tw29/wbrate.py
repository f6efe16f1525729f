#!/usr/bin/env python3
"""twin29: the page cache's write-back against the device's O_DIRECT streams, in a row on one
1 GiB file (run1 found them five times apart): 1 MiB O_DIRECT pwrite()s from THREADS threads
(each its own quarter), then buffered 1 MiB write()s with an fdatasync every 32 MiB (the bench's
updater, one and two at a time on their own files), then one buffered 256 MiB write and its
fdatasync; MB/s each. Usage: wbrate.py DIR [reps] [THREADS]."""
import mmap, os, sys, threading, time
d = sys.argv[1]; reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
T = int(sys.argv[3]) if len(sys.argv) > 3 else 4
M, G = 1 << 20, 1 << 30
paths = [os.path.join(d, f"wb-{i}") for i in range(2)]
buf = mmap.mmap(-1, M); buf.write(os.urandom(M))
def make(p):
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600); os.ftruncate(fd, G)
    for o in range(0, G, M): os.pwrite(fd, buf, o)
    os.fsync(fd); os.close(fd)
def direct():
    fd = os.open(paths[0], os.O_RDWR | os.O_DIRECT)
    def part(i):
        b = mmap.mmap(-1, M); b.write(bytes(buf))
        for o in range(i * G // T, (i + 1) * G // T, M): os.pwrite(fd, b, o)
    t = time.perf_counter(); th = [threading.Thread(target=part, args=(i,)) for i in range(T)]
    for x in th: x.start()
    for x in th: x.join()
    os.close(fd); return G / (time.perf_counter() - t) / 1e6
def updater(p, out, i):
    fd = os.open(p, os.O_RDWR); t = time.perf_counter()
    for k, o in enumerate(range(0, G, M)):
        os.pwrite(fd, buf, o)
        if k % 32 == 31: os.fdatasync(fd)
    out[i] = time.perf_counter() - t; os.close(fd)
def updaters(n):
    os.sync(); open("/proc/sys/vm/drop_caches", "w").write("1\n")
    out = [0.0] * n; th = [threading.Thread(target=updater, args=(paths[i], out, i)) for i in range(n)]
    t = time.perf_counter()
    for x in th: x.start()
    for x in th: x.join()
    return n * G / (time.perf_counter() - t) / 1e6
def one_sync():
    fd = os.open(paths[1], os.O_RDWR); t = time.perf_counter()
    for o in range(0, 256 * M, M): os.pwrite(fd, buf, o)
    w = time.perf_counter(); os.fdatasync(fd); s = time.perf_counter(); os.close(fd)
    return 256 * M / (w - t) / 1e6, 256 * M / (s - w) / 1e6
try:
    for p in paths: make(p)
    for k in range(reps):
        dr = direct(); u1 = updaters(1); u2 = updaters(2); w, s = one_sync()
        print(f"rep {k}: O_DIRECT 1 MiB x {T} threads {dr:.0f} MB/s; one updater {u1:.0f} MB/s; two {u2:.0f} MB/s; "
              f"256 MiB buffered: write() {w:.0f} MB/s, its fdatasync {s:.0f} MB/s", flush=True)
finally:
    for p in paths:
        try: os.unlink(p)
        except FileNotFoundError: pass
