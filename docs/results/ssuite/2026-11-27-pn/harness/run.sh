#!/bin/bash
# N launches of ./sr inside blkio cgroup $CG (created here, removed at the end), BFQ on vda.
cd /var/tmp/srt
CG=/sys/fs/cgroup/blkio/${CGNAME:-fftest}
old=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/block/vda/queue/scheduler)
cleanup() { [ -d $CG ] && { for p in $(cat $CG/cgroup.procs); do echo $p > /sys/fs/cgroup/blkio/cgroup.procs; done; rmdir $CG; }; echo $old > /sys/block/vda/queue/scheduler; }
trap cleanup EXIT
echo bfq > /sys/block/vda/queue/scheduler
[ -n "$CGNAME" ] && mkdir -p $CG
for i in $(seq 1 ${N:-8}); do
  if [ -n "$CGNAME" ]; then ( echo $BASHPID > $CG/cgroup.procs; exec ./sr data.bin $((i % 10)) ${IDLE:-1000} ); else ./sr data.bin $((i % 10)) ${IDLE:-1000}; fi
  sleep ${GAP:-0.3}
  if [ -n "$CGNAME" ]; then ( echo $BASHPID > $CG/cgroup.procs; exec ./pr data.bin ); else ./pr data.bin; fi
  sleep 0.3
done
