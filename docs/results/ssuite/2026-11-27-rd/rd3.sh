#!/bin/bash
# xterm with 5 readers, traced: BFQ, the agent at its defaults and the agent without its
# pause (agent-nopause), 2 rounds of 10 per mode, interleaved, bin-v17.
# Is the agent's extra device time per request (rd1, rd2) the pause's (the freeze settling under the start-up)?
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v17/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v17/forefront-exec
O=/var/tmp/ff-ssuite/rd3; mkdir -p $O
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/run.log
$FF trace capture --dev vda -o $O/blk.txt -- env ITER=10 ROUNDS=2 OUT=$O/cell scripts/ssuite cell xterm 5 0 bfq agent agent-nopause >> $O/run.log 2>&1
echo "done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
