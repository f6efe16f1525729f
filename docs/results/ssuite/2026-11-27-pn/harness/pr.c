// The probe: one thread reading 32 MiB ahead of itself (1 MiB reads), right after a launch.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(int c, char **v) { int fd = open(v[1], O_RDONLY); long base = 2560L << 20; char *b = malloc(1 << 20);
  posix_fadvise(fd, base, 32L << 20, POSIX_FADV_DONTNEED);
  for (long o = 0; o < (32L << 20); o += 1 << 20) pread(fd, b, 1 << 20, base + o); return 0; }
