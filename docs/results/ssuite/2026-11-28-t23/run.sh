#!/bin/bash
# The full table with the write-back hold through the expiry (no full write-back pass at a pause's end), BFQ against the agent,
# 3 interleaved rounds of 10 per mode and cell,
# each cell alone under ff-quiet; the switch cell last (6 rounds of 5). bin-v23 = main 50ebfc9.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v23/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v23/forefront-exec
L=/var/tmp/ff-ssuite/t23.log
O=/var/tmp/ff-ssuite/t23
run() {  # label, env, cell args...
  local label=$1; shift
  ff-quiet bash -c "echo \"cell $label start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; $* >> $L 2>&1; echo \"cell $label end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
}
for tc in "xterm 5 0" "lowriter 5 5" "lowriter 0 5" "xterm 0 0" "xterm 0 5" "xterm 5 5" "lowriter 5 0" "lowriter 0 0"; do
  run "$tc" ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell $tc bfq agent
done
run "switch 5 5" ITER=5 ROUNDS=6 OUT=$O scripts/ssuite cell switch 5 5 bfq agent
echo "all done $(date -u +%T)" >> $L
