#!/bin/sh
# twin19: the bench's BFQ launch cell with the kernel's blk tracer on the disk (ftrace's `blk`
# tracer: blktrace's events and BFQ's own log messages, `bfq_log_bfqq`, without opening the
# device node, which this machine's device cgroup refuses), for `bfq-probe.py` to tell what BFQ
# did with each launch's queue (weight raising, bursts) in its slow and fast samples.
# Usage (root, alone): ff-quiet bfq-probe.sh FOREFRONT OUTDIR [BG] [RUNS] [DEV]
set -e
FF=$1; OUT=$2; BG=${3:-update}; RUNS=${4:-15}; DEV=${5:-vda}; mkdir -p "$OUT"
T=/sys/kernel/tracing
[ -f $T/current_tracer ] || mount -t tracefs nodev $T
old=$(cat $T/buffer_size_kb)
restore() {
  echo 0 > $T/tracing_on; echo 0 > /sys/block/$DEV/trace/enable; echo nop > $T/current_tracer
  echo 0 > $T/events/sched/sched_process_exec/enable
  echo > $T/trace; echo "$old" > $T/buffer_size_kb
}
trap restore EXIT INT TERM
echo 0 > $T/tracing_on; echo > $T/trace; echo 262144 > $T/buffer_size_kb
echo 1 > /sys/block/$DEV/trace/enable
echo blk > $T/current_tracer
echo 1 > $T/events/sched/sched_process_exec/enable
echo 1 > $T/tracing_on
"$FF" bench run --fg launch --bg "$BG" --runs "$RUNS" --mode bfq --format json > "$OUT/bfq-$BG.json" 2> "$OUT/bfq-$BG.err"
echo 0 > $T/tracing_on
cat $T/trace > "$OUT/bfq-trace-$BG.txt"
