import os, sys
p = sys.argv[1]; mib = int(sys.argv[2]); chunk = int(sys.argv[3]) << 10
os.sync(); open('/proc/sys/vm/drop_caches', 'w').write('3')
fd = os.open(p, os.O_RDONLY); off = 0
while off < mib << 20:
    b = os.pread(fd, chunk, off)
    os.posix_fadvise(fd, off, len(b), os.POSIX_FADV_DONTNEED); off += len(b)
