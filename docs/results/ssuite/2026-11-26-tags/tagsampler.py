#!/usr/bin/env python3
# Diagnostic (not part of the project): samples vda's scheduler tags, driver tags and in-flight
# counts every ~2 ms until killed; one line per sample: epoch s, sched busy, driver busy,
# inflight reads, inflight writes.
import sys, time, re, signal
signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
out = open(sys.argv[1], "w", buffering=1 << 20)
d = "/sys/kernel/debug/block/vda/hctx0/"
busy = re.compile(rb"busy=(\d+)")
fs = open(d + "sched_tags", "rb", buffering=0)
fd = open(d + "tags", "rb", buffering=0)
fi = open("/sys/block/vda/inflight", "rb", buffering=0)
def rd(f):
    f.seek(0)
    return f.read(4096)
try:
    while True:
        t = time.time()
        try:
            s = busy.search(rd(fs)); dr = busy.search(rd(fd)); i = rd(fi).split()
            out.write("%.4f %s %s %s %s\n" % (t, s.group(1).decode() if s else "-", dr.group(1).decode() if dr else "-", i[0].decode(), i[1].decode()))
        except OSError:
            pass
        time.sleep(0.002)
except KeyboardInterrupt:
    pass
finally:
    out.flush()
