#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <pthread.h>
static double t0;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static double secs=3.0; static size_t FILEB=1ul<<30;
static void* run(void*a){ long id=(long)a; char p[64]; snprintf(p,64,"/var/tmp/tw24/upd%ld.dat",id);
  size_t M=1<<20; char*b=malloc(M); memset(b,7,M);
  int fd=open(p,O_RDWR); off_t o=0; double wsum=0;
  while(now()-t0<secs){ double a=now(); for(int i=0;i<32;i++){ b[0]++; pwrite(fd,b,M,o); o=(o+M)%FILEB; } double w=now(); fdatasync(fd); double s=now();
    printf("%ld %.3f write %.1f ms sync %.1f ms\n",id,a-t0,(w-a)*1e3,(s-w)*1e3); }
  close(fd); return 0;}
int main(int c,char**v){ pthread_t t[2]; int nt=getenv("NT")?atoi(getenv("NT")):2; char p[64]; size_t M=1<<20; char*b=malloc(M); memset(b,1,M);
  if(c>1){ for(long i=0;i<2;i++){ snprintf(p,64,"/var/tmp/tw24/upd%ld.dat",i); int fd=open(p,O_CREAT|O_RDWR|O_TRUNC,0644); for(size_t o=0;o<FILEB;o+=M) pwrite(fd,b,M,o); fsync(fd); close(fd);} return 0;}
  int d=open("/proc/sys/vm/drop_caches",O_WRONLY); write(d,"3",1); close(d);
  t0=now(); for(long i=0;i<nt;i++) pthread_create(&t[i],0,run,(void*)i); for(int i=0;i<nt;i++) pthread_join(t[i],0); return 0;}
