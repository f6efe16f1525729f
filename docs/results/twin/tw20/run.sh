#!/bin/sh
# twin20: a calibration whose large requests reach the device whole (huge-page buffers), one by
# the previous binary (its O_DIRECT 4 MiB requests cut to 1016 KiB by max_segments) in the same
# window, then the four launch cells and the switch under update, 15 runs a mode. Run alone:
#   ff-quiet docs/results/twin/tw20/run.sh /var/tmp/tw20/ff-new /var/tmp/tw20/ff /var/tmp/tw20/out [TAG]
# TAG (default tw20) names the calibration files this-vm-TAG-raw.toml, this-vm-TAG-old-raw.toml
# (twin22: `... FF FF OUT tw22`, the same binary twice: two calibrations in a row).
set -e
FF=$1; OLD=$2; OUT=$3; TAG=${4:-tw20}
mkdir -p "$OUT"; cd "$OUT"
echo "binary $FF (previous: $OLD); started $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)" > README
"$FF" bench calibrate -o this-vm-$TAG-raw.toml --force > calibrate.txt 2>&1
echo "calibrate rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
"$OLD" bench calibrate -o this-vm-$TAG-old-raw.toml --force > calibrate-old.txt 2>&1
echo "calibrate (previous binary) rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
for bg in update upload copy mixed; do
  "$FF" bench run --fg launch --bg $bg --runs 15 --mode alone --mode baseline --mode bfq --mode agent --format json > launch-$bg-r15.json 2> launch-$bg-r15.err
  echo "bench $bg rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
done
"$FF" bench run --fg switch --bg update --runs 15 --mode alone --mode baseline --mode bfq --mode agent --format json > switch-update-r15.json 2> switch-update-r15.err
echo "bench switch rc=$? done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> README
echo "finished $(date -u +%FT%TZ)" >> README
