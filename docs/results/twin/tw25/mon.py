import time, sys
dur = float(sys.argv[1]); t0 = time.monotonic(); last = None
out = open(sys.argv[2], 'w')
while time.monotonic() - t0 < dur:
    f = open('/sys/block/vda/stat').read().split()
    sched = open('/sys/block/vda/queue/scheduler').read().strip()
    rs, ws = int(f[2]), int(f[6])
    now = time.monotonic() - t0
    if last:
        dt = now - last[0]
        out.write(f"{now:7.2f} rd {(rs-last[1])*512/dt/1e6:6.0f} wr {(ws-last[2])*512/dt/1e6:6.0f} {sched.split('[')[1].split(']')[0]}\n")
    last = (now, rs, ws)
    time.sleep(0.05)
