#!/bin/bash
# Which limit makes a LibreOffice start-up wait for a request under 5 writers: ftrace's blk tracer
# (BFQ's messages; regular events masked off: act_mask notify) over one round of 5 per mode.
T=/sys/kernel/tracing
O=/var/tmp/ff-ssuite/tl1; mkdir -p $O
cd /work/main
export FF=/var/tmp/ff-ssuite/bin-v15/forefront FFEXEC=/var/tmp/ff-ssuite/bin-v15/forefront-exec
for m in bfq agent; do
  echo 0 > $T/tracing_on; echo nop > $T/current_tracer; echo 0 > $T/options/overwrite
  echo 65536 > $T/buffer_size_kb; echo > $T/trace
  echo blk > $T/current_tracer
  echo notify > /sys/block/vda/trace/act_mask
  echo 1 > /sys/block/vda/trace/enable
  echo 1 > $T/tracing_on
  ITER=5 ROUNDS=1 OUT=$O/$m /var/tmp/ff-ssuite/ssuite.v14 cell lowriter 0 5 $m >> $O/run.log 2>&1
  echo 0 > $T/tracing_on
  echo 0 > /sys/block/vda/trace/enable
  grep -a "replay-startup\|too many" $T/trace > $O/$m.trace
  wc -l $T/trace >> $O/run.log
  echo nop > $T/current_tracer
done
echo "done $(date -u +%T)" >> $O/run.log
