#!/usr/bin/env python3
"""twin29: which free memory does an allocation take once a pass has reported part of it? The
workers' two 1 GiB files and the app's 32 code files (40 MiB) cached and dropped; WAIT s later
(the host's passes reporting part of the freed memory meanwhile) two workers (aw.c, the bench's
updaters) rewrite their files for RUN s, each 32 MiB chunk's write() time logged, then are
stopped (SIGSTOP, as the agent's pause) and the launch reads the code files cold in 128 KiB
read()s: its wall and CPU time; then a BIG_MIB (256) file, cached and dropped with the rest, read
cold in 1 MiB calls as the calibration's (large folios), its wall and CPU time. A chunk whose write()s take several times a fast one's met
memory the host took back (~11 us a page). With NW=0 no workers (the launch alone after the wait). Usage: [NW=2] reportedfirst.py DIR AW [reps] [WAIT] [RUN]."""
import os, sys, time, signal
d, AW = sys.argv[1], sys.argv[2]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
WAIT = float(sys.argv[4]) if len(sys.argv) > 4 else 6
RUN = float(sys.argv[5]) if len(sys.argv) > 5 else 1.5
NW = int(os.environ.get("NW", "2"))  # workers: 0 for the launch alone after the wait
P = "/sys/module/page_reporting/parameters/reported_kib"
M, K128 = 1 << 20, 128 << 10
def rep():
    try: return int(open(P).read()) // 1024
    except Exception: return 0
n, total = 32, 40 << 20
w = [1 + (i % 8) * (i % 8) for i in range(n)]
sizes = [max(4096, total * x // sum(w)) for x in w]
paths = [os.path.join(d, f"rf-part{i:03}") for i in range(n)]
wpaths = [os.path.join(d, f"rf-worker{i}") for i in range(2)]
buf = os.urandom(M)
def write(p, size):
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    for o in range(0, size, M): os.pwrite(fd, buf[: min(M, size - o)], o)
    os.fdatasync(fd); return fd
def drop():
    os.sync(); open("/proc/sys/vm/drop_caches", "w").write("3\n")
def launch():
    t, c = time.perf_counter(), time.thread_time()
    for fd, s in zip(fds, sizes):
        for o in range(0, s, K128): os.pread(fd, K128, o)
    return (time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3
BIG = int(os.environ.get("BIG_MIB", "256")) << 20
def bigread():
    t, c = time.perf_counter(), time.thread_time()
    for o in range(0, BIG, M): os.pread(bfd, M, o)
    return (time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3
fds = [write(p, s) for p, s in zip(paths, sizes)]
bfd = write(os.path.join(d, "rf-big"), BIG); paths.append(os.path.join(d, "rf-big"))
for p in wpaths: os.close(write(p, 1 << 30))
pids = []
try:
    for k in range(reps):
        for p in wpaths + paths:  # cached, as the previous sample leaves them
            fd = os.open(p, os.O_RDONLY)
            while os.read(fd, 8 * M): pass
            os.close(fd)
        time.sleep(1)
        r0 = rep(); drop(); time.sleep(WAIT); r1 = rep()
        logs = [f"{p}.log" for p in wpaths]
        logs = logs[:NW]
        pids = [os.spawnv(os.P_NOWAIT, AW, [AW, p, l]) for p, l in zip(wpaths, logs)]
        time.sleep(RUN)
        for pid in pids: os.kill(pid, signal.SIGSTOP)
        r2 = rep(); wall, cpu = launch(); r3 = rep()
        bw, bc = bigread()
        for pid in pids: os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
        pids = []
        print(f"rep {k}: reported {r1 - r0} MiB in the {WAIT:.0f} s after the drop, {r2 - r1} while the workers ran, {r3 - r2} during the launch; "
              f"launch {wall:.1f} ms wall, {cpu:.1f} ms CPU ({cpu * 1e3 / (sum(sizes) / 4096):.2f} us a page); "
              f"then {BIG >> 20} MiB read in 1 MiB calls: {bw:.1f} ms wall, {bc:.1f} ms CPU ({bc * 1e3 / (BIG / 4096):.2f} us a page)", flush=True)
        for i, l in enumerate(logs):
            rows = [tuple(map(float, x.split())) for x in open(l)]
            fast = sorted(r[1] for r in rows)[: max(1, len(rows) // 4)][-1] if rows else 0
            print(f"  worker {i}: {len(rows) * 32} MiB; chunks' write() ms in order: " + " ".join(f"{r[1]:.0f}" for r in rows), flush=True)
            os.unlink(l)
finally:
    for pid in pids:
        try: os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
        except Exception: pass
    for fd in fds + [bfd]: os.close(fd)
    for p in paths + wpaths: os.unlink(p)
