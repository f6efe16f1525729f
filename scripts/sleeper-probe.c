// How late a short sleeper runs beside CPU hogs on this kernel: the real side of the CPU model's
// test `eevdf_a_sleeper_beside_two_hogs_per_core_waits_a_request_as_often_as_the_kernels`
// (crates/model/src/cpu/tests.rs; docs/twin.md, twin14).
//
//   cc -O2 -o /tmp/sleeper-probe scripts/sleeper-probe.c && /tmp/sleeper-probe 4 100 300 3000
//
// HOGS child processes spin in user space; the parent, in a loop of N, spins RUN_US, sleeps
// SLEEP_US (nanosleep, timer slack 1 ns) and records how much later than asked it woke: the
// timer's latency plus its wait for a CPU. With 0 hogs the line is the timer's latency alone.
// The hogs die with the parent (PR_SET_PDEATHSIG) and are killed and reaped at the end; nothing
// else is touched. One line: the lateness's median, p90, p99 and maximum (µs) and the share of
// wake-ups later than 1 ms and 3 ms. Run it under `ff-quiet` and several times.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

static long arg(char **argv, int i, long lo, long hi, const char *name) {
  char *end;
  long v = strtol(argv[i], &end, 10);
  if (*end || v < lo || v > hi) {
    fprintf(stderr, "sleeper-probe: %s must be a whole number in %ld..%ld, got %s\n", name, lo, hi, argv[i]);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: sleeper-probe HOGS RUN_US SLEEP_US N\n");
    return 2;
  }
  int hogs = (int)arg(argv, 1, 0, 64, "HOGS");
  long run_us = arg(argv, 2, 0, 1000000, "RUN_US");
  long sleep_us = arg(argv, 3, 1, 999999, "SLEEP_US");
  int n = (int)arg(argv, 4, 10, 10000000, "N");
  pid_t pids[64];
  pid_t parent = getpid();
  for (int i = 0; i < hogs; i++) {
    pids[i] = fork();
    if (pids[i] < 0) {
      perror("sleeper-probe: fork");
      for (int j = 0; j < i; j++) kill(pids[j], SIGKILL);
      return 1;
    }
    if (pids[i] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);
      for (volatile unsigned long x = 0;; x++) {
      }
    }
  }
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  long long *late = malloc(sizeof *late * (size_t)n);
  if (!late) return 1;
  struct timespec settle = {0, 200000000};
  nanosleep(&settle, 0);
  for (int i = 0; i < n; i++) {
    long long t0 = now_ns();
    while (now_ns() - t0 < run_us * 1000) {
    }
    struct timespec ts = {0, sleep_us * 1000};
    long long s = now_ns();
    nanosleep(&ts, 0);
    late[i] = now_ns() - s - sleep_us * 1000;
  }
  for (int i = 0; i < hogs; i++) {
    kill(pids[i], SIGKILL);
    waitpid(pids[i], 0, 0);
  }
  qsort(late, (size_t)n, sizeof *late, cmp);
  int over1 = 0, over3 = 0;
  for (int i = 0; i < n; i++) {
    over1 += late[i] > 1000000;
    over3 += late[i] > 3000000;
  }
  printf("hogs %d, run %ld us, sleep %ld us, %d wake-ups: late p50 %lld, p90 %lld, p99 %lld, max %lld us; > 1 ms %.1f %%, > 3 ms %.1f %%\n",
         hogs, run_us, sleep_us, n, late[n / 2] / 1000, late[n * 9 / 10] / 1000, late[n * 99 / 100] / 1000, late[n - 1] / 1000,
         100.0 * over1 / n, 100.0 * over3 / n);
  free(late);
  return 0;
}
