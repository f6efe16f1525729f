#!/bin/sh
# twin22: the launch's wake-ups and waits for a CPU in each cell's baseline, traced.
cd /work/main
for bg in update upload copy mixed; do
  ff-quiet python3 scripts/sched-probe /var/tmp/tw22/sp-$bg -- /var/tmp/tw22/ff-merge bench run --fg launch --bg $bg --runs 10 --mode baseline --format json > /var/tmp/tw22/sp-$bg.log 2>&1
  echo "$bg rc=$? $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
done
