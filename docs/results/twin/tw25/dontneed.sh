#!/bin/sh
# twin25: what POSIX_FADV_DONTNEED over each read() call's range leaves cached of a file read
# cold, by call size (dd.py: echo 3, then 512 MiB of r0.dat read in CHUNK KiB calls, each
# dropped after it), with fincore and /proc/meminfo's FileHugePages. Run under ff-quiet.
cd "$(dirname "$0")"
uname -r; cat /sys/block/vda/queue/read_ahead_kb | sed 's/^/read_ahead_kb /'
for c in 1024 1536 2048 3072 4096; do
  python3 dd.py r0.dat 512 $c
  echo "chunk $c KiB: $(fincore -n -o RES r0.dat) cached of 512M read; $(grep FileHugePages /proc/meminfo | tr -s ' ')"
done
