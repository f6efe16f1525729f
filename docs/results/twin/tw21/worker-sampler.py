#!/usr/bin/env python3
"""twin21: sample /sys/block/vda/stat and each `forefront bench` worker's and operation's /proc/PID/io
(wchar, rchar) every ~5 ms until SIGTERM. Usage: worker-sampler.py OUT.txt (root, beside a bench run)."""
import os, sys, time, signal
out = open(sys.argv[1], "w")
stop = False
def h(*a):
    global stop; stop = True
signal.signal(signal.SIGTERM, h)
while not stop:
    t = time.monotonic()
    st = open("/sys/block/vda/stat").read().split()
    ws = []
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            cmd = open(f"/proc/{p}/cmdline","rb").read().split(b"\0")
            if b"worker" not in cmd and b"op" not in cmd: continue
            io = dict(l.split(": ") for l in open(f"/proc/{p}/io").read().splitlines())
            ws.append(f"{p}:{b' '.join(cmd[1:4]).decode(errors='replace').replace(' ','_')}:{io['wchar']}:{io['rchar']}")
        except Exception:
            pass
    out.write(f"{t:.4f} {st[2]} {st[6]} {' '.join(ws)}\n")
    time.sleep(0.005)
