#pragma once
// Memory for big arrays that are filled once and then kept: the columns a
// sweep's metrics cache decodes on an open (20 M points, 160 MB). Fresh
// memory is paid for page by page when it is first written, and on a
// virtual machine that is dear: 160 MB in 4 KiB pages took 0.5-1.6 s on
// this project's VM, against 0.02-0.25 s in 2 MiB pages. So such arrays
// are carved from regions of 32 MiB that ask for transparent huge pages
// (madvise MADV_HUGEPAGE; the kernel's default "madvise" mode honours it).
//
// A region belongs to the thread that carves from it until it is full;
// each block holds a reference to it, and the region is unmapped when the
// last block is released (from any thread) and its thread has moved on or
// ended. A released block's bytes are not reused, so only arrays that live
// and die together belong here (a growing array does not: the heap's).
// No Qt.

#include <cstddef>

namespace ckpt::detail {

// A block of at least `bytes` bytes, 64-byte aligned, or nullptr: the
// caller then uses the heap. Nothing below kBulkMinBytes, nothing where
// the kernel has no transparent huge pages or they are off ("never"),
// nothing under AddressSanitizer (it could not see overruns in a region).
void* bulkAllocate(std::size_t bytes);
// Gives back a block bulkAllocate returned.
void bulkRelease(void* block);

constexpr std::size_t kBulkMinBytes = std::size_t(64) << 10;

// Whether the kernel's transparent huge pages are on ("always" or
// "madvise"); false under AddressSanitizer.
bool hugePagesOn();

// Regions mapped now (tests: every one is unmapped once its blocks are
// released and its thread has ended).
std::size_t bulkRegionsMapped();

}  // namespace ckpt::detail
