#!/bin/sh
# twin23: the order of the page-cache folios a 32 MiB overwrite in 1 MiB write()s gets on this
# VM's ext4 (mm_filemap_add_to_page_cache's `order`), with the file's pages dropped first, as the
# bench's updaters write after a sample's drop. Root; tracing put back off. Run alone:
#   ff-quiet sh docs/results/twin/tw23/folio-order.sh
set -e
T=/sys/kernel/tracing; F=/var/tmp/folio-order.dat
trap 'echo 0 > $T/events/filemap/mm_filemap_add_to_page_cache/enable; echo > $T/trace; rm -f $F' EXIT INT TERM
python3 -c "
import os
fd=os.open('$F',os.O_CREAT|os.O_WRONLY|os.O_TRUNC,0o644)
for i in range(32): os.write(fd,b'x'*(1<<20))
os.fdatasync(fd); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)"
echo > $T/trace; echo 1 > $T/events/filemap/mm_filemap_add_to_page_cache/enable; echo 1 > $T/tracing_on
python3 -c "
import os
fd=os.open('$F',os.O_WRONLY)
for i in range(32): os.write(fd,b'y'*(1<<20))
os.fdatasync(fd); os.close(fd)"
echo 0 > $T/events/filemap/mm_filemap_add_to_page_cache/enable
grep -o 'order=[0-9]*' $T/trace | sort | uniq -c
