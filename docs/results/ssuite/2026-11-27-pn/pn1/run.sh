#!/bin/bash
# xterm with no background: BFQ, the agent (bin-v16, pin_exec off as by default) and the agent with
# pin_exec; 3 rounds of 10 per mode, interleaved; BFQ's messages recorded (soft real-time raising
# and "too many requests" trims per start-up).
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v16/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v16/forefront-exec
O=/var/tmp/ff-ssuite/pn1; mkdir -p $O
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > $O/run.log
$FF trace capture --dev vda -o $O/bfqmsg.txt -- env ITER=10 ROUNDS=3 OUT=$O/cell scripts/ssuite cell xterm 0 0 bfq agent agent-pin >> $O/run.log 2>&1
echo "done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
