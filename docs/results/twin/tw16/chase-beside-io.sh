#!/bin/bash
cd /var/tmp/mb
echo "alone (cpu0)"; taskset -c 0 ./chase
taskset -c 1 python3 bgw.py /var/tmp/mb/bg1.dat & a=$!; sleep 3
echo "1 buffered writer pinned to cpu1"; taskset -c 0 ./chase
kill $a; wait 2>/dev/null; rm -f bg1.dat; sync
taskset -c 1 fio --name=r --filename=/var/tmp/vx/fio.dat --size=2g --rw=read --bs=1m --direct=1 --ioengine=libaio --iodepth=128 --numjobs=2 --time_based --runtime=600 >/dev/null & f=$!; sleep 2
echo "O_DIRECT readers depth 256 pinned to cpu1"; taskset -c 0 ./chase
kill $f; wait 2>/dev/null
taskset -c 1 fio --name=r --filename=/var/tmp/vx/fio.dat --size=2g --rw=read --bs=1m --ioengine=psync --numjobs=2 --time_based --runtime=600 --invalidate=1 >/dev/null & f=$!; sleep 2
echo "buffered readers pinned to cpu1"; taskset -c 0 ./chase
kill $f; wait 2>/dev/null
