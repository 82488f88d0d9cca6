// What of a checkpoint travels for a comparison with a file on another
// machine: every byte but the storages' (skeletonRanges), opened there as
// the same file (openSkeleton); and a digest of a tensor's stored bytes.
#include "ckpt/format/checkpoint_skeleton.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/zip_archive.h"
#include "sharded_util.h"

namespace ckpt {
namespace {

// XXH64 (Yann Collet's xxHash, 64-bit), streamed: fast enough that hashing
// a tensor costs about what reading it does.
class Xxh64 {
 public:
  void update(const uint8_t* p, size_t n) {
    m_total += n;
    if (m_held + n < 32) {
      std::memcpy(m_buf + m_held, p, n);
      m_held += n;
      return;
    }
    if (m_held) {
      const size_t take = 32 - m_held;
      std::memcpy(m_buf + m_held, p, take);
      stripe(m_buf);
      p += take;
      n -= take;
      m_held = 0;
    }
    for (; n >= 32; p += 32, n -= 32) stripe(p);
    std::memcpy(m_buf, p, n);
    m_held = n;
  }

  [[nodiscard]] uint64_t digest() const {
    uint64_t h;
    if (m_total >= 32) {
      h = rotl(m_v[0], 1) + rotl(m_v[1], 7) + rotl(m_v[2], 12) + rotl(m_v[3], 18);
      for (uint64_t v : m_v) h = (h ^ round(0, v)) * kP1 + kP4;
    } else {
      h = kP5;  // seed 0
    }
    h += m_total;
    const uint8_t* p = m_buf;
    size_t n = m_held;
    for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round(0, load64(p)), 27) * kP1 + kP4;
    if (n >= 4) {
      uint32_t w;
      std::memcpy(&w, p, 4);
      h = rotl(h ^ (uint64_t(w) * kP1), 23) * kP2 + kP3;
      p += 4;
      n -= 4;
    }
    for (; n > 0; ++p, --n) h = rotl(h ^ (uint64_t(*p) * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
  }

 private:
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                            kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                            kP5 = 0x27D4EB2F165667C5ull;
  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);  // little-endian hosts only (as the rest of the reader)
    return v;
  }
  static uint64_t round(uint64_t acc, uint64_t input) { return rotl(acc + input * kP2, 31) * kP1; }
  void stripe(const uint8_t* p) {
    for (int i = 0; i < 4; ++i) m_v[i] = round(m_v[i], load64(p + 8 * i));
  }

  uint64_t m_v[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  uint8_t m_buf[32] = {};
  size_t m_held = 0;
  uint64_t m_total = 0;
};

}  // namespace

std::vector<ByteRange> skeletonRanges(const CheckpointFile& file) {
  if (file.shards())
    fail(file.path() + ": a sharded checkpoint has no single file to send in parts");
  // The storages' bytes, as extents of the file.
  std::vector<ByteRange> holes;
  const uint64_t size = file.input().size();
  for (const StorageInfo& s : file.storages()) {
    if (file.zip()) {
      if (s.zipEntry < 0) continue;
      const ZipEntry& e = file.zip()->entries()[size_t(s.zipEntry)];
      try {
        holes.push_back({file.zip()->dataOffset(e), e.compressedSize});
      } catch (const FormatError&) {
        // A record whose local header is damaged: nothing to leave out.
      }
    } else if (s.dataOffsetKnown && s.error.empty()) {
      holes.push_back({s.dataOffset, s.nbytes()});
    }
  }
  std::sort(holes.begin(), holes.end(),
            [](const ByteRange& x, const ByteRange& y) { return x.offset < y.offset; });
  std::vector<ByteRange> out;
  uint64_t at = 0;
  for (const ByteRange& h : holes) {
    const uint64_t begin = std::min(h.offset, size);
    const uint64_t end = std::min(size, h.offset + std::min(h.length, size - begin));
    if (begin > at) out.push_back({at, begin - at});
    at = std::max(at, end);
  }
  if (at < size) out.push_back({at, size - at});
  return out;
}

// A part (or an archive in one) the reader cannot read is sent whole up to this.
constexpr uint64_t kBrokenWholeBytes = uint64_t(64) << 20;

std::vector<SkeletonFileRanges> shardedSkeletonRanges(const CheckpointFile& file,
                                                      const std::string& base) {
  namespace fs = std::filesystem;
  const ShardSet* shards = file.shards();
  if (!shards) fail(file.path() + ": not a sharded checkpoint");
  const fs::path root = fs::path(base).lexically_normal();
  auto relative = [&](const std::string& path) {
    const fs::path rel = fs::path(path).lexically_normal().lexically_relative(root);
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..")
      fail(path + " lies outside " + base + ", the folder sent");
    return rel.generic_string();
  };
  std::vector<SkeletonFileRanges> out;
  auto whole = [&](const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      fail(path + ": cannot be read (" + std::strerror(errno) + ")");
    if (!S_ISREG(st.st_mode)) fail(path + ": not a regular file");
    out.push_back({relative(path), uint64_t(st.st_size), {{0, uint64_t(st.st_size)}}});
  };
  if (!shards->entry().empty()) whole(shards->entry());
  const std::vector<ShardPart>& parts = shards->parts();
  const bool dcp = shards->layout() == ShardLayout::Dcp;
  for (size_t i = 0; i < parts.size(); ++i) {
    const ShardPart& p = parts[i];
    if (!p.present) continue;  // missing there as here
    SkeletonFileRanges f{relative(p.path), p.size, {}};
    // What the reader could not make sense of is sent whole, so that a
    // reader elsewhere fails on the same bytes with the same words.
    auto sendWhole = [&](const std::string& why, uint64_t offset, uint64_t length) {
      offset = std::min(offset, p.size);
      length = std::min(length, p.size - offset);
      if (length > kBrokenWholeBytes)
        fail(p.path + " cannot be read (" + why + ") and is too large to send whole");
      f.ranges.push_back({offset, length});
    };
    if (!p.error.empty()) {
      sendWhole(p.error, 0, p.size);
    } else if (!dcp) {
      const CheckpointFile* part = shards->partFile(int(i));
      if (!part) fail(p.path + " is not open, so it cannot be sent in parts");
      f.ranges = skeletonRanges(*part);
    } else {
      // Each archive .metadata places in the part, without its storages.
      for (const ShardSet::StorageSlice& s : shards->storageSlices()) {
        if (s.part != int(i) || !s.error.empty()) continue;
        std::unique_ptr<CheckpointFile> slice;
        try {
          slice = sharded::openArchiveAt(p.path, s.offset, s.length);
        } catch (const FormatError& e) {
          sendWhole(e.what(), s.offset, s.length);
          continue;
        }
        for (const ByteRange& r : skeletonRanges(*slice))
          f.ranges.push_back({s.offset + r.offset, r.length});
      }
      std::sort(f.ranges.begin(), f.ranges.end(),
                [](const ByteRange& x, const ByteRange& y) { return x.offset < y.offset; });
      // Two entries naming one archive: its ranges once.
      std::vector<ByteRange> merged;
      for (const ByteRange& r : f.ranges) {
        if (!merged.empty() && r.offset <= merged.back().offset + merged.back().length) {
          ByteRange& m = merged.back();
          m.length = std::max(m.offset + m.length, r.offset + r.length) - m.offset;
        } else {
          merged.push_back(r);
        }
      }
      f.ranges = std::move(merged);
    }
    out.push_back(std::move(f));
  }
  if (dcp) {
    // The ranks a DCP folder counts include .distcp files no entry names:
    // there by name and size, none of their bytes read.
    std::error_code ec;
    for (fs::directory_iterator it(shards->folder(), ec), end; !ec && it != end; it.increment(ec)) {
      if (!sharded::endsWith(it->path().filename().native(), ".distcp")) continue;
      const std::string rel = relative(it->path().string());
      if (std::any_of(out.begin(), out.end(), [&](const auto& f) { return f.file == rel; }))
        continue;
      std::error_code sec;
      if (!it->is_regular_file(sec)) continue;
      out.push_back({rel, uint64_t(it->file_size(sec)), {}});
    }
  }
  return out;
}

void checkSkeletonParts(const std::string& name, uint64_t size,
                        const std::vector<SkeletonPart>& parts) {
  for (const SkeletonPart& p : parts)
    if (p.offset > size || p.bytes.size() > size - p.offset)
      fail(name + ": a part of " + std::to_string(p.bytes.size()) + " bytes at offset " +
           std::to_string(p.offset) + " lies past the end of the file (" + std::to_string(size) +
           " bytes)");
}

std::unique_ptr<CheckpointFile> openSkeleton(const std::string& name, uint64_t size,
                                             const std::vector<SkeletonPart>& parts,
                                             const ReadOptions& options) {
  checkSkeletonParts(name, size, parts);
  const size_t span = size_t(std::max<uint64_t>(size, 1));
  // Reserved, not filled: pages no part touches are never made.
  void* mem = ::mmap(nullptr, span, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED)
    fail(name + ": cannot reserve " + std::to_string(size) + " bytes: " + std::strerror(errno));
  std::shared_ptr<const void> owner(
      mem, [span](const void* q) { ::munmap(const_cast<void*>(q), span); });
  auto* bytes = static_cast<uint8_t*>(mem);
  for (const SkeletonPart& p : parts) std::memcpy(bytes + p.offset, p.bytes.data(), p.bytes.size());
  return CheckpointFile::openBytes(name, ByteRegion{owner, bytes, size}, options);
}

std::string tensorDigest(const TensorData& data,
                         const std::function<bool(uint64_t bytes)>& progress) {
  constexpr size_t kBlock = 1u << 20;  // bytes per read
  const DType dtype = data.info().dtype;
  // Elements per read: a whole number of bytes for the packed types.
  const size_t perRead = std::max<size_t>(8, kBlock / size_t(dtypeSize(dtype)));
  std::vector<uint8_t> buffer(dtypeBytesFor(dtype, perRead));
  Xxh64 h;
  uint64_t done = 0;
  for (uint64_t first = 0; first < data.numel();) {
    const size_t n = data.readBytes(first, perRead, buffer.data());
    if (n == 0) fail("tensor " + std::string(data.info().name()) + ": short read");
    const uint64_t bytes = dtypeBytesFor(dtype, n);
    h.update(buffer.data(), bytes);
    first += n;
    done += bytes;
    if (progress && !progress(done)) return {};
  }
  static const char* hex = "0123456789abcdef";
  std::string out = "xxh64:";
  const uint64_t d = h.digest();
  for (int shift = 60; shift >= 0; shift -= 4) out += hex[(d >> shift) & 15];
  return out;
}

}  // namespace ckpt
