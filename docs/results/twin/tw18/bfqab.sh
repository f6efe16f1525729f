#!/bin/sh
# twin18: BFQ under update, 5 samples (BFQ selected anew for each), with the binaries given,
# one after the other. Run alone: ff-quiet bfqab.sh BIN...
for b in "$@"; do
  "$b" bench run --fg launch --bg update --runs 5 --mode bfq --format json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin); print('$b', [round(x) for x in j['modes']['bfq']['samples_ms']])"
done
