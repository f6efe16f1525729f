#!/bin/sh
# twin18: the update and mixed launch cells again, twice each, alternating, right after tw18's runs (reproducibility of the measured medians)
set -e
cd /var/tmp/tw18/rep
for r in 1 2; do
  for bg in update mixed; do
    /var/tmp/tw18/ff bench run --fg launch --bg $bg --runs 15 --mode alone --mode baseline --mode bfq --mode agent --format json > launch-$bg-r15-rep$r.json 2>/dev/null
    echo "$bg rep $r done $(date -u +%T)"
  done
done
