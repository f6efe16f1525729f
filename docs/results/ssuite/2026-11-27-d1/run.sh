#!/bin/bash
# The agent's cost with no background, taken apart: BFQ alone; BFQ with the start-up through
# forefront-exec and no agent listening; the agent running but never called (agent-passive);
# the agent at its defaults. bin-v15, xterm and lowriter traces, 2 interleaved rounds of 10.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v15/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v15/forefront-exec
L=/var/tmp/ff-ssuite/d1.log
O=/var/tmp/ff-ssuite/d1
for t in xterm; do
  ff-quiet bash -c "echo \"cell $t 0 0 start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=2 OUT=$O /var/tmp/ff-ssuite/ssuite.v14 cell $t 0 0 bfq exec-noagent agent-passive agent >> $L 2>&1; echo \"cell end \$(date -u +%T)\" >> $L"
done
echo "all done $(date -u +%T)" >> $L
