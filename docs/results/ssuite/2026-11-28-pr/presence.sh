#!/bin/bash
# Does a running agent that nobody calls slow the S suite's xterm start-up with no background?
# (docs/agent.md, "The agent's presence with no background"). The suite's own steps per
# start-up (drop the caches, `sleep 0.2`, the replayer timed), outside the suite: no fio, no
# suite bookkeeping. Blocks of K start-ups, each block under one condition, the conditions
# rotating block by block:
#   none       no agent
#   passive    the agent at its defaults (as scripts/ssuite's agent_conf writes them), idle
#   noscan     the same with [agent] rescan_ms = 60000 (no periodic /proc scan in a block)
# Usage: presence.sh BLOCKS K OUTFILE [BINDIR]. Needs root; vda under BFQ; the S suite set up.
set -u
BLOCKS=${1:?blocks}; K=${2:?k}; OUT=${3:?outfile}; B=${4:-/var/tmp/ff-ssuite/bin-v23}
S=/var/tmp/ff-ssuite/S/comm_startup_lat
CMD=("$S/replay-startup-io" "$S/xterm.trace" /var/tmp/ff-ssuite/workfiles)
R=/run/ffpr; mkdir -p $R
orig=$(sed -E 's/.*\[([^]]+)\].*/\1/' /sys/block/vda/queue/scheduler)
echo bfq > /sys/block/vda/queue/scheduler
"${CMD[@]}" create_files > /dev/null
conf() {  # condition -> config file
  printf '[agent]\nsocket = "%s/agent.sock"\nstate = "%s/state.json"\ngroup = "ffpr"\n' $R $R > $R/$1.toml
  [ $1 = noscan ] && sed -i 's/^\[agent\]$/[agent]\nrescan_ms = 60000/' $R/$1.toml
  echo $R/$1.toml
}
conds=(none passive noscan)
for ((b = 0; b < BLOCKS; b++)); do
  for ((k = 0; k < 3; k++)); do
    c=${conds[$(( (b + k) % 3 ))]} A=
    if [ $c != none ]; then
      $B/forefront agent run --config "$(conf $c)" > $R/agent-$c-$b.log 2>&1 &
      A=$!
      for _ in $(seq 50); do $B/forefront agent status --socket $R/agent.sock > /dev/null 2>&1 && break; sleep 0.1; done
    fi
    sleep 1.5
    for ((i = 0; i < K; i++)); do
      sleep 1
      echo 3 > /proc/sys/vm/drop_caches
      sleep 0.2
      t0=$EPOCHREALTIME
      "${CMD[@]}" > /dev/null
      t1=$EPOCHREALTIME
      echo "$c $b $i $(echo "$t1 - $t0" | bc)" >> $OUT
    done
    if [ -n "$A" ]; then kill -TERM $A; wait $A; $B/forefront agent restore --config $R/$c.toml >> $R/agent-$c-$b.log 2>&1; fi
  done
done
echo $orig > /sys/block/vda/queue/scheduler
