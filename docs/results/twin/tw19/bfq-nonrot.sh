#!/bin/sh
# twin19: bfq-probe.sh with the disk marked non-rotational (queue/rotational = 0; restored on any
# exit): BFQ then merges no queues on a device with internal queueing (`bfq_setup_cooperator`
# returns at once when `nonrot_with_queueing`), the mechanism switched off.
# Usage (root, alone): ff-quiet bfq-nonrot.sh FOREFRONT OUTDIR [BG] [RUNS] [DEV]
set -e
DEV=${5:-vda}
R=/sys/block/$DEV/queue/rotational
old=$(cat $R)
trap 'echo "$old" > $R' EXIT INT TERM
echo 0 > $R
"$(dirname "$0")/bfq-probe.sh" "$@"
