#!/bin/bash
# xterm with no background, after t21's 1.12x: what of the agent costs the start-up there?
# BFQ; the agent at its defaults; agent-passive (the agent runs, nobody calls it); exec-noagent
# (the start-up through forefront-exec, no agent listening). 3 interleaved rounds of 10 per mode,
# alone under ff-quiet. bin-v21 = main 347a42e (the binaries of t21).
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v21/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v21/forefront-exec
L=/var/tmp/ff-ssuite/n1.log
O=/var/tmp/ff-ssuite/n1
ff-quiet bash -c "echo \"cell xterm 0 0 start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell xterm 0 0 bfq agent agent-passive exec-noagent >> $L 2>&1; echo \"cell end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
echo "all done $(date -u +%T)" >> $L
