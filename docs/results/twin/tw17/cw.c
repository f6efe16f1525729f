// Cache warmth: CPU time of a 128 KiB cached read() (the launch's kernel work per call) when the
// reader runs alone, beside a memcpy streamer on the other CPU, or sharing its CPU with one
// (the reader sleeping `gap_us` between calls so the streamer runs in between).
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
static double cpu_us(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
int main(int argc,char**argv){
  const char*path=argv[1]; int mode=atoi(argv[2]); int gap_us=atoi(argv[3]); int n=atoi(argv[4]);
  // mode 0: alone; 1: streamer on the other CPU; 2: streamer on the same CPU
  pid_t st=0;
  if(mode){ st=fork(); if(!st){ pin(mode==1?1:0); size_t sz=1<<20; char*a=malloc(sz),*b=malloc(sz); memset(a,1,sz);memset(b,2,sz); for(;;){memcpy(b,a,sz);memcpy(a,b,sz);} } }
  pin(0);
  usleep(200000);
  int fd=open(path,O_RDONLY); size_t bs=128<<10; char*buf=aligned_alloc(4096,bs); memset(buf,0,bs);
  off_t sz=lseek(fd,0,SEEK_END); off_t off=0;
  double tot=0; double *v=malloc(n*sizeof(double));
  for(int i=0;i<n;i++){
    if(gap_us) usleep(gap_us);
    double t0=cpu_us(); ssize_t r=pread(fd,buf,bs,off); double t1=cpu_us();
    if(r<=0){fprintf(stderr,"read\n");return 1;}
    off+=bs; if(off+bs>sz) off=0;
    v[i]=t1-t0; tot+=v[i];
  }
  if(st){kill(st,SIGKILL);waitpid(st,0,0);}
  // median
  for(int i=1;i<n;i++){double x=v[i];int j=i-1;while(j>=0&&v[j]>x){v[j+1]=v[j];j--;}v[j+1]=x;}
  printf("mode=%d gap_us=%d mean=%.1f us median=%.1f us p90=%.1f us\n",mode,gap_us,tot/n,v[n/2],v[n*9/10]);
  return 0;
}
