#!/bin/bash
# t17's two other missed cells, xterm with 5 readers and lowriter with 5 writers: BFQ against the
# agent of bin-v17 at its defaults (pin_exec on); 3 rounds of 10 per mode, interleaved, untraced.
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v17/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v17/forefront-exec
O=/var/tmp/ff-ssuite/pn6; mkdir -p $O
for tc in "xterm 5 0" "lowriter 0 5"; do
  echo "cell $tc start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
  ITER=10 ROUNDS=3 OUT=$O/cell scripts/ssuite cell $tc bfq agent >> $O/run.log 2>&1
  echo "cell $tc done $(date -u +%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/run.log
done
