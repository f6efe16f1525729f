#!/bin/bash
# Like run.sh, but every launch and its probe run in a blkio cgroup of their own (fftest-$i),
# removed afterwards; with NOLAUNCH=1 only the probe runs (the control).
cd /var/tmp/srt
B=/sys/fs/cgroup/blkio
old=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/block/vda/queue/scheduler)
cleanup() { for d in $B/fftest-*; do [ -d $d ] || continue; for p in $(cat $d/cgroup.procs); do echo $p > $B/cgroup.procs; done; rmdir $d; done; echo $old > /sys/block/vda/queue/scheduler; }
trap cleanup EXIT
echo bfq > /sys/block/vda/queue/scheduler
for i in $(seq 1 ${N:-6}); do
  CG=$B/fftest-$i; mkdir $CG
  [ -z "$NOLAUNCH" ] && ( echo $BASHPID > $CG/cgroup.procs; exec ./sr data.bin $((i % 10)) ${IDLE:-1000} )
  sleep ${GAP:-0.3}
  ( echo $BASHPID > $CG/cgroup.procs; exec ./pr data.bin )
  rmdir $CG
  sleep 0.3
done
