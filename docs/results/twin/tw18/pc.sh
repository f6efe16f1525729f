#!/bin/sh
# twin18: 400 cold 4 KiB random reads (pc.c; each one a wake-up from the disk) alone and beside
# two buffered writers (../tw17/wr.c), their CPU clock against perf's task clock. Run alone:
#   ff-quiet pc.sh DIR      (DIR on the disk under test; a 40 MiB and two 1 GiB files are made there)
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
cd "${1:?DIR}"
gcc -O2 -o pc "$HERE/pc.c"; gcc -O2 -o wr "$HERE/../tw17/wr.c"
[ -f c.dat ] || dd if=/dev/urandom of=c.dat bs=1M count=40 status=none
for i in 0 1; do [ -f w$i.dat ] || dd if=/dev/urandom of=w$i.dat bs=1M count=1024 status=none; done
for rep in 1 2 3; do
  echo "alone:"; ./pc c.dat
  ./wr w0.dat 3 >/dev/null & ./wr w1.dat 3 >/dev/null & sleep 1.2; echo "beside two writers:"; ./pc c.dat; wait
done
