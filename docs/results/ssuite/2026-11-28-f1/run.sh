#!/bin/bash
# The first start-up of a round traced (issue 31): where each start-up's threads wait
# (scripts/stall-probe, STALLS=1), BFQ against the agent with lock_memory (bin-v22 = main 4981cb6),
# xterm under 5 readers (the cell whose first start-up still paid with lock_memory: +55 ms in t22),
# 4 interleaved rounds of 5 per mode.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v22/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v22/forefront-exec
L=/var/tmp/ff-ssuite/f1.log
O=/var/tmp/ff-ssuite/f1
ff-quiet bash -c "echo \"cell xterm 5 0 start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; STALLS=1 ITER=5 ROUNDS=4 OUT=$O scripts/ssuite cell xterm 5 0 bfq agent >> $L 2>&1; echo \"cell end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
echo "all done $(date -u +%T)" >> $L
