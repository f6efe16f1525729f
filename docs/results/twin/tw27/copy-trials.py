import os, time, statistics, sys
MIB=1<<20
def trial(mib):
    p=f"/var/tmp/ct{mib}.dat"
    fd=os.open(p, os.O_RDWR|os.O_CREAT|os.O_TRUNC)
    buf=bytearray(os.urandom(MIB))
    for o in range(mib): os.pwrite(fd, buf, o*MIB)
    os.fdatasync(fd)
    os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)
    meds=[]
    for r in range(2):
        ts=[]
        for o in range(mib):
            buf[0]=(buf[0]+1)%256
            t=time.perf_counter(); os.pwrite(fd, buf, o*MIB); ts.append((time.perf_counter()-t)*1e6/256)
            if (o+1)%32==0 and mib>32: os.fdatasync(fd)
        os.fdatasync(fd)
        meds.append(statistics.median(ts))
    os.close(fd); os.unlink(p)
    return meds
for i in range(6):
    a=trial(32); b=trial(256)
    print("32: cold %.3f warm %.3f   256: cold %.3f warm %.3f"%(a[0],a[1],b[0],b[1]))
