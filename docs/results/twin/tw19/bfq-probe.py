#!/usr/bin/env python3
"""twin19: what BFQ did with each launch's queue in a `bfq-probe.sh` trace (the ftrace `blk`
tracer: block events and BFQ's `bfq_log_bfqq` messages).

Per launch process (`ff-op-launch`, in the order they ran, beside the bench's samples in the
JSON, warm-up first): the requests its own sync queue (`bfq<pid>S`) took, its weight-raising
coefficient, and whether BFQ merged it into a shared queue (`merging with queue`: a close
cooperator, `bfq_setup_cooperator`), then the samples of merged and unmerged launches.
Usage: bfq-probe.py TRACE [JSON]
"""
import json, re, sys, collections

CTX = re.compile(r'^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+):\s+\d+,\d+\s+(?:\d+,\d+\s+)?(\S+)\s+(\S+)\s*(.*)$')
ev = []
for line in open(sys.argv[1]):
    m = CTX.match(line)
    if m:
        comm, pid, t, act, rwbs, rest = m.groups()
        ev.append((float(t), comm, int(pid), act, rwbs, rest))
launch = [p for p in dict.fromkeys(pid for t, c, pid, a, r, rest in ev if c.startswith('ff-op-launch') and a == 'Q')]
qname = lambda p: re.compile(rf'\bbfq{p}S\b')
norm = lambda s: re.sub(r'-?\d+', '#', s)
rows = []
for p in launch:
    rx = qname(p)
    own = [e for e in ev if e[3] == 'm' and rx.search(e[5])]
    merged = [e for e in own if 'merging with queue' in e[5]]
    raised = [e for e in own if 'raising period' in e[5]]
    coeff = re.search(r'old coeff (\d+)', raised[0][5]).group(1) if raised else '-'
    served = sum(1 for e in own if re.search(r'\badd_request\b', e[5]))
    rows.append(dict(pid=p, merged=merged[0][0] if merged else None, first=own[0][0] if own else None,
                     coeff=coeff, served=served, reads=sum(1 for e in ev if e[2] == p and e[3] == 'Q')))
samples = []
if len(sys.argv) > 2:
    j = json.load(open(sys.argv[2]))
    samples = [s for m in j['modes'].values() for s in m['samples_ms']]
# The warm-up is not in the JSON's samples: the first launch process when there is one more.
off = len(rows) - len(samples)
print(f"launch processes: {len(rows)}; samples in the JSON: {len(samples)} (the first {off} a warm-up)")
print("pid     sample ms  own queue's requests  weight-raised (coeff)  merged into a shared queue")
for i, r in enumerate(rows):
    ms = f"{samples[i - off]:9.1f}" if 0 <= i - off < len(samples) else "  warm-up"
    mg = f"yes, {r['merged'] - r['first']:.2f} s after its first request" if r['merged'] else "no"
    print(f"{r['pid']}  {ms}  {r['served']:20d}  {r['coeff']:>21}  {mg}")
timed = [(samples[i - off], r['merged'] is not None) for i, r in enumerate(rows) if 0 <= i - off < len(samples)]
for name, want in (("merged", True), ("not merged", False)):
    xs = sorted(ms for ms, m in timed if m == want)
    if xs:
        print(f"{name}: {len(xs)} samples, median {xs[len(xs) // 2]:.1f} ms, min {xs[0]:.1f}, max {xs[-1]:.1f}")
    else:
        print(f"{name}: 0 samples")
