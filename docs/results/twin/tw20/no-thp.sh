#!/bin/sh
# twin20: the calibration with transparent huge pages off (the mechanism the `large` step's
# request size rests on), put back afterwards (also on an error or a signal). Run alone:
#   ff-quiet docs/results/twin/tw20/no-thp.sh /var/tmp/tw20/ff-new /var/tmp/tw20/out
FF=$1; OUT=$2
T=/sys/kernel/mm/transparent_hugepage/enabled
old=$(sed 's/.*\[\(.*\)\].*/\1/' $T)
trap 'echo "$old" > $T' EXIT INT TERM HUP
echo never > $T
echo "transparent_hugepage/enabled: $(cat $T) (was $old)"
"$FF" bench calibrate -o "$OUT/this-vm-tw20-nothp-raw.toml" --force > "$OUT/calibrate-nothp.txt" 2>&1
echo "calibrate rc=$? at $(date -u +%T)"
