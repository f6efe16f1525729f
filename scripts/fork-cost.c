// What a fork, a thread and an exec cost on this machine, in microseconds per operation: the price
// side of `[agent] favor_dynmods` (docs/agent.md, "Moves without a grace period"), which makes the
// kernel's fork, exit and exec take a lock more.
//
//   cc -O2 -pthread -o /tmp/fork-cost scripts/fork-cost.c && /tmp/fork-cost 5000
//
// N forks of a child that exits at once (waited for), N threads created and joined, N/10 forks
// that exec /bin/true. One line per run; run it several times and compare medians.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void*nop(void*a){return a;}
int main(int argc,char**argv){
  int n=argc>1?atoi(argv[1]):5000;
  double t0=now();
  for(int i=0;i<n;i++){pid_t p=fork();if(p==0)_exit(0);waitpid(p,0,0);}
  double t1=now();
  for(int i=0;i<n;i++){pthread_t t;pthread_create(&t,0,nop,0);pthread_join(t,0);}
  double t2=now();
  int m=n/10;
  for(int i=0;i<m;i++){pid_t p=fork();if(p==0){execl("/bin/true","true",(char*)0);_exit(127);}waitpid(p,0,0);}
  double t3=now();
  printf("fork+exit %.2f us  thread %.2f us  fork+exec %.1f us\n",(t1-t0)/n*1e6,(t2-t1)/n*1e6,(t3-t2)/m*1e6);
  return 0;}
