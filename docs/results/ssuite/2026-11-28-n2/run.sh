#!/bin/bash
# n2: n1 again without agent-passive (more start-ups for the helper's cost with no agent),
# BFQ; the start-up through forefront-exec with no agent listening; the agent at its defaults.
# 3 interleaved rounds of 10 per mode, alone under ff-quiet. bin-v21 = main 347a42e (the binaries of t21).
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v21/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v21/forefront-exec
L=/var/tmp/ff-ssuite/n2.log
O=/var/tmp/ff-ssuite/n2
ff-quiet bash -c "echo \"cell xterm 0 0 start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell xterm 0 0 bfq exec-noagent agent >> $L 2>&1; echo \"cell end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
echo "all done $(date -u +%T)" >> $L
