#include "bulk_memory.h"

#include "ckpt/index/huge_page_malloc.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <utility>

namespace ckpt::detail {
namespace {

constexpr std::size_t kRegion = std::size_t(32) << 20;  // also the regions' alignment
constexpr std::size_t kHugePage = std::size_t(2) << 20;
constexpr std::size_t kHeader = 64;
// A block bigger than this gets a mapping of its own (sized in huge pages).
constexpr std::size_t kOwnMapping = kRegion / 4;

// At the start of each region (and of each block's own mapping).
struct Header {
  std::atomic<std::size_t> refs{1};
  std::size_t length = 0;
};
static_assert(sizeof(Header) <= kHeader);

std::atomic<std::size_t> g_mapped{0};

}  // namespace

bool hugePagesOn() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool on = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    std::getline(f, mode);
    return mode.find("[always]") != std::string::npos ||
           mode.find("[madvise]") != std::string::npos;
  }();
  return on;
#endif
}

namespace {

// `length` bytes (a multiple of kHugePage) aligned to kRegion, so that a
// block finds its header by masking its address; nullptr when the address
// space or memory is not there.
Header* mapRegion(std::size_t length) {
  const std::size_t span = length + kRegion;
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (start + kRegion - 1) & ~std::uintptr_t(kRegion - 1);
  if (aligned > start) ::munmap(p, aligned - start);
  if (start + span > aligned + length)
    ::munmap(reinterpret_cast<void*>(aligned + length), start + span - (aligned + length));
  // Advice only: without it the region is ordinary memory.
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  auto* h = new (reinterpret_cast<void*>(aligned)) Header;
  h->length = length;
  ++g_mapped;
  return h;
}

void unref(Header* h) {
  if (h->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  const std::size_t length = h->length;
  h->~Header();
  ::munmap(h, length);
  --g_mapped;
}

// The region this thread carves from; its reference is dropped when the
// region is full or the thread ends.
struct ThreadRegion {
  Header* header = nullptr;
  std::size_t used = 0;
  ThreadRegion() = default;
  ThreadRegion(const ThreadRegion&) = delete;
  ThreadRegion& operator=(const ThreadRegion&) = delete;
  ~ThreadRegion() {
    if (header) unref(header);
  }
};

thread_local ThreadRegion t_region;

}  // namespace

void* bulkAllocate(std::size_t bytes) {
  if (bytes < kBulkMinBytes || !hugePagesOn()) return nullptr;
  const std::size_t need = (bytes + 63) & ~std::size_t(63);
  if (need > kOwnMapping) {
    const std::size_t length = (kHeader + need + kHugePage - 1) & ~(kHugePage - 1);
    Header* h = mapRegion(length);  // its one reference is the block's
    return h ? reinterpret_cast<char*>(h) + kHeader : nullptr;
  }
  ThreadRegion& r = t_region;
  if (!r.header || r.used + need > r.header->length) {
    if (r.header) unref(r.header);
    r.header = mapRegion(kRegion);
    r.used = kHeader;
    if (!r.header) return nullptr;
  }
  char* block = reinterpret_cast<char*>(r.header) + r.used;
  r.used += need;
  r.header->refs.fetch_add(1, std::memory_order_relaxed);
  return block;
}

void bulkRelease(void* block) {
  const auto at = reinterpret_cast<std::uintptr_t>(block);
  unref(reinterpret_cast<Header*>(at & ~std::uintptr_t(kRegion - 1)));
}

std::size_t bulkRegionsMapped() {
  return g_mapped.load();
}

}  // namespace ckpt::detail

namespace ckpt {

namespace {
constexpr std::size_t kHeapPad = std::size_t(32) << 20;
constexpr int kThreadCacheCount = 255;
}  // namespace

void restartWithHugePageMalloc(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) return;  // set: once only
  if (!detail::hugePagesOn() || !argv || !argv[0]) return;
  std::string value = tunables && *tunables ? std::string(tunables) + ":" : std::string();
  value += "glibc.malloc.hugetlb=1";
  // And, each unless a person set it:
  // - the heap grown 32 MiB at a time: grown by 128 KiB, as glibc's
  //   default pads it, the new memory cannot be a huge page, and a cold
  //   listing of 50,000 files touched 8,000 fresh 4 KiB pages (1,000 now,
  //   14% less time);
  // - up to 255 freed small blocks of a size kept by each thread (glibc
  //   keeps 7): reading a checkpoint makes and drops hundreds of small
  //   strings and vectors, and past the 7th each went through malloc's
  //   locked bins (the browser's cold open of 50,000 files: 20% less time).
  for (const auto& [name, wanted] :
       {std::pair<const char*, std::string>{"glibc.malloc.top_pad", std::to_string(kHeapPad)},
        {"glibc.malloc.tcache_count", std::to_string(kThreadCacheCount)}})
    if (!tunables || !std::strstr(tunables, name)) value += ":" + std::string(name) + "=" + wanted;
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // Not started again: as it was (the variable would be misleading).
  if (tunables)
    ::setenv("GLIBC_TUNABLES", tunables, 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
}

}  // namespace ckpt
