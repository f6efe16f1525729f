# twin23: the share of a sched-probe trace's worker write() calls that took over 1.5 ms (the host's first-touch cost).
# Usage: python3 slow-writes.py OUTDIR   (a `scripts/sched-probe OUTDIR --syscalls -- ...` directory)
import re,sys,collections
d=sys.argv[1]
roles={int(l.split()[0]):l.split()[1] for l in open(d+'/pids.txt')}
workers={p for p,r in roles.items() if r.startswith('worker')}
ent={}; slow=0; tot=0; cpu_slow=0
for l in open(d+'/trace.txt'):
    m=re.match(r'\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)',l)
    if not m: continue
    t=float(m.group(4)); pid=int(m.group(2)); ev=m.group(5); rest=m.group(6)
    if pid in workers and ev in ('sys_enter','sys_exit') and rest.split()[1]=='1':
        if ev=='sys_enter': ent[pid]=t
        elif pid in ent:
            dt=t-ent.pop(pid); tot+=1; slow+= dt>1.5e-3
print(d.split('/')[-1], 'writes',tot,'over 1.5 ms: %.1f%%'%(100*slow/max(tot,1)))
