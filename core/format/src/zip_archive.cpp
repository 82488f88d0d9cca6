#include "ckpt/format/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "ckpt/format/error.h"

namespace ckpt {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint64_t kEocdSize = 22;
constexpr uint64_t kMaxComment = 0xFFFF;
// Deflate cannot shrink data by more than about 1032:1; a record that claims
// more is a bomb.
constexpr uint64_t kMaxDeflateRatio = 1100;

uint16_t le16(const uint8_t* p) {
  return uint16_t(p[0] | (p[1] << 8));
}
uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint64_t le64(const uint8_t* p) {
  return uint64_t(le32(p)) | (uint64_t(le32(p + 4)) << 32);
}

// Entry names are short paths ("archive/data/412"): a few multiply-xor
// rounds over 8-byte words hash them well enough for the probe table, in a
// fraction of std::hash's time.
size_t nameHash(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  if (n) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
  }
  h = (h ^ (h >> 32)) * 0x94D049BB133111EBull;
  return size_t(h ^ (h >> 29));
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

ZipArchive::ZipArchive(const InputFile& file) : m_file(file) {
  const uint64_t size = file.size();
  if (size < kEocdSize)
    fail("truncated: zip end of central directory not found (file has " + std::to_string(size) +
         " bytes)");

  // The end record sits at the very end unless a comment follows it: it lies
  // in the largest tail a comment allows. Read that tail once; the zip64
  // records and (for up to a thousand or so records) the central directory
  // lie in it too, and are then taken from it instead of read again.
  const uint64_t tailLen = std::min(size, kEocdSize + kMaxComment);
  const uint64_t tailStart = size - tailLen;
  std::unique_ptr<uint8_t[]> tail(new uint8_t[tailLen]);  // not zero-filled: all of it is read over
  file.read(tailStart, tailLen, tail.get());
  uint64_t eocd = UINT64_MAX;
  for (uint64_t i = tailLen - kEocdSize + 1; i-- > 0;) {
    if (le32(&tail[i]) == kEocdSig && i + kEocdSize + le16(&tail[i + 20]) == tailLen) {
      eocd = tailStart + i;
      break;
    }
  }
  if (eocd == UINT64_MAX) fail("truncated: zip central directory not found");
  // `n` bytes at `offset` (inside the file): from the tail when they lie in it.
  auto readAt = [&](uint64_t offset, uint64_t n, uint8_t* out) {
    if (offset >= tailStart)
      std::memcpy(out, &tail[offset - tailStart], n);
    else
      file.read(offset, n, out);
  };
  const uint8_t* e = &tail[eocd - tailStart];
  uint64_t count = le16(e + 10);
  uint64_t cdSize = le32(e + 12);
  uint64_t cdOffset = le32(e + 16);

  // zip64: the locator sits just before the end record.
  if (eocd >= 20) {
    uint8_t loc[20];
    readAt(eocd - 20, 20, loc);
    if (le32(loc) == kZip64LocatorSig) {
      const uint64_t rec = le64(loc + 8);
      uint8_t z[56];
      if (rec > eocd || eocd - rec < 56)
        fail("zip64 end record offset " + std::to_string(rec) + " is invalid");
      readAt(rec, 56, z);
      if (le32(z) != kZip64EocdSig)
        fail("zip64 end record not found at offset " + std::to_string(rec));
      count = le64(z + 32);
      cdSize = le64(z + 40);
      cdOffset = le64(z + 48);
    }
  }
  uint64_t cdEnd = 0;
  if (addOverflows(cdOffset, cdSize, &cdEnd) || cdEnd > eocd)
    fail("truncated: zip central directory (offset " + std::to_string(cdOffset) + ", " +
         std::to_string(cdSize) + " bytes) lies past the end of the file");
  if (count > cdSize / 46)
    fail("zip central directory claims " + std::to_string(count) + " entries in " +
         std::to_string(cdSize) + " bytes");

  const uint8_t* cd = nullptr;
  if (cdOffset >= tailStart) {  // the usual case: keep the tail, which holds it
    m_directory = std::move(tail);
    cd = m_directory.get() + (cdOffset - tailStart);
  } else {  // not zero-filled first: every byte is read over
    m_directory.reset(new uint8_t[std::max<uint64_t>(cdSize, 1)]);
    file.read(cdOffset, cdSize, m_directory.get());
    cd = m_directory.get();
  }
  m_entries.reserve(count);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    // Built only when something is wrong: this loop runs for every tensor.
    auto where = [&] {
      return "zip central directory entry " + std::to_string(i) + " at offset " +
             std::to_string(cdOffset + pos);
    };
    if (cdSize - pos < 46 || le32(&cd[pos]) != kCentralSig) fail(where() + ": bad signature");
    const uint8_t* h = &cd[pos];
    ZipEntry entry;
    entry.flags = le16(h + 8);
    entry.method = le16(h + 10);
    entry.crc = le32(h + 16);
    entry.compressedSize = le32(h + 20);
    entry.size = le32(h + 24);
    const uint64_t nameLen = le16(h + 28), extraLen = le16(h + 30), commentLen = le16(h + 32);
    entry.localHeaderOffset = le32(h + 42);
    if (cdSize - pos < 46 + nameLen + extraLen + commentLen)
      fail(where() + ": runs past the directory");
    entry.name = std::string_view(reinterpret_cast<const char*>(h + 46), nameLen);
    // zip64 extra: the 64-bit values of the fields that hold 0xFFFFFFFF, in order.
    const uint8_t* x = h + 46 + nameLen;
    for (uint64_t off = 0; off + 4 <= extraLen;) {
      const uint16_t id = le16(x + off), len = le16(x + off + 2);
      if (off + 4 + len > extraLen) break;
      if (id == 0x0001) {
        const uint8_t* v = x + off + 4;
        uint64_t left = len;
        auto take = [&](uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          if (left < 8) fail(where() + ": zip64 extra field too short");
          field = le64(v);
          v += 8;
          left -= 8;
        };
        take(entry.size);
        take(entry.compressedSize);
        take(entry.localHeaderOffset);
      }
      off += 4 + len;
    }
    if (entry.localHeaderOffset > cdOffset)
      fail(where() + " (" + std::string(entry.name) + "): local header offset " +
           std::to_string(entry.localHeaderOffset) + " lies past the data");
    pos += 46 + nameLen + extraLen + commentLen;
    m_entries.push_back(std::move(entry));
  }
}

void ZipArchive::buildSlots() const {
  size_t slots = 16;
  while (slots < 2 * m_entries.size()) slots *= 2;
  m_slots.assign(slots, -1);
  for (size_t i = 0; i < m_entries.size(); ++i) {
    size_t at = nameHash(m_entries[i].name) & (slots - 1);
    while (m_slots[at] >= 0) {
      if (m_entries[size_t(m_slots[at])].name == m_entries[i].name)
        break;  // duplicate name: first wins
      at = (at + 1) & (slots - 1);
    }
    if (m_slots[at] < 0) m_slots[at] = int32_t(i);
  }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  std::call_once(m_slotsBuilt, [this] { buildSlots(); });
  const size_t mask = m_slots.size() - 1;
  for (size_t at = nameHash(name) & mask; m_slots[at] >= 0; at = (at + 1) & mask)
    if (m_entries[size_t(m_slots[at])].name == name) return &m_entries[size_t(m_slots[at])];
  return nullptr;
}

uint64_t ZipArchive::dataOffset(const ZipEntry& e) const {
  uint8_t h[30];
  m_file.read(e.localHeaderOffset, 30, h);
  return dataOffsetFrom(e, h);
}

uint64_t ZipArchive::dataOffsetFrom(const ZipEntry& e, const uint8_t* h) const {
  if (le32(h) != kLocalSig)
    fail("zip record " + std::string(e.name) + ": bad local header signature at offset " +
         std::to_string(e.localHeaderOffset));
  const uint64_t off = e.localHeaderOffset + 30 + le16(h + 26) + le16(h + 28);
  uint64_t end = 0;
  if (addOverflows(off, e.compressedSize, &end) || end > m_file.size())
    failTruncated("truncated: zip record " + std::string(e.name) + " (" +
                  std::to_string(e.compressedSize) + " bytes at offset " + std::to_string(off) +
                  ") runs past the end of the file");
  return off;
}

uint64_t ZipArchive::localHeaderRoom(const ZipEntry& e) {
  return 30 + e.name.size() + 256;
}

const uint8_t* ZipArchive::readStored(const ZipEntry& e, uint64_t maxSize, uint8_t* buf) const {
  if (e.size > maxSize)
    fail("zip record " + std::string(e.name) + " is " + std::to_string(e.size) +
         " bytes, over the limit of " + std::to_string(maxSize));
  if (e.method != 0 || (e.flags & 1) || e.compressedSize != e.size)
    fail("zip record " + std::string(e.name) + " is not a plain stored record");
  // The header, its name and extra field (which torch uses to align the data),
  // and the data, in one read when the header is no longer than expected.
  const uint64_t room = localHeaderRoom(e);
  const uint64_t inFile =
      e.localHeaderOffset < m_file.size() ? m_file.size() - e.localHeaderOffset : 0;
  const uint64_t want = std::min(room + e.size, inFile);
  if (want < 30) {
    uint8_t h[30];
    m_file.read(e.localHeaderOffset, 30, h);  // throws: the header lies past the end of the file
  }
  m_file.read(e.localHeaderOffset, want, buf);
  const uint64_t at = dataOffsetFrom(e, buf) - e.localHeaderOffset;  // checks the data's extent
  if (at + e.size <= want) return buf + at;
  m_file.read(e.localHeaderOffset + at, e.size, buf);
  return buf;
}

ByteRegion ZipArchive::bytes(const ZipEntry& e, uint64_t maxSize) const {
  if (e.flags & 1) fail("zip record " + std::string(e.name) + " is encrypted");
  if (e.method == 0) {
    if (e.compressedSize != e.size)
      fail("zip record " + std::string(e.name) + ": stored record with different sizes");
    return m_file.map(dataOffset(e), e.size);
  }
  if (e.method != 8)
    fail("zip record " + std::string(e.name) + ": unsupported compression method " +
         std::to_string(e.method));
  if (e.size > maxSize)
    fail("zip record " + std::string(e.name) + " claims " + std::to_string(e.size) +
         " bytes, over the limit of " + std::to_string(maxSize));
  uint64_t cap = 0;
  if (mulOverflows(e.compressedSize + 1, kMaxDeflateRatio, &cap) || e.size > cap)
    fail("zip record " + std::string(e.name) + " claims " + std::to_string(e.size) +
         " bytes from " + std::to_string(e.compressedSize) + " compressed: not plausible");
  const ByteRegion packed = m_file.map(dataOffset(e), e.compressedSize);
  // One spare byte: a stream that inflates to more than it claims fills it.
  auto out = std::make_shared<std::vector<uint8_t>>(e.size + 1);
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail("zlib init failed");
  uint64_t inLeft = packed.size, outDone = 0;
  const uint8_t* in = packed.data;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const uInt inChunk = uInt(std::min<uint64_t>(inLeft, 1u << 30));
    const uInt outChunk = uInt(std::min<uint64_t>(e.size + 1 - outDone, 1u << 30));
    zs.next_in = const_cast<Bytef*>(in);
    zs.avail_in = inChunk;
    zs.next_out = out->data() + outDone;
    zs.avail_out = outChunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    in += inChunk - zs.avail_in;
    inLeft -= inChunk - zs.avail_in;
    outDone += outChunk - zs.avail_out;
    if (rc == Z_OK && zs.avail_out == outChunk && zs.avail_in == inChunk)
      rc = Z_BUF_ERROR;  // no progress
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || outDone != e.size)
    fail("zip record " + std::string(e.name) +
         ": deflate stream is corrupt or does not match its size (" + std::to_string(outDone) +
         " of " + std::to_string(e.size) + " bytes)");
  ByteRegion region;
  out->pop_back();
  region.data = out->data();
  region.size = out->size();
  region.owner = std::move(out);
  return region;
}

std::vector<uint8_t> ZipArchive::readAll(const ZipEntry& e, uint64_t maxSize) const {
  if (e.size > maxSize)
    fail("zip record " + std::string(e.name) + " is " + std::to_string(e.size) +
         " bytes, over the limit of " + std::to_string(maxSize));
  if (e.method == 0 && !(e.flags & 1)) {
    if (e.compressedSize != e.size)
      fail("zip record " + std::string(e.name) + ": stored record with different sizes");
    return m_file.read(dataOffset(e), e.size);
  }
  const ByteRegion r = bytes(e, maxSize);
  return std::vector<uint8_t>(r.data, r.data + r.size);
}

void ZipArchive::readInto(const ZipEntry& e, uint64_t maxSize, uint8_t* out) const {
  if (e.size > maxSize)
    fail("zip record " + std::string(e.name) + " is " + std::to_string(e.size) +
         " bytes, over the limit of " + std::to_string(maxSize));
  if (e.method == 0 && !(e.flags & 1)) {
    if (e.compressedSize != e.size)
      fail("zip record " + std::string(e.name) + ": stored record with different sizes");
    m_file.read(dataOffset(e), e.size, out);
    return;
  }
  const ByteRegion r = bytes(e, maxSize);
  if (r.size != e.size)
    fail("zip record " + std::string(e.name) + ": inflated to an unexpected size");
  if (r.size) std::memcpy(out, r.data, r.size);
}

std::string ZipArchive::checkCrc(const ZipEntry& e) const {
  try {
    const ByteRegion r = bytes(e);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t off = 0; off < r.size;) {
      const uInt chunk = uInt(std::min<uint64_t>(r.size - off, 1u << 30));
      crc = crc32(crc, r.data + off, chunk);
      off += chunk;
    }
    if (uint32_t(crc) != e.crc)
      return "record " + std::string(e.name) + ": CRC mismatch (stored " + hex32(e.crc) +
             ", computed " + hex32(uint32_t(crc)) + ")";
  } catch (const FormatError& err) {
    return err.what();
  }
  return {};
}

}  // namespace ckpt
