#!/bin/sh
# twin10's second window: BFQ's launch under update with BFQ selected anew for each sample (the
# disk's scheduler mq-deadline beforehand, as in the quiet r15 runs) against one BFQ instance kept
# across the samples (bfq selected beforehand, as in the first window). Put back on exit.
set -u
Q=/sys/block/vda/queue
# The windows ran /tmp/twin10-bin/forefront (branch twin10 at e05f401), from /work/wt-twin10.
B=${FOREFRONT:-forefront}
OUT=${OUT:-docs/results/twin/twin10}  # run from the repository root
P=/tmp/twin10-probe2
orig=$(sed 's/.*\[\(.*\)\].*/\1/' $Q/scheduler)
orig_ll=""
[ "$orig" = bfq ] && orig_ll=$(cat $Q/iosched/low_latency)
restore() {
    echo "$orig" > $Q/scheduler
    if [ "$orig" = bfq ] && [ -n "$orig_ll" ]; then echo "$orig_ll" > $Q/iosched/low_latency; fi
    echo "restored: scheduler $(cat $Q/scheduler)"
}
trap restore EXIT
trap 'exit 1' INT TERM HUP
echo "start $(date -u +%H:%M:%S) scheduler was $orig (low_latency ${orig_ll:--})"
for c in "fresh 1" "kept 1" "fresh 2" "kept 2"; do
    set -- $c
    if [ $1 = fresh ]; then echo mq-deadline > $Q/scheduler; else echo mq-deadline > $Q/scheduler; echo bfq > $Q/scheduler; fi
    echo "== $1 $2 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) scheduler $(cat $Q/scheduler)"
    scripts/twin-probe $P/$1-$2 --run sh -c \
        "$B bench run --fg launch --bg update --runs 5 --mode bfq --format json > $OUT/launch-update-bfq-$1-$2.json 2> $OUT/launch-update-bfq-$1-$2.err"
done
echo "end $(date -u +%H:%M:%S)"
