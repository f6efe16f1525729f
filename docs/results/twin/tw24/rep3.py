import os, time, sys
P="/sys/module/page_reporting/parameters/"
def rd(n): return int(open(P+n).read())
mib=int(sys.argv[1]); wait=float(sys.argv[2])
A="/var/tmp/tw24/repA.dat"; B="/var/tmp/tw24/repB.dat"; b=bytearray(os.urandom(1<<20))
for fn in (A,B):
    if not os.path.exists(fn) or os.path.getsize(fn)!=mib<<20:
        fd=os.open(fn,os.O_CREAT|os.O_RDWR|os.O_TRUNC,0o644)
        for i in range(mib): os.pwrite(fd,b,i<<20)
        os.fsync(fd); os.close(fd)
fb=os.open(B,os.O_RDONLY); os.posix_fadvise(fb,0,0,os.POSIX_FADV_DONTNEED)
fa=os.open(A,os.O_RDONLY)
for i in range(mib): os.pread(fa,1<<20,i<<20)   # A cached
time.sleep(6)
r0=rd("reported_kib"); os.posix_fadvise(fa,0,0,os.POSIX_FADV_DONTNEED); time.sleep(wait); r1=rd("reported_kib")
t=time.perf_counter(); c0=time.process_time()
for i in range(mib): os.pread(fb,1<<20,i<<20)
dt=time.perf_counter()-t; cpu=time.process_time()-c0
print(f"read {mib} MiB cold after dropping {mib} MiB and waiting {wait}s (reported {(r1-r0)/1024:.0f} MiB): {mib/dt:.0f} MiB/s, CPU {cpu:.2f} s")
os.posix_fadvise(fb,0,0,os.POSIX_FADV_DONTNEED)
