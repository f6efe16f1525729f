#!/bin/bash
m=$1
grep -E "^(allocstall|pgscan_direct|pgsteal_direct|pgscan_kswapd|compact_stall|pgfault|pgmajfault|thp_fault_alloc|pgalloc_normal|workingset_refault_file|pgdeactivate|pgrotated|nr_dirty |nr_writeback )" /proc/vmstat | sort > vm-$m-a
/var/tmp/tw15/ff2 bench run --fg launch --bg upload --runs 5 --mode $m --format json > up-$m.json 2>/dev/null
grep -E "^(allocstall|pgscan_direct|pgsteal_direct|pgscan_kswapd|compact_stall|pgfault|pgmajfault|thp_fault_alloc|pgalloc_normal|workingset_refault_file|pgdeactivate|pgrotated|nr_dirty |nr_writeback )" /proc/vmstat | sort > vm-$m-b
join vm-$m-a vm-$m-b | awk -v m=$m '{d=$3-$2; if (d!=0) printf "%s %s %d\n", m, $1, d}'
python3 -c "import json;d=json.load(open('up-$m.json'))['modes']['$m'];print('$m', d['median_ms'], d['op_cpu_ms'])"
