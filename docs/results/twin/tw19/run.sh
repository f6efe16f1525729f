#!/bin/sh
# twin19: a fresh calibration and the four launch cells and the switch under update, 15 runs a
# mode, with the binary whose model charges a deferred preemption's wait to the woken task. Run alone:
#   ff-quiet docs/results/twin/tw19/run.sh /var/tmp/tw19/ff /var/tmp/tw19/out
set -e
FF=$1; OUT=$2
mkdir -p "$OUT"; cd "$OUT"
echo "binary $FF; started $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)" > README
"$FF" bench calibrate -o this-vm-tw19-raw.toml --force > calibrate.txt 2>&1
echo "calibrate rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
for bg in update upload copy mixed; do
  "$FF" bench run --fg launch --bg $bg --runs 15 --mode alone --mode baseline --mode bfq --mode agent --format json > launch-$bg-r15.json 2> launch-$bg-r15.err
  echo "bench $bg rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
done
"$FF" bench run --fg switch --bg update --runs 15 --mode alone --mode baseline --mode bfq --mode agent --format json > switch-update-r15.json 2> switch-update-r15.err
echo "bench switch rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
echo "finished $(date -u +%FT%TZ)" >> README
