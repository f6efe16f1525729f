"""Tables of docs/reproductions/revisiting-storage-results.md from the sweeps that
scripts/reproduce-revisiting-storage runs (JSON Lines of `forefront sim sweep`)."""
import json
import sys
import tomllib
from pathlib import Path

tmp = Path(sys.argv[1])
root = Path(__file__).resolve().parent.parent


def lines(name):
    return [json.loads(l) for l in (tmp / f"{name}.jsonl").read_text().splitlines() if l.strip()]


def device(name):
    return tomllib.loads((root / "devices" / f"{name}.toml").read_text())


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(xs, ys):
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else float("nan")


wb = lines("webbench")
runtime = {(l["point"]["device"], l["point"]["variant"]): l["report"]["metrics"]["fg_ms"] / 1e3 for l in wb}
devices = list(dict.fromkeys(l["point"]["device"] for l in wb))
configs = list(dict.fromkeys(l["point"]["variant"].split("/")[1] for l in wb))

print("## WebBench: runtime on each device, WiFi and USB tethering (stock)")
print()
print("| device | class | seq write MB/s | rand write IOPS | WiFi s | USB s | USB / WiFi |")
print("|---|---|---|---|---|---|---|")
for d in devices:
    p = device(d)
    w, u = runtime[(d, "wifi/stock")], runtime[(d, "usb/stock")]
    cls = d.rsplit("-c", 1)[1] if d.startswith("sd-") else "internal"
    print(f"| {d} | {cls} | {p['write_seq_mb_s']} | {p['write_rand_iops']} | {w:.1f} | {u:.1f} | {u / w:.2f} |")
print()
cards = [d for d in devices if d.startswith("sd-")]
for net in ("wifi", "usb"):
    rt = [runtime[(d, f"{net}/stock")] for d in cards]
    print(f"- {net.upper()}: slowest card / fastest card = {max(rt) / min(rt):.1f}x "
          f"(variation {100 * (max(rt) / min(rt) - 1):.0f} %); "
          f"Spearman rank correlation of runtime with random-write IOPS {spearman(rt, [device(d)['write_rand_iops'] for d in cards]):+.2f}, "
          f"with sequential write MB/s {spearman(rt, [device(d)['write_seq_mb_s'] for d in cards]):+.2f}, "
          f"with speed class {spearman(rt, [int(d.rsplit('-c', 1)[1]) for d in cards]):+.2f}")
print()

for net, title in (("wifi", "WiFi"), ("usb", "USB tethering")):
    print(f"## What-ifs and pilots, {title}: runtime (s) and change against stock")
    print()
    print("| device | " + " | ".join(configs) + " |")
    print("|---|" + "---|" * len(configs))
    for d in devices:
        base = runtime[(d, f"{net}/stock")]
        cells = []
        for c in configs:
            v = runtime[(d, f"{net}/{c}")]
            cells.append(f"{v:.1f}" if c == "stock" else f"{v:.1f} ({100 * (v / base - 1):+.0f} %)")
        print(f"| {d} | " + " | ".join(cells) + " |")
    print()

for name, title, unit in (
    ("rlbench", "RLBench (SQLite speed tests): runtime", "runtime s"),
    ("appinstall", "App Install (top 10 apps): runtime", "runtime s"),
    ("applaunch", "App Launch (9 cold launches): mean launch", "launch s"),
    ("rs-facebook", "Facebook (MobiGen trace, storage only): runtime", "runtime s"),
):
    ls = lines(name)
    rt = {l["point"]["device"]: l["report"]["metrics"]["fg_ms"] / 1e3 for l in ls}
    print(f"## {title} on each device (stock, WiFi)")
    print()
    print(f"| device | {unit} | against internal |")
    print("|---|---|---|")
    for d in devices:
        print(f"| {d} | {rt[d]:.2f} | {rt[d] / rt['nexus-one-nand']:.1f}x |")
    cr = [rt[d] for d in cards]
    print()
    print(f"- slowest card / fastest card = {max(cr) / min(cr):.1f}x; rank correlation with random-write IOPS "
          f"{spearman(cr, [device(d)['write_rand_iops'] for d in cards]):+.2f}")
    print()

print("## Sensitivity: the AUs an SD card's FTL keeps open (`ftl.open_aus`, an assumption)")
print()
print("WebBench over WiFi, stock, runtime (s), with random order inside an open AU allowed (`random_in_au = true`, the")
print("cards' setting) and not (linear-only). The device files use 2 open AUs.")
print()
ss = lines("streams")
sdev = list(dict.fromkeys(l["point"]["device"] for l in ss))
vals = sorted({l["point"]["axes"]["device.ftl.open_aus"] for l in ss})
print("| device | in-AU order | " + " | ".join(f"{v} open" for v in vals) + " |")
print("|---|---|" + "---|" * len(vals))
for d in sdev:
    for rnd in (True, False):
        row = {
            l["point"]["axes"]["device.ftl.open_aus"]: l["report"]["metrics"]["fg_ms"] / 1e3
            for l in ss
            if l["point"]["device"] == d and l["point"]["axes"]["device.ftl.random_in_au"] == rnd
        }
        print(f"| {d} | {'random' if rnd else 'linear'} | " + " | ".join(f"{row[v]:.1f}" for v in vals) + " |")
