#!/bin/sh
# twin17: CPU time of a 128 KiB cached pread() (the launch's per-call kernel work) alone (mode 0),
# beside a 1 MiB memcpy streamer on the other CPU (1) and sharing its CPU with one (2), with
# no gap and with a 200 us sleep between calls. Run under ff-quiet.
# Usage: cache-warmth.sh DIR
set -e
cd "${1:?DIR}"
gcc -O2 -o cw "$(dirname "$0")/cw.c"
[ -f f.dat ] || dd if=/dev/urandom of=f.dat bs=1M count=64 status=none; cat f.dat > /dev/null
for rep in 1 2; do for gap in 0 200; do for m in 0 1 2; do ./cw f.dat $m $gap 2000; done; done; done
