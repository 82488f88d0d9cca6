#pragma once
// Huge pages for the process's heap. In a VM a first touch of a fresh 4 KiB
// page is costly: a listing of 50,000 small checkpoints touched 24-27k of
// them, most of its system time. glibc advises its heap for transparent huge
// pages when started with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, and reads
// its tunables only when a process starts: so the program starts itself
// again with that added, once, first thing in main (same pid, arguments and
// open files), and glibc.malloc.top_pad=33554432 (the heap grown 32 MiB at
// a time, so that what it grows by can be huge pages) and
// glibc.malloc.tcache_count=255 (each thread keeps up to 255 freed small
// blocks of a size, not 7), each unless the person's GLIBC_TUNABLES names
// it. Nothing is done when the kernel's transparent huge pages are
// "never", when GLIBC_TUNABLES already names glibc.malloc.hugetlb (a
// person's own value, 0 included, is kept), or when the start fails (the
// program goes on as it is).

namespace ckpt {

void restartWithHugePageMalloc(char** argv);

}  // namespace ckpt
