#!/bin/bash
cd /var/tmp/vx
FF=/var/tmp/tw15/ff2
run() { $FF bench run --fg launch --bg copy --runs 8 --mode alone --format json > $1.json 2> $1.err; python3 - $1 <<'PY'
import json,sys; d=json.load(open(sys.argv[1]+'.json'))['modes']['alone']; c=d['op_cpu_ms']
print(f"{sys.argv[1]:12s} p50 {d['median_ms']:7.1f} ms  cpu {c['total_ms']:6.1f} (user {c['user_ms']:5.1f} sys {c['sys_ms']:5.1f})")
PY
}
fio --name=r --filename=fio.dat --size=2g --rw=read --bs=1m --direct=1 --ioengine=libaio --iodepth=128 --numjobs=4 --time_based --runtime=600 >/dev/null & f=$!; sleep 2; run dread512; kill $f; wait 2>/dev/null
fio --name=r --filename=fio.dat --size=2g --rw=read --bs=1m --ioengine=psync --numjobs=4 --time_based --runtime=600 --invalidate=1 >/dev/null & f=$!; sleep 2; run bufread4; kill $f; wait 2>/dev/null
