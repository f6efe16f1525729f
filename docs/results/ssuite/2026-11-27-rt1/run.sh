#!/bin/bash
# Does the real-time I/O class for the start-up beat BFQ's low_latency raising? bfq vs bfq-rt vs agent.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v15/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v15/forefront-exec
L=/var/tmp/ff-ssuite/rt1.log
O=/var/tmp/ff-ssuite/rt1
for c in "xterm 0 5" "lowriter 5 5"; do
  ff-quiet bash -c "echo \"cell $c start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=2 OUT=$O scripts/ssuite cell $c bfq bfq-rt agent >> $L 2>&1; echo \"cell end \$(date -u +%T)\" >> $L"
done
echo "all done $(date -u +%T)" >> $L
