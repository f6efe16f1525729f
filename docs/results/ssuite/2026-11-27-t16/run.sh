#!/bin/bash
# The full S-suite table, 30 start-ups per mode, with bin-v15 (a pause holds while the foreground waits for I/O), same boot as t15 (favor_dynmods on).
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v15/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v15/forefront-exec
L=/var/tmp/ff-ssuite/t16.log
O=/var/tmp/ff-ssuite/t16
for t in xterm lowriter; do for c in "0 0" "5 0" "0 5" "5 5"; do
  ff-quiet bash -c "echo \"cell $t $c start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=3 OUT=$O /var/tmp/ff-ssuite/ssuite.v14 cell $t $c bfq agent >> $L 2>&1; echo \"cell $t $c end \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
done; done
ff-quiet bash -c "echo \"cell switch start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=5 ROUNDS=6 OUT=$O /var/tmp/ff-ssuite/ssuite.v14 cell switch 5 5 bfq agent >> $L 2>&1; echo \"cell switch end \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
echo "all done $(date -u +%T)" >> $L
