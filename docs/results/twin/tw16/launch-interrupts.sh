#!/bin/bash
m=$1; bg=$2
cat /proc/interrupts > i-a
/var/tmp/tw15/ff2 bench run --fg launch --bg $bg --runs 3 --mode $m --format json > i-$m.json 2>/dev/null
cat /proc/interrupts > i-b
python3 - <<'PY'
def rd(f):
    d={}
    for l in open(f).readlines()[1:]:
        p=l.split()
        k=p[0].rstrip(':'); v=[int(x) for x in p[1:3] if x.isdigit()]
        if len(v)==2: d[k]=(v,' '.join(p[3:])[:40])
    return d
a,b=rd('i-a'),rd('i-b')
for k in b:
    if k in a:
        d=[b[k][0][i]-a[k][0][i] for i in range(2)]
        if sum(d)>50: print(f"  {k:6s} {d[0]:9d} {d[1]:9d}  {b[k][1]}")
PY
python3 -c "import json;d=json.load(open('i-$m.json'))['modes']['$m'];print('  $m', round(d['median_ms'],1), d['op_cpu_ms'])"
