// The legacy format's first three pickles (FORMAT.md §3): the rule that
// tells a torch legacy file from a plain pickle, for the sniff, the reader
// and anyone else who asks (checkpoint_file.h, readLegacyHead).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"

namespace ckpt {
namespace {

using K = Value::Kind;

// 0x1950a86a20f9469cfc6c, as pickle's LONG and LONG1 spell it.
constexpr std::string_view kMagicDecimal = "119547037146038801333356";
constexpr uint8_t kMagicLE[10] = {0x6C, 0xFC, 0x9C, 0x46, 0xF9, 0x20, 0x6A, 0xA8, 0x50, 0x19};
constexpr int64_t kProtocolVersion = 1001;
// A damaged magic number pickle is at most this long: torch's are 15 to 28
// bytes (a flipped length byte may make the parse stray, not the layout).
constexpr uint64_t kMaxMagicBytes = 64;

// The magic number pickle as Python's pickler writes it for each protocol:
// text LONG for 0 and 1, PROTO + LONG1 for 2 and 3, the same in a FRAME for
// 4 and 5. Used only to say which byte of a damaged one is wrong.
std::vector<std::string> torchMagicPickles() {
  std::vector<std::string> out;
  out.push_back("L" + std::string(kMagicDecimal) + "L\n.");
  const std::string long1 = std::string("\x8a\x0a", 2) +
                            std::string(reinterpret_cast<const char*>(kMagicLE), sizeof kMagicLE) +
                            ".";
  for (char proto = 2; proto <= 5; ++proto) {
    out.push_back(std::string("\x80", 1) + proto + long1);
    if (proto >= 4) {
      std::string frame = std::string("\x80", 1) + proto + "\x95";
      for (int i = 0; i < 8; ++i) frame += char(i == 0 ? long1.size() : 0);
      out.push_back(frame + long1);
    }
  }
  return out;
}

// One of the small pickles, parsed on its own arena with tight limits (a
// hostile header gets an error, not work). Never calls anything: no
// persistent loader, no tensor table.
struct Small {
  const Value* root = nullptr;
  uint64_t end = 0;
  std::string error;    // empty when it parsed
  bool ranOut = false;  // the bytes given ended inside it
};

Small parseSmall(ValueArena& arena, const char* what, const uint8_t* data, uint64_t size,
                 uint64_t at) {
  PickleLimits limits;
  limits.maxDepth = 8;
  limits.maxStringBytes = 4096;
  limits.maxNodes = arena.size() + 4096;
  limits.maxMemo = 1024;
  limits.maxStack = 1024;
  Small s;
  try {
    PickleReader reader(arena, what, limits);
    const PickleResult r = reader.parse(data + at, size - at, at);
    s.root = r.root;
    s.end = at + r.end;
    // torch's header pickles are one frame each from protocol 4 on, ending
    // at STOP. Python reads a frame whole, so a frame length that is off
    // makes the next pickle start in the wrong place (the reader itself
    // takes FRAME as a hint): such a header is damaged.
    if (r.end >= 11 && data[at] == 0x80 && data[at + 2] == 0x95) {
      uint64_t len = 0;
      for (int i = 0; i < 8; ++i) len |= uint64_t(data[at + 3 + i]) << (8 * i);
      if (len != r.end - 11) {
        s.root = nullptr;
        s.error = std::string(what) + ": the frame at byte " + std::to_string(at + 2) + " claims " +
                  std::to_string(len) + " bytes, the pickle after it takes " +
                  std::to_string(r.end - 11);
      }
    }
  } catch (const TruncatedError& e) {
    s.error = e.what();
    s.ranOut = true;
  } catch (const FormatError& e) {
    s.error = e.what();
  }
  return s;
}

bool isMagic(const Small& s) {
  return s.root && s.root->kind == K::BigInt && s.root->text == kMagicDecimal;
}
bool isProtocolVersion(const Small& s) {
  return s.root && s.root->isInt() && s.root->integer == kProtocolVersion;
}
// torch's sys_info: {'protocol_version': 1001, 'little_endian': bool, 'type_sizes': {...}}.
bool isSysInfo(const Small& s) {
  if (!s.root || !s.root->isDict()) return false;
  const Value* v = s.root->get("protocol_version");
  return v && v->isInt() && v->integer == kProtocolVersion;
}

std::string hex(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

// The first byte where data[0, end) differs from the closest of torch's
// spellings of the magic number pickle of that length, and how many bytes
// differ (SIZE_MAX when none has that length).
struct Closest {
  size_t differing = SIZE_MAX;
  size_t first = 0;
  uint8_t expected = 0;
};
Closest closestMagic(const uint8_t* data, uint64_t end) {
  Closest best;
  static const std::vector<std::string> spellings = torchMagicPickles();
  for (const std::string& t : spellings) {
    if (t.size() != end) continue;
    size_t diff = 0, first = SIZE_MAX;
    for (size_t i = 0; i < t.size(); ++i)
      if (uint8_t(t[i]) != data[i]) {
        ++diff;
        first = std::min(first, i);
      }
    if (diff < best.differing) best = {diff, first, uint8_t(first < t.size() ? t[first] : 0)};
  }
  return best;
}

// What is wrong with the magic number pickle in data[0, end): the first
// byte where it differs from torch's, else what it decoded to (or why it
// did not decode).
std::string magicDamage(const uint8_t* data, uint64_t end, const Small& magic) {
  if (end == 0) return "no magic number pickle before the protocol version at byte 0";
  const std::string where = "the magic number pickle (bytes 0-" + std::to_string(end - 1) + ")";
  const Closest c = closestMagic(data, end);
  if (c.differing != SIZE_MAX && c.differing > 0)
    return where + " differs from torch's at byte " + std::to_string(c.first) + ": " +
           hex(data[c.first]) + ", torch writes " + hex(c.expected);
  if (magic.root)
    return where + " holds " + shortRepr(magic.root, 60) + ", not torch's magic number";
  return where + " does not parse: " + magic.error;
}

bool holds(const uint8_t* data, uint64_t size, std::string_view bytes) {
  return std::search(data, data + size, bytes.begin(), bytes.end(),
                     [](uint8_t a, char b) { return a == uint8_t(b); }) != data + size;
}

// Whether data[at, size) can hold the protocol version 1001 at all. The
// reader makes an int only from its decimal digits (INT, LONG: leading
// zeros, sign and spaces around them) or its little-endian bytes (BININT,
// BININT2, LONG1, LONG4), so every spelling holds "1001" or 0xe9 0x03.
// Exact, and it spares a parse per candidate offset.
bool mayHoldProtocolVersion(const uint8_t* data, uint64_t size, uint64_t at) {
  if (at >= size) return false;
  return holds(data + at, size - at, "1001") || holds(data + at, size - at, "\xe9\x03");
}

// Whether torch's protocol version pickle and a sys_info dict start at byte
// `at`: what follows the magic number in every legacy file.
bool protocolAndSysInfoAt(ValueArena& arena, const uint8_t* data, uint64_t size, uint64_t at) {
  if (!mayHoldProtocolVersion(data, size, at)) return false;
  const Small protocol = parseSmall(arena, "legacy protocol version pickle", data, size, at);
  if (!isProtocolVersion(protocol)) return false;
  return isSysInfo(parseSmall(arena, "legacy sys_info pickle", data, size, protocol.end));
}

}  // namespace

std::string legacyMagicReplaced(const uint8_t* data, uint64_t size, uint64_t firstEnd,
                                const Value* first) {
  if (!first || firstEnd == 0 || firstEnd >= size) return {};
  if (first->kind == K::BigInt && first->text == kMagicDecimal) return {};
  ValueArena arena;
  if (!protocolAndSysInfoAt(arena, data, size, firstEnd)) return {};
  Small magic;
  magic.root = first;
  magic.end = firstEnd;
  return magicDamage(data, firstEnd, magic);
}

LegacyHead readLegacyHead(const uint8_t* data, uint64_t size, uint64_t fileSize) {
  LegacyHead head;
  // Neither the magic number (its digits, or its little-endian bytes as
  // LONG1 and LONG4 write them) nor the protocol version anywhere in the
  // head: no legacy file, intact or damaged, whatever the parses below
  // would find. Most files that are not legacy ones stop here unparsed.
  const std::string_view magicLE(reinterpret_cast<const char*>(kMagicLE), sizeof kMagicLE);
  if (!mayHoldProtocolVersion(data, size, 0) && !holds(data, size, kMagicDecimal) &&
      !holds(data, size, magicLE))
    return head;
  const bool whole = size >= fileSize;  // a parse that runs out has reached the file's end
  ValueArena arena;
  const Small magic = parseSmall(arena, "legacy magic number pickle", data, size, 0);

  if (isMagic(magic)) {
    head.verdict = LegacyHead::Verdict::Legacy;
    auto damaged = [&](const std::string& what, const Small& s, const std::string& expected) {
      if (s.ranOut && !whole) return head;  // the rest lies past the bytes given
      head.verdict = LegacyHead::Verdict::Damaged;
      head.damage = what + (s.root ? " holds " + shortRepr(s.root, 60) + ", " + expected
                                   : " does not parse: " + s.error);
      return head;
    };
    const Small protocol =
        parseSmall(arena, "legacy protocol version pickle", data, size, magic.end);
    if (!isProtocolVersion(protocol))
      return damaged("the protocol version pickle at byte " + std::to_string(magic.end), protocol,
                     "torch writes 1001");
    const Small sysInfo = parseSmall(arena, "legacy sys_info pickle", data, size, protocol.end);
    if (!isSysInfo(sysInfo))
      return damaged("the sys_info pickle at byte " + std::to_string(protocol.end), sysInfo,
                     "torch writes a dict with protocol_version 1001");
    if (const Value* le = sysInfo.root->get("little_endian"); le && le->kind == K::Bool)
      head.littleEndian = le->boolean;
    head.mainOffset = sysInfo.end;
    return head;
  }

  // Another pickle in the magic number's slot, of any length, and torch's
  // protocol version and sys_info right after it: a legacy file whose magic
  // number was replaced (torch.load refuses it: "Invalid magic number").
  if (magic.root && protocolAndSysInfoAt(arena, data, size, magic.end)) {
    head.verdict = LegacyHead::Verdict::Damaged;
    head.damage = magicDamage(data, magic.end, magic);
    return head;
  }

  // No magic number: a legacy file still, when the protocol version and
  // sys_info follow within the first bytes (where the magic number ends).
  // Only offsets where one of them can start are tried: PROTO, or the
  // integer opcodes protocols 0 and 1 write 1001 with. More than one may
  // fit (a flipped byte can read as an opcode that swallows the bytes up to
  // the real start; BININT2 1001 inside the protocol pickle fits too): the
  // one that leaves a magic number pickle of torch's length, closest to
  // torch's bytes, is where the protocol version starts.
  const uint64_t last = std::min<uint64_t>(kMaxMagicBytes, size);
  std::optional<uint64_t> start;
  size_t startDiffering = SIZE_MAX;
  for (uint64_t at = 0; at < last; ++at) {
    const uint8_t op = data[at];
    if (!(op == 0x80 || op == 'M' || op == 'I' || op == 'J')) continue;
    if (!mayHoldProtocolVersion(data, size, at)) break;  // nor at any later offset
    const Small protocol = parseSmall(arena, "legacy protocol version pickle", data, size, at);
    if (!isProtocolVersion(protocol)) continue;
    const Small sysInfo = parseSmall(arena, "legacy sys_info pickle", data, size, protocol.end);
    if (!isSysInfo(sysInfo)) continue;
    const size_t differing = closestMagic(data, at).differing;
    if (!start || differing < startDiffering) {
      start = at;
      startDiffering = differing;
    }
  }
  if (start) {
    head.verdict = LegacyHead::Verdict::Damaged;
    head.damage = magicDamage(data, *start, magic);
  }
  return head;
}

}  // namespace ckpt
