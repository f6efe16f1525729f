#!/usr/bin/env python3
"""twin28: sample by sample, whether the prediction's slow background windows are the measured
slow ones. A window is slow when under 0.7x the fastest of its mode's windows (measured among
the measured, predicted among the predicted), over the samples both have (the first ten).
Usage: classes.py RUNS_DIR PREDICT_JSON_DIR [seed]  (the JSONs of twin26's seeds.sh: tw26-BG-SEED.json)"""
import json, sys
runs, pred, seed = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "1"
tot = agree = 0
for bg in ["update", "upload", "copy", "mixed"]:
    r = json.load(open(f"{runs}/launch-{bg}-r15.json"))
    j = json.load(open(f"{pred}/tw26-{bg}-{seed}.json"))
    for m in j["modes"]:
        p = m["predicted"].get("bg_window_samples_mb_s") or []
        if not p:
            continue
        meas = r["modes"][m["mode"]]["bg_window_samples_mb_s"][: len(p)]
        cm = [x < 0.7 * max(meas) for x in meas]
        cp = [x < 0.7 * max(p) for x in p]
        a = sum(x == y for x, y in zip(cm, cp))
        tot += len(p); agree += a
        print(f"{bg}/{m['mode']}: measured slow {''.join('s' if c else '.' for c in cm)}  predicted {''.join('s' if c else '.' for c in cp)}  alike {a}/{len(p)}")
print(f"samples classed alike: {agree} of {tot}")
