#!/bin/bash
# xterm with no background: BFQ, the agent of bin-v17 at its defaults (pin_exec now on), with
# io.fresh_fg_group, and with pin_exec off (the old default); 3 rounds of 10 per mode, interleaved;
# BFQ's messages recorded.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v17/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v17/forefront-exec
O=/var/tmp/ff-ssuite/pn4; mkdir -p $O
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) build $(git -C /work/main rev-parse --short HEAD)+working tree (pin_exec default on, fresh_fg_group)" > $O/run.log
$FF trace capture --dev vda -o $O/bfqmsg.txt -- env ITER=10 ROUNDS=3 OUT=$O/cell scripts/ssuite cell xterm 0 0 bfq agent agent-fresh agent-nopin >> $O/run.log 2>&1
echo "done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
