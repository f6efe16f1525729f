#!/bin/bash
# The first start-up of a round, A/B in one run (issue 31): the agent with lock_memory
# (bin-v22 = main 4981cb6, mode agent) against the build before it (bin-v21 = main 347a42e,
# mode agent-alt) and BFQ, xterm under 5 writers (the cell whose first start-up paid most
# before: +66 ms over 32 rounds), 8 interleaved rounds of 3 per mode.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v22/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v22/forefront-exec
export FF_ALT=/var/tmp/ff-ssuite/bin-v21/forefront FFEXEC_ALT=/var/tmp/ff-ssuite/bin-v21/forefront-exec
L=/var/tmp/ff-ssuite/f2.log
O=/var/tmp/ff-ssuite/f2
ff-quiet bash -c "echo \"cell xterm 0 5 start \$(date -u +%T) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L; ITER=3 ROUNDS=8 OUT=$O scripts/ssuite cell xterm 0 5 bfq agent agent-alt >> $L 2>&1; echo \"cell end \$(date -u +%T) rc=\$? load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $L"
echo "all done $(date -u +%T)" >> $L
