#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int c,char**v){
  int direct=atoi(v[2]); size_t n=32<<20; int reps=atoi(v[3]);
  int fd=open(v[1],O_RDWR|O_CREAT|(direct?O_DIRECT:0),0644);
  if(fd<0){perror("open");return 1;}
  char*b=aligned_alloc(2<<20,n); madvise(b,n,MADV_HUGEPAGE); memset(b,7,n);
  ftruncate(fd,(off_t)reps*n);
  /* allocate blocks first */
  if(!direct){for(int i=0;i<reps;i++)pwrite(fd,b,n,(off_t)i*n);fsync(fd);posix_fadvise(fd,0,0,POSIX_FADV_DONTNEED);}
  double ws=0,ss=0;
  for(int i=0;i<reps;i++){b[0]=i;double t0=now();if(pwrite(fd,b,n,(off_t)i*n)!=(ssize_t)n){perror("w");return 1;}double t1=now();fdatasync(fd);double t2=now();
    printf("%d write %.2f ms sync %.2f ms\n",i,t1-t0,t2-t1);ws+=t1-t0;ss+=t2-t1;}
  printf("mean write %.2f sync %.2f total %.0f MB/s\n",ws/reps,ss/reps,n/1e3/((ws+ss)/reps));
}
