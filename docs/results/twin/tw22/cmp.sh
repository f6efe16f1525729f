#!/bin/sh
# Per cell: measured p50, CFS and EEVDF predictions, their waits for a CPU, and the measured
# CPU-clock excess (CPU clock - perf task clock), for one run directory at seed 1.
FF=$1; D=$2; DEV=$3; OUT=$4
for bg in update upload copy mixed; do
  for f in cfs auto; do
    "$FF" bench predict $D/launch-$bg-r15.json --device $DEV --seed 1 --fair $f --format json > $OUT/$bg-$f.json 2>/dev/null
  done
done
python3 - "$D" "$OUT" <<'PY'
import json, sys
d, out = sys.argv[1], sys.argv[2]
print("| cell | measured p50 | CFS p50 (ratio) | EEVDF p50 (ratio) | CPU wait CFS / EEVDF | measured CPU clock - task clock |")
print("|---|---|---|---|---|---|")
for bg in ["update", "upload", "copy", "mixed"]:
    saved = json.load(open(f"{d}/launch-{bg}-r15.json"))
    c = {m["mode"]: m for m in json.load(open(f"{out}/{bg}-cfs.json"))["modes"]}
    e = {m["mode"]: m for m in json.load(open(f"{out}/{bg}-auto.json"))["modes"]}
    for mode in ["alone", "baseline", "bfq", "agent"]:
        meas = c[mode]["measured"]["fg_p50_ms"]
        pc, pe = c[mode]["predicted"]["fg_p50_ms"], e[mode]["predicted"]["fg_p50_ms"]
        wc = c[mode]["predicted"]["cpu_waits"]; we = e[mode]["predicted"]["cpu_waits"]
        wcs = round(wc.get("sum_ms_per_launch"),1) if isinstance(wc, dict) else None
        wes = round(we.get("sum_ms_per_launch"),1) if isinstance(we, dict) else None
        oc = saved["modes"][mode].get("op_cpu_ms") or {}
        ex = (oc.get("total_ms") or 0) - (oc.get("on_cpu_ms") or 0)
        print(f"| {bg} {mode} | {meas:.1f} | {pc:.1f} ({pc/meas:.2f}) | {pe:.1f} ({pe/meas:.2f}) | {wcs} / {wes} | {ex:.1f} |")
PY
