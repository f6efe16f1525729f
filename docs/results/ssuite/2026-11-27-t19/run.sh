#!/bin/bash
# Fresh boot (favordynmods off). First: xterm/none with the agent's favor_dynmods off (agent-nodyn)
# against BFQ, before any agent turns favordynmods on for the rest of the boot. Then the full table,
# BFQ, the agent at its defaults and the pause alone (agent-noio), 3 interleaved rounds of 10 per
# mode and cell, each cell alone under ff-quiet; the switch cell last. bin-v18 = main 5849295.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v18/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v18/forefront-exec
L=/var/tmp/ff-ssuite/t19.log
O=/var/tmp/ff-ssuite/t19
run() {  # label, env, cell args...
  local label=$1; shift
  ff-quiet bash -c "echo \"cell $label start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg) dyn-msgs \$(dmesg | grep -ci favordyn)\" >> $L; $* >> $L 2>&1; echo \"cell $label end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
}
run "nodyn xterm 0 0" ITER=10 ROUNDS=3 OUT=$O-nodyn scripts/ssuite cell xterm 0 0 bfq agent-nodyn
for tc in "xterm 5 0" "lowriter 5 5" "lowriter 0 5" "xterm 0 0" "xterm 0 5" "xterm 5 5" "lowriter 5 0" "lowriter 0 0"; do
  run "$tc" ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell $tc bfq agent agent-noio
done
run "switch 5 5" ITER=5 ROUNDS=6 OUT=$O scripts/ssuite cell switch 5 5 bfq agent agent-noio
echo "all done $(date -u +%T)" >> $L
