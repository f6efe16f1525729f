#!/bin/bash
# lowriter with 5 readers + 5 writers: BFQ and the agent with pin_exec, 5 start-ups each, BFQ's
# messages recorded: are the agent's slow start-ups trimmed by soft real-time ghosts in its fg group?
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v16/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v16/forefront-exec
O=/var/tmp/ff-ssuite/pn3; mkdir -p $O
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/run.log
$FF trace capture --dev vda -o $O/bfqmsg.txt -- env ITER=6 ROUNDS=1 OUT=$O/cell scripts/ssuite cell lowriter 5 5 bfq agent-pin >> $O/run.log 2>&1
echo "done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
