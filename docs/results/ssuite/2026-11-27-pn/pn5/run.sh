#!/bin/bash
# lowriter with 5 readers + 5 writers (t17's worst cell, 1.30x): BFQ against the agent of bin-v17
# at its defaults (pin_exec now on); 3 rounds of 10 per mode, interleaved; no tracing.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v17/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v17/forefront-exec
O=/var/tmp/ff-ssuite/pn5; mkdir -p $O
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/run.log
ITER=10 ROUNDS=3 OUT=$O/cell scripts/ssuite cell lowriter 5 5 bfq agent >> $O/run.log 2>&1
echo "done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
