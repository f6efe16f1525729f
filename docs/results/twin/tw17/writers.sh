#!/bin/sh
# twin17: one buffered writer against two (the bench's copy worker, wr.c), each over its own
# cached 1 GiB file, 1 MiB write()s, MB/s over 3 s after a 1 s ramp. Run under ff-quiet.
# Usage: writers.sh DIR (DIR on the file system under test; two 1 GiB files are created there)
set -e
cd "${1:?DIR}"
gcc -O2 -o wr "$(dirname "$0")/wr.c" 2>/dev/null || true
for i in 0 1; do [ -f w$i.dat ] || dd if=/dev/urandom of=w$i.dat bs=1M count=1024 status=none; cat w$i.dat > /dev/null; done
for rep in 1 2 3; do
  echo "one:"; ./wr w0.dat 3
  echo "two:"; ./wr w0.dat 3 & ./wr w1.dat 3; wait
  echo "two pinned 0,1:"; ./wr w0.dat 3 0 & ./wr w1.dat 3 1; wait
done
