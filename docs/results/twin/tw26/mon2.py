# twin26: every 20 ms, the wall clock (ms since the epoch), the reporting counters (MiB reported
# so far, passes), MemFree (MiB) and the disk's MB read and written since the last line.
import time, sys
dur = float(sys.argv[1]); out = open(sys.argv[2], 'w'); t0 = time.monotonic(); last = None
P = '/sys/module/page_reporting/parameters/'
while time.monotonic() - t0 < dur:
    f = open('/sys/block/vda/stat').read().split()
    rep = int(open(P + 'reported_kib').read()) >> 10
    passes = int(open(P + 'passes').read())
    free = next(int(l.split()[1]) >> 10 for l in open('/proc/meminfo') if l.startswith('MemFree:'))
    rs, ws = int(f[2]), int(f[6])
    now = time.time()
    if last:
        out.write(f"{now*1000:.0f} rep {rep} passes {passes} free {free} rd {(rs-last[0])*512/1e6:.1f} wr {(ws-last[1])*512/1e6:.1f}\n")
    last = (rs, ws)
    time.sleep(0.02)
