#include <string.h>
#include <stdlib.h>
int main(int c,char**v){ size_t n=(size_t)atoi(v[1])<<20; char*a=malloc(n),*b=malloc(n); memset(a,1,n); memset(b,2,n);
 volatile unsigned long x=0; if(n==0){for(;;)x++;} for(;;){memcpy(b,a,n); a[0]++;} }
