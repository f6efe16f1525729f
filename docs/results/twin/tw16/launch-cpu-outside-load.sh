#!/bin/bash
# The launch op's CPU time (bench `alone`, nothing of the bench's own in the background) while
# an outside load runs: none, 2 CPU spinners, O_DIRECT reads, O_DIRECT writes.
cd /var/tmp/vx
FF=/var/tmp/tw15/ff2
run() { $FF bench run --fg launch --bg copy --runs 8 --mode alone --format json > $1.json 2> $1.err; python3 - $1 <<'PY'
import json,sys; d=json.load(open(sys.argv[1]+'.json'))['modes']['alone']; c=d['op_cpu_ms']
print(f"{sys.argv[1]:12s} p50 {d['median_ms']:7.1f} ms  cpu {c['total_ms']:6.1f} (user {c['user_ms']:5.1f} sys {c['sys_ms']:5.1f})")
PY
}
[ -f fio.dat ] || fio --name=mk --filename=fio.dat --size=2g --rw=write --bs=1m --direct=1 >/dev/null
run none
yes >/dev/null & a=$!; yes >/dev/null & b=$!; run spin2; kill $a $b; wait 2>/dev/null
fio --name=r --filename=fio.dat --size=2g --rw=read --bs=1m --direct=1 --ioengine=libaio --iodepth=16 --time_based --runtime=600 >/dev/null & f=$!; sleep 2; run dread; kill $f; wait 2>/dev/null
fio --name=w --filename=fio.dat --size=2g --rw=write --bs=1m --direct=1 --ioengine=libaio --iodepth=16 --time_based --runtime=600 >/dev/null & f=$!; sleep 2; run dwrite; kill $f; wait 2>/dev/null
fio --name=r4 --filename=fio.dat --size=2g --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=32 --time_based --runtime=600 >/dev/null & f=$!; sleep 2; run dread4k; kill $f; wait 2>/dev/null
run none2
