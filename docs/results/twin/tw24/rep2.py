import os, time, sys
P="/sys/module/page_reporting/parameters/"
def rd(n): return int(open(P+n).read())
mib=int(sys.argv[1]); wait=float(sys.argv[2])
fn="/var/tmp/tw24/rep.dat"; b=bytearray(os.urandom(1<<20))
fd=os.open(fn,os.O_CREAT|os.O_RDWR|os.O_TRUNC,0o644)
for i in range(mib): os.pwrite(fd,b,i<<20)
os.fsync(fd); time.sleep(6)
r0=rd("reported_kib")
os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); t0=time.monotonic()
time.sleep(wait)
r1=rd("reported_kib")
lat=[]
for i in range(mib):
    b[0]=(b[0]+1)%256; t=time.perf_counter(); os.pwrite(fd,b,i<<20); lat.append((time.perf_counter()-t)*1e6)
r2=rd("reported_kib")
os.close(fd); os.unlink(fn)
print(f"{mib} MiB dropped, wait {wait}s: reported before the writes {(r1-r0)/1024:.0f} MiB, during {(r2-r1)/1024:.0f} MiB; write took {sum(lat)/1e6:.2f} s")
step=mib//16
print(" ".join(f"{sum(lat[i:i+step])/step:.0f}" for i in range(0,mib,step)), "(mean us per 1 MiB call, per 1/16 of the file)")
