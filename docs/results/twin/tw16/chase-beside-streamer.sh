#!/bin/bash
cd /var/tmp/mb
echo "alone (cpu0)"; taskset -c 0 ./chase
for s in 0 1 64; do taskset -c 1 ./stream $s & p=$!; sleep 1; echo "with streamer $s MiB on cpu1"; taskset -c 0 ./chase; kill $p; wait 2>/dev/null; done
