#!/bin/bash
# lowriter under 5 readers + 5 writers: BFQ, the agent (bin-v16), and the agent with pause.nr_requests = 2048
# (agent-tags: more request tags during each pause), two rounds of 10 per mode, stall-probe2 (with the
# scheduler's tags sampled) per invocation.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v16/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v16/forefront-exec
O=/var/tmp/ff-ssuite/sp3; mkdir -p $O
for r in 1 2; do for m in bfq agent agent-tags; do
  echo "$m r$r start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
  python3 /var/tmp/ff-ssuite/stall-probe2.py replay-startup $O/probe-$m-r$r.txt 2 vda & P=$!
  ITER=10 ROUNDS=1 OUT=$O/$m-r$r scripts/ssuite cell lowriter 5 5 $m >> $O/run.log 2>&1
  kill $P; wait $P
  echo "$m r$r end $(date -u +%T)" >> $O/run.log
done; done
echo "done $(date -u +%T)" >> $O/run.log
