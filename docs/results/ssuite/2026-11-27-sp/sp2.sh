#!/bin/bash
# Per start-up: where lowriter's start-ups wait under 5 readers + 5 writers, BFQ alone vs the agent (bin-v16),
# two rounds of 10 per mode, modes alternating, stall-probe2 per invocation (one line per start-up process).
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v16/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v16/forefront-exec
O=/var/tmp/ff-ssuite/sp2; mkdir -p $O
for r in 1 2; do for m in bfq agent; do
  echo "$m r$r start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
  python3 /var/tmp/ff-ssuite/stall-probe2.py replay-startup $O/probe-$m-r$r.txt 2 vda & P=$!
  ITER=10 ROUNDS=1 OUT=$O/$m-r$r scripts/ssuite cell lowriter 5 5 $m >> $O/run.log 2>&1
  kill $P; wait $P
  echo "$m r$r end $(date -u +%T)" >> $O/run.log
done; done
echo "done $(date -u +%T)" >> $O/run.log
