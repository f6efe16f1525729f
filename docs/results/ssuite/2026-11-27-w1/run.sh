#!/bin/bash
# A/B of the idle-end fix: agent = bin-v15 (pause holds while the FG waits for I/O), agent-alt = bin-v14.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v15/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v15/forefront-exec
export FF_ALT=/var/tmp/ff-ssuite/bin-v14/forefront FFEXEC_ALT=/var/tmp/ff-ssuite/bin-v14/forefront-exec
L=/var/tmp/ff-ssuite/w1.log
O=/var/tmp/ff-ssuite/w1
for c in "5 5" "0 5"; do
  ff-quiet bash -c "echo \"cell lowriter $c start \$(date -u +%T)\" >> $L; ITER=10 ROUNDS=2 OUT=$O /var/tmp/ff-ssuite/ssuite.v14 cell lowriter $c bfq agent agent-alt >> $L 2>&1; echo \"cell end \$(date -u +%T)\" >> $L"
done
echo "all done $(date -u +%T)" >> $L
