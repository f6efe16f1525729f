#!/bin/bash
# lowriter/5 + 5, the cell t20 missed in both modes: BFQ, io.fg_group = "switch", and the same
# with the pause's write-back hold off or the pause off. bin-v20 = main 20ea096.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v20/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v20/forefront-exec
L=/var/tmp/ff-ssuite/k1.log
O=/var/tmp/ff-ssuite/k1
run() {  # label, env, cell args...
  local label=$1; shift
  ff-quiet bash -c "echo \"cell $label start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; $* >> $L 2>&1; echo \"cell $label end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
}
run "lowriter 5 5" ITER=10 ROUNDS=3 OUT=$O scripts/ssuite cell lowriter 5 5 bfq agent-fgswitch agent-fgswitch-nohold agent-fgswitch-nopause
echo "all done $(date -u +%T)" >> $L
