#!/usr/bin/env python3
"""twin29: does a launch that follows the bench's workers pay the host's fault? The bench's
agent sample by hand: the workers' two 1 GiB files and the app's 32 code files (40 MiB) cached,
all dropped (`drop_caches`, as `runner::one_sample`) GAP s after a drop as the previous sample's
(whose pass then comes just after this drop, as in the bench's runs), then either (`alone`) 0.1 s of nothing or
(`workers`) two processes rewriting their files from the start in 1 MiB write()s with an
fdatasync every 32 MiB for 1.5 s (the bench's ramp), stopped (SIGSTOP, as the agent's pause
freezes them) before the launch; the launch reads the code files cold in 128 KiB read()s, its
wall and CPU time; what the workers wrote; the kernel's reported_kib before the drop, at the launch and after it.
With CACHE_MIB below the workers' rate, the workers take more memory than the drop freed
before the launch. Usage: [AW=aw] [CACHE_MIB=1024] agentfault.py DIR [reps] [GAP]."""
import os, sys, time, signal
d = sys.argv[1]; reps = int(sys.argv[2]) if len(sys.argv) > 2 else 4
AW = os.environ.get("AW")  # aw.c compiled: the workers in C (python's write at ~500 MB/s)
CACHE = int(os.environ.get("CACHE_MIB", "1024")) << 20  # of each worker's file cached before the drop
gap = float(sys.argv[3]) if len(sys.argv) > 3 else 1.9  # s from the previous sample's drop to this one's
P = "/sys/module/page_reporting/parameters/reported_kib"
M, K128 = 1 << 20, 128 << 10
def rep():
    try: return int(open(P).read()) // 1024
    except Exception: return 0
n, total = 32, 40 << 20
w = [1 + (i % 8) * (i % 8) for i in range(n)]
sizes = [max(4096, total * x // sum(w)) for x in w]
paths = [os.path.join(d, f"af-part{i:03}") for i in range(n)]
wpaths = [os.path.join(d, f"af-worker{i}") for i in range(2)]
buf = os.urandom(M)
def write(p, size):
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    for o in range(0, size, M): os.pwrite(fd, buf[: min(M, size - o)], o)
    os.fdatasync(fd); return fd
def free_mib():
    for line in open("/proc/meminfo"):
        if line.startswith("MemFree:"): return int(line.split()[1]) >> 10
def drop():
    os.sync(); open("/proc/sys/vm/drop_caches", "w").write("3\n")
def worker(p):
    fd = os.open(p, os.O_RDWR); o = 0; n = 0
    while True:
        os.pwrite(fd, buf, o); o = (o + M) % (1 << 30); n += 1
        if n % 32 == 0: os.fdatasync(fd)
def launch():
    t, c = time.perf_counter(), time.thread_time()
    for fd, s in zip(fds, sizes):
        for o in range(0, s, K128): os.pread(fd, K128, o)
    return (time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3
fds = [write(p, s) for p, s in zip(paths, sizes)]
for p in wpaths: os.close(write(p, 1 << 30))
pids = []
try:
    for k in range(reps):
        for cond in ("alone", "workers"):
            rs = rep(); time.sleep(3)
            rb = rep(); drop(); tp = time.perf_counter()  # the previous sample's drop: it asks for a pass 2 s later
            for p in wpaths:  # the previous sample's workers leave their files cached
                fd = os.open(p, os.O_RDONLY); got = 0
                while got < CACHE and os.read(fd, 8 * M): got += 8 * M
                os.close(fd)
            time.sleep(max(0, gap - (time.perf_counter() - tp)))
            r0 = rep(); free0 = free_mib(); drop(); td = time.perf_counter()
            if cond == "workers":
                for p in wpaths:
                    if AW:  # the C worker (aw.c), as fast as the bench's
                        pids.append(os.spawnv(os.P_NOWAIT, AW, [AW, p]))
                        continue
                    pid = os.fork()
                    if pid == 0:
                        try: worker(p)
                        finally: os._exit(0)
                    pids.append(pid)
                time.sleep(1.5)
                for pid in pids: os.kill(pid, signal.SIGSTOP)
            else:
                time.sleep(0.1)
            r1 = rep(); at = (time.perf_counter() - td) * 1e3
            wrote = 0
            for pid in pids:
                for line in open(f"/proc/{pid}/io"):
                    if line.startswith("wchar:"): wrote += int(line.split()[1]) >> 20
            wall, cpu = launch(); r2 = rep()
            for pid in pids: os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
            pids = []
            print(f"rep {k} {cond:7}: launch at +{at:.0f} ms: {wall:.1f} ms wall, {cpu:.1f} ms CPU; "
                  f"reported {rb - rs} MiB in the 3 s before the previous drop, {r0 - rb} from it to this drop, which freed {free_mib() - free0} MiB; "
                  f"since the drop {r1 - r0} MiB at the launch, {r2 - r0} after; the workers wrote {wrote} MiB", flush=True)
finally:
    for pid in pids:
        try: os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
        except Exception: pass
    for fd in fds: os.close(fd)
    for p in paths + wpaths: os.unlink(p)
