import os, sys, time, threading
n = int(sys.argv[1]); dur = float(sys.argv[2]); drop = sys.argv[3] == '1'
files = [f"/var/tmp/tw25/r{i}.dat" for i in range(n)]
for p in files:
    if not os.path.exists(p) or os.path.getsize(p) < (1 << 30):
        with open(p, 'wb') as f:
            b = os.urandom(1 << 20)
            for _ in range(1024): f.write(b)
            f.flush(); os.fsync(f.fileno())
os.sync(); open('/proc/sys/vm/drop_caches', 'w').write('3')
tot = [0] * n; stop = time.monotonic() + dur
def run(i):
    fd = os.open(files[i], os.O_RDONLY); off = 0
    while time.monotonic() < stop:
        b = os.pread(fd, 1 << 20, off)
        if drop: os.posix_fadvise(fd, off, 1 << 20, os.POSIX_FADV_DONTNEED)
        off += 1 << 20; tot[i] += len(b)
        if off >= 1 << 30:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); off = 0
def mon():
    last = sum(tot); lt = time.monotonic()
    while time.monotonic() < stop:
        time.sleep(0.1); c = sum(tot); t = time.monotonic()
        sec = int(open('/sys/block/vda/stat').read().split()[2]) * 512 >> 20
        rep = int(open('/sys/module/page_reporting/parameters/reported_kib').read()) >> 10
        print(f"  {t-t0:4.1f}s {(c-last)/(t-lt)/1e6:6.0f} MB/s  dev MiB {sec} reported MiB {rep}", flush=True); last, lt = c, t
ts = [threading.Thread(target=mon)] + [threading.Thread(target=run, args=(i,)) for i in range(n)]
t0 = time.monotonic(); [t.start() for t in ts]; [t.join() for t in ts]
el = time.monotonic() - t0
r0 = open('/sys/block/vda/stat').read().split()
print(f"{n} readers drop={drop}: {sum(tot)/el/1e6:.0f} MB/s over {el:.1f}s")
