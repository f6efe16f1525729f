#!/usr/bin/env python3
"""twin29: the folios the page cache holds a file's pages in, from /proc/self/pagemap (each page's
frame; the file is mapped and each page read, which maps the cached pages without allocating
new ones) and /proc/kpageflags (KPF_COMPOUND_HEAD 15, KPF_COMPOUND_TAIL 16). Root. Prints, for
each file, its pages by the size of the folio that holds them. Usage: folios.py FILE..."""
import collections, ctypes, mmap, os, struct, sys
HEAD, TAIL = 1 << 15, 1 << 16
def folios(path):
    fd = os.open(path, os.O_RDWR); size = os.fstat(fd).st_size; pages = (size + 4095) // 4096
    m = mmap.mmap(fd, size)
    c = ctypes.c_char.from_buffer(m); start = ctypes.addressof(c); del c
    for i in range(pages): m[i * 4096]  # read only: maps the cached page
    kinds = []
    with open("/proc/self/pagemap", "rb") as pm, open("/proc/kpageflags", "rb") as kf:
        for i in range(pages):
            pm.seek((start // 4096 + i) * 8); e = struct.unpack("Q", pm.read(8))[0]
            if not e >> 63 & 1: kinds.append("-"); continue
            kf.seek((e & ((1 << 55) - 1)) * 8); f = struct.unpack("Q", kf.read(8))[0]
            kinds.append("H" if f & HEAD else "T" if f & TAIL else "1")
    m.close(); os.close(fd)
    sizes = collections.Counter(); i = 0
    while i < pages:
        j = i + 1
        if kinds[i] == "H":
            while j < pages and kinds[j] == "T": j += 1
        sizes[(j - i) * 4 if kinds[i] != "-" else 0] += j - i; i = j
    return pages, sizes
if __name__ == "__main__":
    for p in sys.argv[1:]:
        pages, sizes = folios(p)
        print(f"{os.path.basename(p)}: {pages} pages; pages by folio KiB: " + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items())))
