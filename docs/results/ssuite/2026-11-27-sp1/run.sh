#!/bin/bash
# Where a LibreOffice start-up waits under 5 writers: stall-probe over one round of 10 per mode,
# each mode alone (bfq, then the agent bin-v15, then bfq again), under ff-quiet.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v15/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v15/forefront-exec
O=/var/tmp/ff-ssuite/sp1; mkdir -p $O
for m in bfq agent; do
  python3 /var/tmp/ff-ssuite/stall-probe.py replay-startup $O/probe-$m.txt 2 & P=$!
  ITER=10 ROUNDS=1 OUT=$O/$m /var/tmp/ff-ssuite/ssuite.v14 cell lowriter ${R:-0} ${W:-5} $m >> $O/run.log 2>&1
  kill $P; wait $P
done
echo "done $(date -u +%T)" >> $O/run.log
