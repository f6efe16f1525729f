#!/bin/bash
# xterm with 5 readers, untraced: BFQ, the agent at its defaults, without its I/O side
# (agent-noio: no groups, weights or idle class; the pause stays) and without its fg group
# (agent-nofggroup), 2 rounds of 10 per mode, interleaved, bin-v17. rd3 found the I/O side
# alone (agent-nopause) letting the readers through in 16 of 20 start-ups.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v17/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v17/forefront-exec
O=/var/tmp/ff-ssuite/rd4; mkdir -p $O
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/run.log
ITER=10 ROUNDS=2 OUT=$O/cell scripts/ssuite cell xterm 5 0 bfq agent agent-noio agent-nofggroup >> $O/run.log 2>&1
echo "done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
