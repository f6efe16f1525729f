import re,collections,sys
f=sys.argv[1]; comm={}
for l in open(f):
    x=l.split()
    if len(x)>6 and x[5]!='m': comm[x[4]]=x[-1] if not x[-1].isdigit() else x[-2]
trim=collections.defaultdict(list); soft=collections.Counter()
for l in open(f):
    m=re.search(r'bfq(\d+)S too many requests: allocated (\d+) limit (\d+) level (\d+)',l)
    if m: trim[m.group(1)].append(int(m.group(3)))
    m=re.search(r'bfq(\d+)S raising.*coeff 3000',l)
    if m: soft[m.group(1)]+=1
pr=[p for p,c in comm.items() if c=='[pr]']
print(f, 'probes', len(pr), 'trimmed', sum(1 for p in pr if trim[p]), 'limits', collections.Counter(l for p in pr for l in trim[p]), 'softrt queues', len(soft))
