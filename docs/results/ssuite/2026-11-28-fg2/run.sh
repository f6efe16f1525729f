#!/bin/bash
# fg1 continued: io.fg_group off against on where it could cost: the switch (the restore moves the
# app out of the background group through the same setting) and lowriter with no background.
# bin-v19 = main 6e8e81e.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v19/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v19/forefront-exec
L=/var/tmp/ff-ssuite/fg2.log
O=/var/tmp/ff-ssuite/fg2
run() {  # label, env, cell args...
  local label=$1; shift
  ff-quiet bash -c "echo \"cell $label start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; $* >> $L 2>&1; echo \"cell $label end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
}
run "switch 5 5" ITER=5 ROUNDS=6 OUT=$O scripts/ssuite cell switch 5 5 bfq agent agent-nofggroup
run "lowriter 0 0" ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell lowriter 0 0 bfq agent agent-nofggroup
echo "all done $(date -u +%T)" >> $L
