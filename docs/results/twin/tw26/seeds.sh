#!/bin/sh
# twin26: docs/results/twin/tw19/seeds.sh with the order the measurement gives: besides the strict
# order of the four modes, the pairs of modes whose measured medians' 95 % intervals are apart
# and how many of them the prediction orders the same (`bench predict`'s JSON `order`).
# Usage (from the repository root): [TMPDIR=DIR] docs/results/twin/tw26/seeds.sh FOREFRONT RUNS DEVICE [ARGS...] > seeds.txt
# Its scratch JSONs go under $TMPDIR (default /tmp; twin28: two variants side by side, each its own).
set -e
FF=${1:-target/release/forefront}
D=$2
DEV=$3; shift 3
for seed in 1 2 3 4 5; do
  for bg in update upload copy mixed; do
    "$FF" bench predict $D/launch-$bg-r15.json --device $DEV --seed $seed --format json "$@" > ${TMPDIR:-/tmp}/tw26-$bg-$seed.json
  done
  python3 - "$seed" <<'PY'
import json, os, sys
seed = sys.argv[1]
med = bg = orders = pairs = agree = 0; misses = []; bgmiss = []; wrong = []
for b in ["update", "upload", "copy", "mixed"]:
    j = json.load(open(f"{os.environ.get('TMPDIR', '/tmp')}/tw26-{b}-{seed}.json"))
    ms = {m["mode"]: m for m in j["modes"]}
    for name, m in ms.items():
        r = m["predicted"]["fg_p50_ms"] / m["measured"]["fg_p50_ms"]
        if 1 / 1.5 <= r <= 1.5: med += 1
        else: misses.append(f"{b}/{name} {r:.2f}")
        mb, pb = m["measured"]["bg_window_mb_s"], m["predicted"]["bg_mb_s"]
        if mb and pb:
            rb = pb / mb
            if 1 / 1.5 <= rb <= 1.5: bg += 1
            else: bgmiss.append(f"{b}/{name} {rb:.2f}")
    om = sorted(ms, key=lambda n: ms[n]["measured"]["fg_p50_ms"])
    op = sorted(ms, key=lambda n: ms[n]["predicted"]["fg_p50_ms"])
    orders += om == op
    o = j["order"]
    pairs += o["pairs_ordered_by_measurement"]; agree += o["predicted_in_the_same_order"]
    wrong += [f"{b}/{p['faster']}<{p['slower']}" for p in o["pairs"] if not p["predicted_the_same"]]
print(f"seed {seed}: medians within 1.5x {med}/16, orders {orders}/4, measured pairs ordered alike {agree}/{pairs}, "
      f"background within 1.5x {bg}/12; median misses: {' '.join(misses) or '-'}; background misses: {' '.join(bgmiss) or '-'}; "
      f"pairs ordered otherwise: {' '.join(wrong) or '-'}")
PY
done
