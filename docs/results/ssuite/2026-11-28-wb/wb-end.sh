#!/bin/bash
# What the end of a pause does to the foreground's next I/O (docs/agent.md, "The end of a pause
# without a write-back pass"): a background process in the agent's scope dirties 600 MB
# (buffered, no sync: below the background threshold, so nothing writes it yet) and sleeps; then
# an app is launched (`forefront-exec --burst -- APP`) whose start-up first computes for 200 ms
# (a sleep: no I/O, so the agent ends the pause after idle_end_ms = 100 ms) and then reads
# 256 MiB with O_DIRECT; the launch is timed whole. Dirty is read 1 s after it. Arms, in
# rotating order every rep: `old` (bin-v22: the hold turned dirty_writeback_centisecs 0 -> 500),
# `new` (bin-v23: the expiry is the hold), `none` (BFQ alone, the same launch with no agent).
# Usage: wb-end.sh REPS OUTFILE. Needs root; runs on vda under BFQ; cleans up its files.
set -u
REPS=${1:?reps}; OUT=${2:?outfile}
W=/var/tmp/ffwb; R=/run/ffwb
mkdir -p $W $R
[ -f $W/read ] || { dd if=/dev/urandom of=$W/read bs=1M count=256 status=none; sync; }
printf '[agent]\nsocket = "%s/agent.sock"\nstate = "%s/state.json"\ngroup = "ffwb"\n' $R $R > $R/agent.toml
orig=$(sed -E 's/.*\[([^]]+)\].*/\1/' /sys/block/vda/queue/scheduler)
echo bfq > /sys/block/vda/queue/scheduler
dirty_kb() { awk '/^Dirty:/ {print $2}' /proc/meminfo; }
one() {  # arm rep
  local arm=$1 rep=$2 B= A= bg t0 t1 d0 d1
  case $arm in old) B=/var/tmp/ff-ssuite/bin-v22 ;; new) B=/var/tmp/ff-ssuite/bin-v23 ;; none) B=/var/tmp/ff-ssuite/bin-v23 ;; esac
  sync; echo 3 > /proc/sys/vm/drop_caches
  if [ $arm != none ]; then
    $B/forefront agent run --config $R/agent.toml > $R/agent-$arm-$rep.log 2>&1 &
    A=$!
    for _ in $(seq 50); do $B/forefront agent status --socket $R/agent.sock >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  sh -c "dd if=/dev/zero of=$W/dirty bs=1M count=600 status=none; exec sleep 1000" &
  bg=$!
  [ -n "$A" ] && $B/forefront agent scope --socket $R/agent.sock $bg > /dev/null
  while [ "$(stat -c %s $W/dirty 2>/dev/null || echo 0)" -lt $((600 << 20)) ]; do sleep 0.1; done
  sleep 1.2  # past min_gap_ms and the agent's first scan
  d0=$(dirty_kb)
  local app=(sh -c "sleep 0.2; exec dd if=$W/read of=/dev/null bs=1M iflag=direct status=none")
  t0=$(date +%s.%N)
  if [ -n "$A" ]; then
    $B/forefront-exec --burst --socket $R/agent.sock -- "${app[@]}"
  else
    "${app[@]}"
  fi
  t1=$(date +%s.%N)
  sleep 1
  d1=$(dirty_kb)
  echo "$arm $rep launch_s=$(echo "$t1 - $t0" | bc) dirty_before_mb=$((d0 / 1024)) dirty_1s_after_mb=$((d1 / 1024))" | tee -a $OUT
  kill $bg; wait $bg 2>/dev/null
  rm -f $W/dirty
  if [ -n "$A" ]; then kill -TERM $A; wait $A; $B/forefront agent restore --config $R/agent.toml >> $R/agent-$arm-$rep.log 2>&1; fi
}
arms=(old new none)
for ((rep = 0; rep < REPS; rep++)); do
  for ((k = 0; k < 3; k++)); do one ${arms[$(( (rep + k) % 3 ))]} $rep; done
done
echo $orig > /sys/block/vda/queue/scheduler
rm -rf $W
sysctl vm.dirty_writeback_centisecs vm.dirty_expire_centisecs vm.dirty_bytes vm.dirty_ratio vm.dirty_background_bytes vm.dirty_background_ratio | tee -a $OUT
