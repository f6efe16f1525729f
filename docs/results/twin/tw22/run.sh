#!/bin/sh
# twin22: tw20/run.sh with tw22's names: two calibrations in a row (repeatability), then the four
# launch cells and the switch under update, 15 runs a mode. Run alone:
#   ff-quiet docs/results/twin/tw22/run.sh FF FF OUTDIR
set -e
FF=$1; OLD=$2; OUT=$3
mkdir -p "$OUT"; cd "$OUT"
echo "binary $FF (previous: $OLD); started $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)" > README
"$FF" bench calibrate -o this-vm-tw22-raw.toml --force > calibrate.txt 2>&1
echo "calibrate rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
"$OLD" bench calibrate -o this-vm-tw22-old-raw.toml --force > calibrate-old.txt 2>&1
echo "calibrate (previous binary) rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
for bg in update upload copy mixed; do
  "$FF" bench run --fg launch --bg $bg --runs 15 --mode alone --mode baseline --mode bfq --mode agent --format json > launch-$bg-r15.json 2> launch-$bg-r15.err
  echo "bench $bg rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
done
"$FF" bench run --fg switch --bg update --runs 15 --mode alone --mode baseline --mode bfq --mode agent --format json > switch-update-r15.json 2> switch-update-r15.err
echo "bench switch rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
echo "finished $(date -u +%FT%TZ)" >> README
