#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int nb=8; size_t sz=64<<20; char*src=malloc(1<<20); memset(src,7,1<<20);
  char*b[8];
  for(int i=0;i<nb;i++){b[i]=mmap(0,sz,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE,-1,0); madvise(b[i],sz,MADV_NOHUGEPAGE);}
  for(int r=0;r<4;r++){
    for(int i=0;i<nb;i++){
      double t=now();
      for(int k=0;k<4;k++) for(size_t o=0;o<sz;o+=1<<20) memcpy(b[i]+o,src,1<<20);
      double dt=now()-t; printf("%.3f ", dt*1e6/(4*sz/4096));
    }
    printf(" us/page\n");
  }
}
