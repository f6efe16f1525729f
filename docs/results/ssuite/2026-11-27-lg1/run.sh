#!/bin/bash
# A/B of the log thread: agent = bin-v16 (log lines written by a thread of their own), agent-alt = bin-v15 (log written before the reply).
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v16/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v16/forefront-exec
export FF_ALT=/var/tmp/ff-ssuite/bin-v15/forefront FFEXEC_ALT=/var/tmp/ff-ssuite/bin-v15/forefront-exec
L=/var/tmp/ff-ssuite/lg1.log
O=/var/tmp/ff-ssuite/lg1
for c in "xterm 0 5" "lowriter 5 5"; do
  ff-quiet bash -c "echo \"cell $c start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=2 OUT=$O scripts/ssuite cell $c bfq agent agent-alt >> $L 2>&1; echo \"cell end \$(date -u +%T)\" >> $L"
done
echo "all done $(date -u +%T)" >> $L
