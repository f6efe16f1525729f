#!/bin/bash
# The full S-suite table, 30 start-ups per mode, with bin-v17 (pin_exec on by default), same boot as t17 (favor_dynmods on).
# Cells in the order of what is left: t17's four missed cells first.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v17/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v17/forefront-exec
L=/var/tmp/ff-ssuite/t18.log
O=/var/tmp/ff-ssuite/t18
for tc in "xterm 5 0" "lowriter 5 5" "lowriter 0 5" "xterm 0 0" "xterm 0 5" "xterm 5 5" "lowriter 5 0" "lowriter 0 0"; do
  ff-quiet bash -c "echo \"cell $tc start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell $tc bfq agent >> $L 2>&1; echo \"cell $tc end \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
done
ff-quiet bash -c "echo \"cell switch start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=5 ROUNDS=6 OUT=$O scripts/ssuite cell switch 5 5 bfq agent >> $L 2>&1; echo \"cell switch end \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
echo "all done $(date -u +%T)" >> $L
