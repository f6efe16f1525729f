import os,sys
p=sys.argv[1]; n=1<<30; buf=os.urandom(1<<20)
fd=os.open(p,os.O_WRONLY|os.O_CREAT)
while True:
    off=0
    while off<n:
        os.pwrite(fd,buf,off); off+=1<<20
