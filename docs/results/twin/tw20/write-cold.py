#!/usr/bin/env python3
"""twin20: what a worker's 32 MiB of 1 MiB buffered write()s costs over cold pages (the file
allocated, its cache dropped: as each bench sample's updater meets its file) and over the same
pages cached, each followed by fdatasync (not timed). Root (drop_caches). Usage: write-cold.py FILE
(an allocated file of at least 64 MiB; overwritten in place)."""
import os, sys, time, statistics
path = sys.argv[1]
buf = os.urandom(1 << 20)
fd = os.open(path, os.O_WRONLY)
def burst(off):
    t = time.perf_counter()
    for i in range(32):
        os.pwrite(fd, buf, off + i * (1 << 20))
    dt = time.perf_counter() - t
    os.fdatasync(fd)
    return dt * 1e3
cold, warm = [], []
for rep in range(5):
    os.system("sync; echo 3 > /proc/sys/vm/drop_caches")
    off = rep * (64 << 20) % (os.fstat(fd).st_size - (32 << 20))
    cold.append(burst(off))
    warm.append(burst(off))
print(f"32 MiB of 1 MiB write()s, ms: cold pages {statistics.median(cold):.2f} (runs {', '.join(f'{x:.2f}' for x in cold)}); "
      f"cached pages {statistics.median(warm):.2f} (runs {', '.join(f'{x:.2f}' for x in warm)}); per 4 KiB page, us: "
      f"cold {statistics.median(cold) * 1e3 / 8192:.3f}, cached {statistics.median(warm) * 1e3 / 8192:.3f}")
