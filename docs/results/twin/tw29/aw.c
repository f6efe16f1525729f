/* twin29: one of the bench's update workers (crates/workload/src/bench.rs: 1 MiB write()s from
 * the file's start, an fdatasync every 32 MiB, wrapping at the file's end), for agentfault.py
 * and reportedfirst.py. With a second argument, each 32 MiB chunk's end (ms since start) and
 * its write() time (ms, without the fdatasync) are appended to that file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char **argv) {
  size_t M = 1 << 20, file = (size_t)1 << 30; off_t o = 0; long n = 0;
  char *b = malloc(M); memset(b, 7, M);
  int fd = open(argv[1], O_RDWR);
  if (fd < 0) return 1;
  FILE *log = argc > 2 ? fopen(argv[2], "w") : NULL;
  double t0 = now_ms(), c0 = t0;
  for (;;) {
    b[0]++; if (pwrite(fd, b, M, o) != (ssize_t)M) return 2; o = (o + M) % file;
    if (++n % 32 == 0) {
      double w = now_ms(); fdatasync(fd);
      if (log) { fprintf(log, "%.1f %.1f\n", now_ms() - t0, w - c0); fflush(log); }
      c0 = now_ms();
    }
  }
}
