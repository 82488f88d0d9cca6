// The safety scan of a whole file: finds every pickle a Python loader would
// unpickle (torch zip records, legacy pickles, plain pickles, numpy object
// arrays) and walks each with scanPickle. Reads only the pickles' bytes.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <set>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/input_file.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/zip_archive.h"
#include "safety_walk.h"

namespace ckpt {
namespace {

// The pickle that `pickle.dumps(1001, 2)` writes: a legacy file's second slot.
constexpr uint8_t kLegacyProtocolPickle[] = {0x80, 0x02, 'M', 0xE9, 0x03, '.'};
constexpr const char* kLegacySlots[] = {"magic number", "protocol version", "sys_info", "main",
                                        "storage keys"};

// A numpy .npy array (at `data`, `size` bytes, `base` into the file): its
// object arrays are pickles after the header; other dtypes hold no code.
void scanNpy(const uint8_t* data, uint64_t size, const std::string& record, uint64_t base,
             SafetyReport& report, const ScanLimits& limits) {
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0)
    fail(record + ": not a numpy .npy array");
  const uint8_t major = data[6];
  uint64_t headerLen = 0, start = 0;
  if (major == 1) {
    headerLen = uint64_t(data[8]) | uint64_t(data[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(record + ": truncated .npy header");
    headerLen = uint64_t(data[8]) | uint64_t(data[9]) << 8 | uint64_t(data[10]) << 16 |
                uint64_t(data[11]) << 24;
    start = 12;
  } else {
    fail(record + ": .npy format version " + std::to_string(major) + " is not known");
  }
  if (headerLen > size - start)
    fail(record + ": .npy header of " + std::to_string(headerLen) + " bytes runs past the end");
  const std::string_view header(reinterpret_cast<const char*>(data + start), size_t(headerLen));
  const size_t descr = header.find("'descr'");
  if (descr == std::string_view::npos) fail(record + ": .npy header has no 'descr'");
  // An object array's descr is '|O' (or 'O' inside a structured dtype's list).
  const size_t close = header.find(", 'fortran_order'");
  const std::string_view d = header.substr(
      descr, close == std::string_view::npos ? std::string_view::npos : close - descr);
  if (d.find("'|O'") == std::string_view::npos && d.find("'O'") == std::string_view::npos) return;
  const uint64_t at = start + headerLen;
  scanPickle(data + at, size - at, record, base + at, report, limits);
}

bool endsWithNoCase(std::string_view s, std::string_view tail) {
  if (s.size() < tail.size()) return false;
  for (size_t i = 0; i < tail.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - tail.size() + i])) != tail[i])
      return false;
  return true;
}

// A torch file's storage, `<root>/data/<key>`: raw bytes torch maps into a
// tensor, never unpickled (torch reads the pickle from `<root>/data.pkl`,
// the root being the first record's folder; a name with a second '/' is
// never that one).
bool isStorageRecord(std::string_view name) {
  const size_t slash = name.find('/');
  return slash != std::string_view::npos && slash > 0 && name.substr(slash + 1, 5) == "data/" &&
         name.size() > slash + 6;
}

// A Python identifier path ("torch._utils", "OrderedDict.fromkeys"):
// what an import or an attribute lookup could find.
bool isDottedIdentifier(std::string_view s) {
  if (s.empty()) return false;
  bool start = true;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '.') {
      if (start) return false;
      start = true;
    } else if (std::isalpha(u) || c == '_' || (!start && std::isdigit(u)) || u >= 0x80) {
      start = false;
    } else {
      return false;
    }
  }
  return !start;
}

// The bytes of a record, its encryption flag ignored: loaders that do not
// look at it (PyTorch's miniz-based reader) load a record flagged
// "encrypted" but stored in the clear as it is. Really encrypted bytes do
// not walk as a pickle (and a stored record's sizes then differ:
// unreadable). A small stored record (data.pkl of a small file, `version`,
// `byteorder`) is read with its local header in one read: cheaper than
// mapping it, and every torch file has several.
ByteRegion recordBytes(const ZipArchive& zip, const ZipEntry& e, uint64_t maxSize) {
  constexpr uint64_t kSmallRecord = 64 * 1024;
  ZipEntry clear = e;
  clear.flags &= uint16_t(~1u);
  if (clear.method != 0 || clear.size > kSmallRecord) return zip.bytes(clear, maxSize);
  auto buf =
      std::make_shared<std::vector<uint8_t>>(clear.size + ZipArchive::localHeaderRoom(clear));
  ByteRegion region;
  region.data = zip.readStored(clear, kSmallRecord, buf->data());
  region.size = clear.size;
  region.owner = std::move(buf);
  return region;
}

// What a zip scan owes its verdict to, beside the globals: the records it
// could not examine (the first named, the rest counted).
struct ZipProblems {
  std::string first;
  size_t more = 0;
  void add(const std::string& what) {
    if (first.empty())
      first = what;
    else
      ++more;
  }
};

// Whether the walk since `globalsBefore` named a global Python could look
// up (one whose names are no identifiers fails to import, and the
// unpickler stops there).
bool namedImportable(const SafetyReport& report, size_t globalsBefore, size_t leftOutBefore) {
  if (report.leftOut > leftOutBefore) return true;
  for (size_t i = globalsBefore; i < report.globals.size(); ++i)
    if (isDottedIdentifier(report.globals[i].module) && isDottedIdentifier(report.globals[i].name))
      return true;
  return false;
}

// One record that is no storage and not named as a pickle: a pickle when a
// walk from its first byte reaches STOP, or names a global (an importable
// name) before Python's unpickler would stop at the same broken opcode;
// otherwise other bytes (`version`, `byteorder`, a text file), whose
// findings are dropped. A walk stopped by the scan's own bounds, or by the
// end of the part read, did not examine the record.
void scanUnnamedRecord(const ByteRegion& bytes, uint64_t size, const std::string& record,
                       SafetyReport& report, const ScanLimits& limits, ZipProblems& problems) {
  const size_t globalsBefore = report.globals.size(), leftOutBefore = report.leftOut,
               picklesBefore = report.pickles;
  const SafetyLevel leftOutWorstBefore = report.leftOutWorst;
  const uint64_t walked = std::min(bytes.size, limits.maxPickleBytes);
  // torch.save's `version` record ("3\n"): digits and white space hold no
  // STOP, GLOBAL, INST or STACK_GLOBAL, so a walk fails at its first byte
  // naming nothing and its findings are dropped. Not walked: the exception
  // was 6% of listing 50,000 small checkpoints.
  if (walked == size && size <= 64 && std::all_of(bytes.data, bytes.data + walked, [](uint8_t c) {
        return (c >= '0' && c <= '9') || c == ' ' || c == '\n' || c == '\r' || c == '\t';
      }))
    return;
  try {
    scanPickle(bytes.data, walked, record, 0, report, limits);
    return;
  } catch (const ScanLimitError& err) {
    problems.add(err.what());
    return;
  } catch (const TruncatedError& err) {
    if (walked < size) {
      problems.add("record " + record + ": a pickle longer than the " +
                   std::to_string(limits.maxPickleBytes) + " bytes the scan reads");
      return;
    }
    // Python's unpickler stops at the same end.
    if (namedImportable(report, globalsBefore, leftOutBefore)) return problems.add(err.what());
  } catch (const FormatError& err) {
    if (namedImportable(report, globalsBefore, leftOutBefore)) return problems.add(err.what());
  }
  report.globals.resize(globalsBefore);
  report.leftOut = leftOutBefore;
  report.leftOutWorst = leftOutWorstBefore;
  report.pickles = picklesBefore;
}

// Every record of a zip that holds a pickle (see scanFile) and every .npy
// record's object array (numpy .npz archives). Offsets count from the
// record's start. A record that cannot be examined does not stop the scan
// of the others: a payload after it is still found.
// `skip`: a record the reader walked (judged on its walk), not walked again.
void scanZip(const ZipArchive& zip, SafetyReport& report, const ScanLimits& limits,
             const ZipEntry* skip = nullptr, const std::string& skipProblem = {}) {
  size_t walked = 0;
  ZipProblems problems;
  for (const ZipEntry& e : zip.entries()) {
    const std::string_view name = e.name;
    const bool pkl = endsWithNoCase(name, ".pkl") || endsWithNoCase(name, ".pickle");
    const bool npy = endsWithNoCase(name, ".npy");
    if (!pkl && !npy && isStorageRecord(name)) continue;
    if (++walked > limits.maxRecords) {
      problems.add("more than " + std::to_string(limits.maxRecords) +
                   " records that may hold pickles; the rest not examined");
      break;
    }
    if (&e == skip) {
      if (!skipProblem.empty()) problems.add(skipProblem);
      continue;
    }
    const std::string record(name);
    // A record named as a pickle is read whole (up to the bound); any other
    // one only as far as the bound: a walk stops long before in raw bytes.
    ByteRegion bytes;
    try {
      bytes = recordBytes(zip, e, pkl || npy || e.method != 0 ? limits.maxPickleBytes : UINT64_MAX);
    } catch (const FormatError& err) {
      problems.add("record " + record + " could not be examined: " + err.what());
      continue;
    }
    try {
      if (npy)
        scanNpy(bytes.data, bytes.size, record, 0, report, limits);
      else if (pkl)
        scanPickle(bytes.data, bytes.size, record, 0, report, limits);
      else
        scanUnnamedRecord(bytes, e.size, record, report, limits, problems);
    } catch (const FormatError& err) {
      problems.add(err.what());
    }
  }
  if (!problems.first.empty())
    fail(problems.first + (problems.more ? " (and " + std::to_string(problems.more) +
                                               " more records that could not be examined)"
                                         : ""));
}

// Pickles one after another from the start of the file: a legacy torch file
// (exactly five, then raw storage bytes) or a plain pickle file (one, or more
// written back to back). A file whose first slot is not torch's magic number
// (a reduce call, say) is still a legacy file when its second slot is the
// protocol version: then it is named as one.
// `slot`, `pos`, `endSlot`: only the pickles from `slot` (at `pos`) to
// before `endSlot` (the reader walked the others). Returns where it stopped.
uint64_t scanSequence(const InputFile& file, bool legacy, SafetyReport& report,
                      const ScanLimits& limits, size_t slot = 0, uint64_t pos = 0,
                      size_t endSlot = 5) {
  const uint64_t size = file.size();
  const ByteRegion all = file.map(0, size);
  const uint8_t* data = all.data;
  std::string name = legacy ? "legacy magic number pickle" : "pickle 1";
  for (size_t i = slot; i < endSlot; ++i) {
    if (i > 0) {
      // Past the first pickle, another follows only if it starts as one. A
      // legacy file has five whatever their protocol (0 and 1 start with any
      // opcode, not PROTO): each is walked, and one that is not there is damage.
      const bool startsWithProto = size - pos >= 2 && data[pos] == 0x80 && data[pos + 1] <= 5;
      if (!startsWithProto && !(legacy && pos < size)) {
        if (legacy)
          fail("legacy file ends after " + std::to_string(i) + " pickles, at byte " +
               std::to_string(pos));
        break;
      }
      if (i == 1 && !legacy && size - pos >= sizeof kLegacyProtocolPickle &&
          std::memcmp(data + pos, kLegacyProtocolPickle, sizeof kLegacyProtocolPickle) == 0) {
        legacy = true;  // the magic-number slot held something else
        for (GlobalUse& g : report.globals)
          if (g.record == name) g.record = "legacy magic number pickle";
      }
      name = legacy ? std::string("legacy ") + kLegacySlots[i] + " pickle"
                    : "pickle " + std::to_string(i + 1);
    }
    pos += scanPickle(data + pos, size - pos, name, pos, report, limits);
  }
  return pos;
}

}  // namespace

std::string_view verdictName(Verdict v) {
  switch (v) {
    case Verdict::Safe:
      return "safe";
    case Verdict::Suspicious:
      return "suspicious";
    case Verdict::Dangerous:
      return "dangerous";
    case Verdict::Unreadable:
      return "unreadable";
  }
  return "?";
}

SafetyLevel SafetyReport::worst() const {
  SafetyLevel w = leftOut ? leftOutWorst : SafetyLevel::Innocuous;
  for (const GlobalUse& g : globals) w = std::max(w, g.level);
  return w;
}

std::vector<std::string> SafetyReport::offenders() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const SafetyLevel level : {SafetyLevel::Dangerous, SafetyLevel::Suspicious})
    for (const GlobalUse& g : globals)
      if (g.level == level) {
        std::string n = g.module + "." + g.name;
        if (seen.insert(n).second) out.push_back(std::move(n));
      }
  return out;
}

std::string SafetyReport::summary() const {
  std::string s(verdictName(verdict));
  if (verdict == Verdict::Safe && profile != SafetyProfile::None)
    s += " for " + std::string(safetyProfileTitle(profile));
  std::vector<std::string> dangerous, suspicious;
  std::set<std::string> seen;
  for (const GlobalUse& g : globals) {
    if (g.level == SafetyLevel::Innocuous) continue;
    std::string n = g.module + "." + g.name;
    if (!seen.insert(n).second) continue;
    (g.level == SafetyLevel::Dangerous ? dangerous : suspicious).push_back(std::move(n));
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size() && i < 8; ++i) out += (i ? ", " : "") + v[i];
    if (v.size() > 8) out += ", ... (" + std::to_string(v.size()) + " in all)";
    return out;
  };
  if (!dangerous.empty()) s += ": " + list(dangerous);
  if (!suspicious.empty())
    s += std::string(dangerous.empty() ? ": " : "; suspicious: ") + list(suspicious);
  if (!error.empty()) s += " (" + error + ")";
  return s;
}

namespace {

// Runs `scan`; what stops it goes to report.error, named after `path`.
template <typename Scan>
void guarded(const std::string& path, SafetyReport& report, Scan&& scan) {
  try {
    scan();
  } catch (const FormatError& e) {
    report.error = path + ": " + e.what();
  } catch (const std::bad_alloc&) {
    report.error = path + ": out of memory while scanning";
  } catch (const std::length_error&) {
    report.error = path + ": a size in the file is too large";
  }
}

// Every pickle of `file` (named `path` in errors) into `report`.
void scanInput(const InputFile& file, const std::string& path, SafetyReport& report,
               const ScanLimits& limits) {
  guarded(path, report, [&] {
    if (file.size() == 0) fail("empty file");
    uint8_t head[8] = {};
    file.read(0, std::min<uint64_t>(sizeof head, file.size()), head);
    const Sniff sniff = sniffFile(file);
    if (file.size() >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0) {
      const ByteRegion all = file.map(0, file.size());
      scanNpy(all.data, all.size, std::filesystem::path(path).filename().string(), 0, report,
              limits);
    } else {
      switch (sniff) {
        case Sniff::Zip:
          scanZip(ZipArchive(file), report, limits);
          break;
        case Sniff::TorchLegacy:
          scanSequence(file, /*legacy=*/true, report, limits);
          break;
        case Sniff::Safetensors:
          break;  // a JSON header and raw bytes: nothing to run
        case Sniff::Tar:
          fail("a tar-era PyTorch file (before 0.1.10) cannot be scanned");
        case Sniff::Pickle:
        case Sniff::Unknown:  // protocol 0 and 1 pickles start with any opcode
          scanSequence(file, /*legacy=*/false, report, limits);
          break;
      }
    }
  });
}

}  // namespace

void scanZipRest(const ZipArchive& zip, const ZipEntry* walked, SafetyWalk& walk) {
  guarded(walk.path, walk.report,
          [&] { scanZip(zip, walk.report, walk.limits, walked, walk.stopMessage()); });
}

uint64_t scanSequenceRest(const InputFile& file, bool legacy, size_t slot, uint64_t pos,
                          size_t endSlot, SafetyWalk& walk) {
  guarded(walk.path, walk.report,
          [&] { pos = scanSequence(file, legacy, walk.report, walk.limits, slot, pos, endSlot); });
  return pos;
}

Verdict judgeSafety(const SafetyReport& report) {
  const SafetyLevel w = report.worst();
  if (w == SafetyLevel::Dangerous) return Verdict::Dangerous;
  if (!report.error.empty()) return Verdict::Unreadable;
  if (w == SafetyLevel::Suspicious) return Verdict::Suspicious;
  return Verdict::Safe;
}

SafetyReport scanFile(const std::string& path, const ScanLimits& limits, SafetyProfile profile) {
  SafetyReport report;
  report.profile = profile;
  try {
    const InputFile file(path);
    scanInput(file, path, report, limits);
  } catch (const FormatError& e) {
    report.error = path + ": " + e.what();
  }
  report.verdict = judgeSafety(report);
  return report;
}

SafetyReport scanBytes(const std::string& name, const uint8_t* data, uint64_t size,
                       const ScanLimits& limits, SafetyProfile profile) {
  SafetyReport report;
  report.profile = profile;
  ByteRegion bytes;
  bytes.data = data;
  bytes.size = size;
  const InputFile file(name, bytes);
  scanInput(file, name, report, limits);
  report.verdict = judgeSafety(report);
  return report;
}

SafetyReport scanFileSlice(const std::string& path, uint64_t offset, uint64_t length,
                           const ScanLimits& limits) {
  SafetyReport report;
  const std::string name =
      path + " (the " + std::to_string(length) + " bytes at offset " + std::to_string(offset) + ")";
  try {
    const InputFile file(path, offset, length);
    scanInput(file, name, report, limits);
  } catch (const FormatError& e) {
    report.error = name + ": " + e.what();
  }
  report.verdict = judgeSafety(report);
  return report;
}

}  // namespace ckpt
