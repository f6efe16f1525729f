import os, time, sys
P="/sys/module/page_reporting/parameters/"
def rd(n): return int(open(P+n).read())
mib=int(sys.argv[1]) if len(sys.argv)>1 else 2048
fn="/var/tmp/tw24/rep.dat"; b=os.urandom(1<<20)
fd=os.open(fn,os.O_CREAT|os.O_RDWR|os.O_TRUNC,0o644)
for i in range(mib): os.write(fd,b)
os.fsync(fd)
time.sleep(4)
r0,p0,w0=rd("reported_kib"),rd("passes"),rd("walked")
t0=time.monotonic(); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd); os.unlink(fn)
last=None
while time.monotonic()-t0<5:
    r,p,w=rd("reported_kib")-r0,rd("passes")-p0,rd("walked")-w0
    if (r,p)!=last: print(f"{time.monotonic()-t0:6.3f} s reported {r/1024:8.1f} MiB passes {p} walked {w}"); last=(r,p)
    time.sleep(0.01)
