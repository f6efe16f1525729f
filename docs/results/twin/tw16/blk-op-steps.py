import sys,re,collections,statistics as st
for fn in sys.argv[1:]:
    seq=[]  # op-context events in order
    for l in open(fn):
        f=l.split()
        if len(f)<7 or not l.rstrip().endswith(']') and '[ff-op-launch]' not in l: pass
        if '[ff-op-launch]' not in l: continue
        seq.append((float(f[3]),f[5],f[7] if len(f)>7 else ''))
    # gaps between consecutive op-context events by (prev action -> next action)
    g=collections.defaultdict(list)
    for (t0,a0,s0),(t1,a1,s1) in zip(seq,seq[1:]):
        g[(a0,a1)].append((t1-t0)*1e6)
    print(fn, len(seq))
    for k,v in sorted(g.items(), key=lambda kv:-sum(kv[1]))[:12]:
        print(f"  {k[0]:>2}->{k[1]:<2} n={len(v):5d} sum={sum(v)/1e3:8.1f} ms p50={st.median(v):8.1f} us p90={sorted(v)[int(len(v)*.9)]:8.1f}")
