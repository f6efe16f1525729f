#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <stdint.h>
static double cpu(){struct timespec t;clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static double wall(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int c,char**v){
  size_t mb[]={1,8,64}; 
  for(int k=0;k<3;k++){ size_t n=mb[k]*1024*1024/8; uint64_t*a=malloc(n*8);
    for(size_t i=0;i<n;i++)a[i]=i; for(size_t i=n-1;i>0;i--){size_t j=rand()%(i+1);uint64_t t=a[i];a[i]=a[j];a[j]=t;}
    size_t p=0; double c0=cpu(),w0=wall(); for(long i=0;i<5000000;i++)p=a[p]; double c1=cpu(),w1=wall();
    printf("%3zu MiB: %.1f ns/access cpu (wall %.1f) [%zu]\n",mb[k],(c1-c0)*1e6/5e6,(w1-w0)*1e6/5e6,p&1); free(a);}
}
