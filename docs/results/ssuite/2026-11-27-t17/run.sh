#!/bin/bash
# The full S-suite table, 30 start-ups per mode, with bin-v16 (the agent's log written by a thread of its own), same boot as t16 (favor_dynmods on).
# Cells in the order of what is left: the three cells t16 missed first.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v16/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v16/forefront-exec
L=/var/tmp/ff-ssuite/t17.log
O=/var/tmp/ff-ssuite/t17
for tc in "xterm 0 0" "xterm 0 5" "lowriter 5 5" "xterm 5 5" "lowriter 0 5" "xterm 5 0" "lowriter 5 0" "lowriter 0 0"; do
  ff-quiet bash -c "echo \"cell $tc start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell $tc bfq agent >> $L 2>&1; echo \"cell $tc end \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
done
ff-quiet bash -c "echo \"cell switch start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=5 ROUNDS=6 OUT=$O scripts/ssuite cell switch 5 5 bfq agent >> $L 2>&1; echo \"cell switch end \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
echo "all done $(date -u +%T)" >> $L
