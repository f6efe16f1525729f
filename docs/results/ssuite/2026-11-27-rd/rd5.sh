#!/bin/bash
# lowriter with 5 readers + 5 writers, untraced: BFQ, the agent at its defaults and the pause
# alone (agent-noio), 2 rounds of 10 per mode, interleaved, bin-v17: does rd4's finding in the
# readers' cell (the pause alone fastest) hold in the table's worst cell?
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v17/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v17/forefront-exec
O=/var/tmp/ff-ssuite/rd5; mkdir -p $O
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/run.log
ITER=10 ROUNDS=2 OUT=$O/cell scripts/ssuite cell lowriter 5 5 bfq agent agent-noio >> $O/run.log 2>&1
echo "done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
