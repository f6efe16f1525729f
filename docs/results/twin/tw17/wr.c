// The bench's copy worker: 1 MiB write()s over a 1 GiB file, wrapping; prints MB/s over the
// last `secs` seconds after a 1 s ramp (its pages dirty from the first pass on).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  int fd=open(argv[1],O_WRONLY); double secs=atof(argv[2]); int cpu=argc>3?atoi(argv[3]):-1;
  if(cpu>=0){cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);sched_setaffinity(0,sizeof s,&s);}
  size_t bs=1<<20; off_t len=lseek(fd,0,SEEK_END); char*buf=malloc(bs); memset(buf,7,bs);
  off_t off=0; double t0=now(), ts=0; long long bytes=0; int started=0;
  for(;;){
    if(pwrite(fd,buf,bs,off)!=(ssize_t)bs){perror("write");return 1;}
    off+=bs; if(off>=len) off=0;
    double t=now();
    if(!started && t-t0>1.0){started=1; ts=t; bytes=0; continue;}
    if(started){bytes+=bs; if(t-ts>=secs) break;}
  }
  printf("%s %.0f MB/s\n",argv[1],bytes/(now()-ts)/1e6);
  return 0;
}
