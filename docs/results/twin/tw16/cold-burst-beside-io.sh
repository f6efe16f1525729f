#!/bin/bash
cd /var/tmp/mb
echo -n "cold alone: "; taskset -c 0 ./cburst c200.dat 1000 cold
taskset -c 1 python3 bgw.py /var/tmp/mb/bg1.dat & a=$!; sleep 3
echo -n "cold, writer on cpu1: "; taskset -c 0 ./cburst c200.dat 1000 cold
kill $a; wait 2>/dev/null
taskset -c 0 python3 bgw.py /var/tmp/mb/bg1.dat & a=$!; sleep 3
echo -n "cold, writer on cpu0: "; taskset -c 0 ./cburst c200.dat 1000 cold
kill $a; wait 2>/dev/null; rm -f bg1.dat; sync
taskset -c 1 fio --name=r --filename=/var/tmp/vx/fio.dat --size=2g --rw=read --bs=1m --ioengine=psync --numjobs=1 --time_based --runtime=600 --invalidate=1 >/dev/null & f=$!; sleep 2
echo -n "cold, buffered reader on cpu1: "; taskset -c 0 ./cburst c200.dat 1000 cold
kill $f; wait 2>/dev/null
taskset -c 1 fio --name=r --filename=/var/tmp/vx/fio.dat --size=2g --rw=read --bs=1m --direct=1 --ioengine=libaio --iodepth=64 --numjobs=1 --time_based --runtime=600 >/dev/null & f=$!; sleep 2
echo -n "cold, O_DIRECT reader qd64 on cpu1: "; taskset -c 0 ./cburst c200.dat 1000 cold
kill $f; wait 2>/dev/null
echo -n "cold alone: "; taskset -c 0 ./cburst c200.dat 1000 cold
