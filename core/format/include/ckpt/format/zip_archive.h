#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ckpt/format/input_file.h"

namespace ckpt {

struct ZipEntry {
  std::string_view name;  // points into the archive's copy of the central directory
  uint16_t method = 0;    // 0 stored, 8 deflated
  uint16_t flags = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0;
  uint64_t size = 0;
  uint64_t localHeaderOffset = 0;
};

// The central directory of a zip (zip64 included) read with a few small
// reads. Entry data offsets come from each LOCAL header, read on demand, so
// opening an archive of a thousand tensors touches none of them.
class ZipArchive {
 public:
  explicit ZipArchive(const InputFile& file);  // throws FormatError

  [[nodiscard]] const std::vector<ZipEntry>& entries() const { return m_entries; }
  [[nodiscard]] const ZipEntry* find(std::string_view name) const;

  // Absolute offset of the entry's data (checked to lie inside the file).
  [[nodiscard]] uint64_t dataOffset(const ZipEntry& e) const;
  // The entry's bytes: mapped when stored, inflated into memory when
  // deflated. `maxSize` caps what a deflated entry may claim.
  [[nodiscard]] ByteRegion bytes(const ZipEntry& e, uint64_t maxSize = UINT64_MAX) const;
  // The same, copied, for small records (data.pkl, version).
  [[nodiscard]] std::vector<uint8_t> readAll(const ZipEntry& e, uint64_t maxSize) const;
  // The same into `out`, which holds e.size bytes (checked against maxSize
  // first: call this only after `e.size <= maxSize`, or let it throw).
  void readInto(const ZipEntry& e, uint64_t maxSize, uint8_t* out) const;
  // A stored, unencrypted record (throws for any other) read together with
  // its local header, in one read when the header is of the usual length:
  // `buf` holds e.size + localHeaderRoom(e) bytes; returns where in buf the
  // record's bytes begin. Checked as dataOffset() and readAll() check.
  const uint8_t* readStored(const ZipEntry& e, uint64_t maxSize, uint8_t* buf) const;
  [[nodiscard]] static uint64_t localHeaderRoom(const ZipEntry& e);
  // Recomputes the CRC-32 of the entry's data; "" when it matches, else why not.
  [[nodiscard]] std::string checkCrc(const ZipEntry& e) const;

 private:
  uint64_t dataOffsetFrom(const ZipEntry& e, const uint8_t* localHeader) const;

  const InputFile& m_file;
  std::unique_ptr<uint8_t[]> m_directory;  // the central directory, which entry names view
  std::vector<ZipEntry> m_entries;
  // Open addressing over entry indices by name hash (-1 empty): one
  // allocation instead of a node per entry. Built on the first find():
  // opening a torch file finds its records in one pass without it.
  void buildSlots() const;
  mutable std::once_flag m_slotsBuilt;
  mutable std::vector<int32_t> m_slots;
};

}  // namespace ckpt
