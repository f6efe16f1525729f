// CPU time of a burst (a 128 KiB pread from a cached file into a 128 KiB buffer) that follows a
// 1 ms sleep, alone or while another task runs on the same CPU during the sleep.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
static double cpu(){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int c,char**v){ int fd=open(v[1],O_RDONLY); char*b=malloc(128<<10); long n=atol(v[2]); double s=0; off_t off=0;
 for(long i=0;i<n;i++){ usleep(1000); double c0=cpu(); if(pread(fd,b,128<<10,off)<=0){off=0;continue;} off+=128<<10; if(off>=(200<<20))off=0; s+=cpu()-c0; }
 printf("%.1f us cpu per 128 KiB pread burst\n", s/n); }
