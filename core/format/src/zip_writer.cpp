// Zip headers for torch archives (FORMAT.md section 1), as PyTorch's
// PyTorchStreamWriter (miniz) lays them out.
#include <algorithm>

#include "ckpt/format/error.h"
#include "ckpt/format/torch_writer.h"

namespace ckpt::writer::zip {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kDescriptorSig = 0x08074b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint16_t kFlags = 0x0808;  // data descriptor + UTF-8 names
constexpr uint16_t kZip64Version = 45;
constexpr size_t kLocalHeaderSize = 30;

void put16(std::string& out, uint64_t v) {
  out += char(v & 0xFF);
  out += char((v >> 8) & 0xFF);
}
void put32(std::string& out, uint64_t v) {
  for (int i = 0; i < 4; ++i) out += char((v >> (8 * i)) & 0xFF);
}
void put64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += char((v >> (8 * i)) & 0xFF);
}
uint32_t clamp32(uint64_t v) {
  return v >= kZip64Limit ? 0xFFFFFFFFu : uint32_t(v);
}

void checkName(std::string_view name) {
  if (name.empty() || name.size() > 0xFFFF)
    fail("zip record name of " + std::to_string(name.size()) + " bytes");
}

}  // namespace

bool needsZip64Sizes(uint64_t size) {
  return size >= kZip64Limit;
}
bool needsZip64Offset(uint64_t offset) {
  return offset >= kZip64Limit;
}

std::string localHeader(std::string_view name, uint64_t offset, uint64_t size) {
  checkName(name);
  const bool big = needsZip64Sizes(size);
  // The zip64 extra of a local header holds both sizes (APPNOTE 4.5.3); the
  // real values also follow the data in the descriptor.
  std::string zip64;
  if (big) {
    put16(zip64, 0x0001);
    put16(zip64, 16);
    put64(zip64, size);
    put64(zip64, size);
  }
  // The 'FB' extra's payload pads the data start to the alignment.
  const uint64_t start = offset + kLocalHeaderSize + name.size() + zip64.size() + 4;
  const uint64_t pad = (kAlignment - start % kAlignment) % kAlignment;
  std::string h;
  h.reserve(size_t(start - offset + pad));
  put32(h, kLocalSig);
  put16(h, big ? kZip64Version : 0);
  put16(h, kFlags);
  put16(h, 0);                      // stored
  put16(h, 0);                      // time
  put16(h, 0);                      // date
  put32(h, 0);                      // crc: in the descriptor
  put32(h, big ? 0xFFFFFFFFu : 0);  // sizes: in the descriptor (or the zip64 extra)
  put32(h, big ? 0xFFFFFFFFu : 0);
  put16(h, name.size());
  put16(h, zip64.size() + 4 + pad);
  h.append(name);
  h += zip64;
  h += "FB";
  put16(h, pad);
  h.append(size_t(pad), 'Z');
  return h;
}

std::string dataDescriptor(uint32_t crc, uint64_t size) {
  std::string d;
  put32(d, kDescriptorSig);
  put32(d, crc);
  if (needsZip64Sizes(size)) {
    put64(d, size);
    put64(d, size);
  } else {
    put32(d, size);
    put32(d, size);
  }
  return d;
}

std::string centralHeader(std::string_view name, uint64_t offset, uint64_t size, uint32_t crc) {
  checkName(name);
  std::string extra;
  if (needsZip64Sizes(size) || needsZip64Offset(offset)) {
    std::string fields;
    if (needsZip64Sizes(size)) {
      put64(fields, size);  // uncompressed
      put64(fields, size);  // compressed
    }
    if (needsZip64Offset(offset)) put64(fields, offset);
    put16(extra, 0x0001);
    put16(extra, fields.size());
    extra += fields;
  }
  std::string h;
  put32(h, kCentralSig);
  put16(h, extra.empty() ? 0 : kZip64Version);  // made by
  put16(h, extra.empty() ? 0 : kZip64Version);  // needed
  put16(h, kFlags);
  put16(h, 0);  // stored
  put16(h, 0);  // time
  put16(h, 0);  // date
  put32(h, crc);
  put32(h, clamp32(size));
  put32(h, clamp32(size));
  put16(h, name.size());
  put16(h, extra.size());
  put16(h, 0);  // comment
  put16(h, 0);  // disk
  put16(h, 0);  // internal attributes
  put32(h, 0);  // external attributes
  put32(h, clamp32(offset));
  h.append(name);
  h += extra;
  return h;
}

std::string endRecords(uint64_t entries, uint64_t cdOffset, uint64_t cdSize) {
  std::string e;
  const uint64_t zip64End = cdOffset + cdSize;
  put32(e, kZip64EndSig);
  put64(e, 44);      // size of the rest of this record
  put16(e, 0x031e);  // made by: unix, 3.0 (as miniz)
  put16(e, kZip64Version);
  put32(e, 0);  // this disk
  put32(e, 0);  // disk of the central directory
  put64(e, entries);
  put64(e, entries);
  put64(e, cdSize);
  put64(e, cdOffset);
  put32(e, kZip64LocatorSig);
  put32(e, 0);
  put64(e, zip64End);
  put32(e, 1);  // disks
  put32(e, kEndSig);
  put16(e, 0);
  put16(e, 0);
  put16(e, std::min<uint64_t>(entries, 0xFFFF));
  put16(e, std::min<uint64_t>(entries, 0xFFFF));
  put32(e, clamp32(cdSize));
  put32(e, clamp32(cdOffset));
  put16(e, 0);  // comment
  return e;
}

}  // namespace ckpt::writer::zip
