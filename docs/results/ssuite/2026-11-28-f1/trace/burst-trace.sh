#!/bin/bash
# The agent's page-cache additions at four bursts, each after a cache drop (docs/agent.md, "The
# agent's own first pause"): run as `burst-trace.sh /var/tmp/ff-ssuite/bin-v21` (before
# lock_memory) and `burst-trace.sh /var/tmp/ff-ssuite/bin-v22` (with it); the trace is left in
# /run/ffmf/fm.txt. Needs root, tracefs mounted at /sys/kernel/tracing, and /run/ffmf/agent.toml.
B=${1:?usage: burst-trace.sh BINDIR (holding forefront and forefront-exec)}
T=/sys/kernel/tracing
cd /run/ffmf
echo bfq > /sys/block/vda/queue/scheduler
$B/forefront agent run --config agent.toml > agent.log 2>&1 &
A=$!
for i in $(seq 50); do $B/forefront agent status --socket agent.sock >/dev/null 2>&1 && break; sleep 0.1; done
( while :; do sleep 0.05; done ) &
BG=$!
$B/forefront agent scope --socket agent.sock $BG >/dev/null
sleep 1.5
echo > $T/trace
echo "common_pid >= $A && common_pid <= $((A+10))" > $T/events/filemap/mm_filemap_add_to_page_cache/filter
echo 1 > $T/events/filemap/mm_filemap_add_to_page_cache/enable
echo 1 > $T/tracing_on
for k in 1 2 3 4; do sync; echo 3 > /proc/sys/vm/drop_caches; sleep 0.3; echo "MARK $k" > $T/trace_marker; $B/forefront-exec --burst --socket agent.sock -- sleep 0.2; sleep 1.5; done
echo 0 > $T/events/filemap/mm_filemap_add_to_page_cache/enable
cat $T/trace > /run/ffmf/fm.txt
echo 0 > $T/events/filemap/mm_filemap_add_to_page_cache/filter
kill $BG; kill -TERM $A; wait $A
$B/forefront agent restore --config agent.toml >> agent.log 2>&1
echo mq-deadline > /sys/block/vda/queue/scheduler
