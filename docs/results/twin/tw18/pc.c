// Cold 4 KiB random reads (each a wake-up from the disk): the CPU clock against perf's task clock.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <linux/perf_event.h>
static double clk(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int argc,char**argv){
  struct perf_event_attr a; memset(&a,0,sizeof a); a.type=PERF_TYPE_SOFTWARE; a.size=sizeof a; a.config=PERF_COUNT_SW_TASK_CLOCK; a.disabled=1; a.exclude_hv=1;
  int pfd=syscall(SYS_perf_event_open,&a,0,-1,-1,0); if(pfd<0){perror("perf_event_open");return 1;}
  int fd=open(argv[1],O_RDONLY); posix_fadvise(fd,0,0,POSIX_FADV_DONTNEED); posix_fadvise(fd,0,0,POSIX_FADV_RANDOM);
  off_t sz=lseek(fd,0,SEEK_END); char buf[4096]; srand(1);
  ioctl(pfd,PERF_EVENT_IOC_ENABLE,0); double c0=clk(CLOCK_THREAD_CPUTIME_ID), t0=clk(CLOCK_MONOTONIC);
  for(int i=0;i<400;i++){ off_t o=((off_t)rand()%(sz/4096))*4096; pread(fd,buf,4096,o); }
  double c1=clk(CLOCK_THREAD_CPUTIME_ID), t1=clk(CLOCK_MONOTONIC); ioctl(pfd,PERF_EVENT_IOC_DISABLE,0);
  uint64_t tc; read(pfd,&tc,8);
  printf("400 cold reads: wall %.1f ms, cpu clock %.2f ms, perf task-clock %.2f ms\n",t1-t0,c1-c0,tc/1e6);
  return 0;
}
