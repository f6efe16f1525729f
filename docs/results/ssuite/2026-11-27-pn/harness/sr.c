// One "launch" for the BFQ soft-real-time test: a few small reads, a short idle, a few more
// (the pattern of forefront-exec's page-ins then the app's), then 4 threads reading ahead.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int fd; static long base;
static void *rd(void *a) { long k = (long)a; char *b = malloc(128 << 10);
  for (long o = 0; o < (8L << 20); o += 128 << 10) pread(fd, b, 128 << 10, base + (64L << 20) + k * (16L << 20) + o);
  return 0; }
int main(int c, char **v) { fd = open(v[1], O_RDONLY); base = atol(v[2]) * (256L << 20); char b[4096];
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  for (int i = 0; i < 3; i++) pread(fd, b, 4096, base + i * (1 << 20));
  usleep(atoi(v[3]));
  for (int i = 3; i < 6; i++) pread(fd, b, 4096, base + i * (1 << 20));
  pthread_t t[4]; for (long k = 0; k < 4; k++) pthread_create(&t[k], 0, rd, (void *)k);
  for (int k = 0; k < 4; k++) pthread_join(t[k], 0); return 0; }
