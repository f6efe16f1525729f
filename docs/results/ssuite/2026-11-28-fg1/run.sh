#!/bin/bash
# The foreground's own blkio group (io.fg_group) on the two cells that decide issue 31's bar:
# lowriter under 5 writers and under 5 readers + 5 writers. BFQ, the agent at its defaults and
# the agent with io.fg_group = false, 3 interleaved rounds of 10 per mode, each cell alone under
# ff-quiet. bin-v19 = main 6e8e81e (the agent's I/O side as in bin-v18/t19; the watchdog's
# restore is the only agent change since, and it acts only when the agent dies).
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v19/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v19/forefront-exec
L=/var/tmp/ff-ssuite/fg1.log
O=/var/tmp/ff-ssuite/fg1
run() {  # label, env, cell args...
  local label=$1; shift
  ff-quiet bash -c "echo \"cell $label start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; $* >> $L 2>&1; echo \"cell $label end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
}
for tc in "lowriter 0 5" "lowriter 5 5"; do
  run "$tc" ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell $tc bfq agent agent-nofggroup
done
echo "all done $(date -u +%T)" >> $L
