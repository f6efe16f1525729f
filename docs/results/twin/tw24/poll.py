import time, sys
P="/sys/module/page_reporting/parameters/"
out=open(sys.argv[1],"w"); dur=float(sys.argv[2])
t0=time.monotonic()
def mem():
    d={}
    for l in open("/proc/meminfo"):
        k,v=l.split(":"); 
        if k in ("MemFree","Cached"): d[k]=int(v.split()[0])
    return d
while time.monotonic()-t0<dur:
    m=mem(); r=int(open(P+"reported_kib").read()); p=int(open(P+"passes").read())
    out.write(f"{time.monotonic()-t0:.3f} {m['MemFree']} {m['Cached']} {r} {p}\n")
    time.sleep(0.01)
