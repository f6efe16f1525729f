#!/bin/bash
# xterm with no background: BFQ against the agent (bin-v16), three rounds of 10 per mode, modes alternating,
# stall-probe2 per invocation (where each start-up's threads wait), to find the agent's no-background cost.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v16/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v16/forefront-exec
O=/var/tmp/ff-ssuite/sp5; mkdir -p $O
for r in 1 2 3; do for m in bfq agent; do
  echo "$m r$r start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
  python3 /var/tmp/ff-ssuite/stall-probe2.py replay-startup $O/probe-$m-r$r.txt 1 vda & P=$!
  ITER=10 ROUNDS=1 OUT=$O/$m-r$r scripts/ssuite cell xterm 0 0 $m >> $O/run.log 2>&1
  kill $P; wait $P
  echo "$m r$r end $(date -u +%T)" >> $O/run.log
done; done
echo "done $(date -u +%T)" >> $O/run.log
