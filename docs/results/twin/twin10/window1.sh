#!/bin/sh
# twin10's one real-kernel window: BFQ's launch under update and upload with low_latency on
# and off (the weight raising that the per-launch-queue explanation rests on). Every setting
# is put back on exit.
set -u
Q=/sys/block/vda/queue
# The windows ran /tmp/twin10-bin/forefront (branch twin10 at e05f401), from /work/wt-twin10.
B=${FOREFRONT:-forefront}
OUT=${OUT:-docs/results/twin/twin10}  # run from the repository root
P=/tmp/twin10-probe
orig=$(sed 's/.*\[\(.*\)\].*/\1/' $Q/scheduler)
orig_ll=""
[ "$orig" = bfq ] && orig_ll=$(cat $Q/iosched/low_latency)
restore() {
    if [ "$orig" = bfq ]; then
        [ -n "$orig_ll" ] && echo "$orig_ll" > $Q/iosched/low_latency
    else
        echo "$orig" > $Q/scheduler
    fi
    echo "restored: scheduler $(cat $Q/scheduler), low_latency $(cat $Q/iosched/low_latency 2>/dev/null || echo -)"
}
trap restore EXIT
trap 'exit 1' INT TERM HUP
echo "start $(date -u +%H:%M:%S) scheduler was $orig (low_latency ${orig_ll:--})"
echo bfq > $Q/scheduler
echo 0 > $Q/iosched/low_latency
echo bfq > $Q/scheduler
if [ "$(cat $Q/iosched/low_latency)" != 0 ]; then
    echo "writing bfq again re-creates the scheduler: low_latency does not persist; stop"
    exit 1
fi
for c in "update 1" "update 0" "upload 1" "upload 0"; do
    set -- $c
    echo $2 > $Q/iosched/low_latency
    echo "== $1 low_latency=$2 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
    scripts/twin-probe $P/$1-ll$2 --run sh -c \
        "$B bench run --fg launch --bg $1 --runs 5 --mode bfq --format json > $OUT/launch-$1-bfq-ll$2.json 2> $OUT/launch-$1-bfq-ll$2.err"
    echo "low_latency after the run: $(cat $Q/iosched/low_latency), scheduler $(cat $Q/scheduler)"
done
echo "end $(date -u +%H:%M:%S)"
