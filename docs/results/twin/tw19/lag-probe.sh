#!/bin/sh
# twin19: the bench's copy cell (baseline, 3 runs) with sched_switch, sched_wakeup and
# sched_migrate_task traced through tracefs, for `lag-probe.py` to classify the launch's long
# waits for a CPU by what happened on its CPU before it blocked (alone or beside a worker) and
# whether the worker it waits behind had just migrated there.
# Usage (root, alone): ff-quiet lag-probe.sh FOREFRONT OUTDIR [BG]
set -e
FF=$1; OUT=$2; BG=${3:-copy}; mkdir -p "$OUT"
T=/sys/kernel/tracing
[ -d $T/events/sched ] || mount -t tracefs nodev $T
old=$(cat $T/buffer_size_kb)
EV="sched_switch sched_wakeup sched_wakeup_new sched_migrate_task"
restore() { echo 0 > $T/tracing_on; for e in $EV; do echo 0 > $T/events/sched/$e/enable; done; echo > $T/trace; echo "$old" > $T/buffer_size_kb; }
trap restore EXIT INT TERM
echo 0 > $T/tracing_on; echo > $T/trace; echo 131072 > $T/buffer_size_kb
for e in $EV; do echo 1 > $T/events/sched/$e/enable; done
echo 1 > $T/tracing_on
"$FF" bench run --fg launch --bg "$BG" --runs 3 --mode baseline --format json > "$OUT/run-$BG.json" 2> "$OUT/run-$BG.err"
echo 0 > $T/tracing_on
cat $T/trace > "$OUT/trace-$BG.txt"
