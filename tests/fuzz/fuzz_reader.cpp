// libFuzzer target for the reader and the safety scan: any bytes as a
// checkpoint file, and as a bare pickle. In memory: the input is opened
// where it lies (CheckpointFile::openBytes, scanBytes: the code that reads
// files, over an InputFile in memory), no file per input. Build with the
// `fuzz` preset (clang), then run by hand:
//   cmake --preset fuzz && cmake --build build/fuzz --target fuzz_reader
//   build/fuzz/tests/fuzz/fuzz_reader -max_len=65536 -timeout=5 CORPUS_DIR
// Seed the corpus with the test fixtures (build/dev/tests/fixtures).
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/pickle_reader.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/tensor_data.h"

using namespace ckpt;

// The offenders' names, when all are ASCII. A protocol 0 text name
// (UNICODE, STRING) with other bytes is spelt as Python decodes it by the
// reader and as its raw bytes by the scan: same verdict, other spelling
// (a known difference, see README), not compared.
static std::optional<std::set<std::string>> offenders(const SafetyReport& r) {
  const std::vector<std::string> v = r.offenders();
  for (const std::string& name : v)
    for (const char c : name)
      if (static_cast<unsigned char>(c) >= 0x80) return std::nullopt;
  return std::set<std::string>(v.begin(), v.end());
}

static void exerciseFile(const uint8_t* data, size_t size) {
  // A name with a pickle's extension: protocol 0 and 1 pickles (any first
  // byte) are read as pickles too.
  const std::string name = "fuzz.pkl";
  // The scan never throws, and whatever it lists lies inside the file.
  const SafetyReport r = scanBytes(name, data, size);
  for (const GlobalUse& g : r.globals)
    if (g.via.empty() && g.offset >= size) __builtin_trap();
  if (r.verdict == Verdict::Unreadable && r.error.empty()) __builtin_trap();
  (void)r.summary();
  ByteRegion bytes;
  bytes.data = data;
  bytes.size = size;
  try {
    ReadOptions options;
    options.safety = true;
    const auto f = CheckpointFile::openBytes(name, bytes, options);
    // One pass: the verdict of the reader's own walk is the scan's.
    if (const SafetyReport* walked = f->safety())
      if (walked->verdict != r.verdict)
        __builtin_trap();
      else if (const auto a = offenders(*walked), b = offenders(r); a && b && *a != *b)
        __builtin_trap();
    (void)toJson(*f, 100000);
    const CheckpointView view(*f);
    (void)view.optimizerParams();
    for (size_t i = 0; i < f->tensors().size() && i < 64; ++i) {
      const TensorPath& p = f->tensors()[i].path;
      if (joinPath(p) != p.name() || (p.size() > 1 && joinPath(p, 1).size() > p.name().size()))
        __builtin_trap();
      try {
        const TensorData d = f->tensorData(i);
        for (uint64_t k = 0; k < d.numel() && k < 1024; ++k) (void)d.at(k);
      } catch (const FormatError&) {
      }
    }
    (void)f->verify();
  } catch (const FormatError&) {
  }
}

static void exercisePickle(const uint8_t* data, size_t size) {
  ValueArena arena;
  TensorTable table;
  PickleLimits limits;
  limits.maxNodes = 1'000'000;
  PickleReader reader(arena, "fuzz.pkl", limits);
  reader.setTensorTable(&table);
  reader.setPersistentLoader([&](const Value*) -> const Value* {
    StorageInfo s;
    s.key = std::to_string(table.storages.size());
    s.numel = 16;
    table.storages.push_back(s);
    Value* v = arena.make(Value::Kind::Storage);
    v->index = int64_t(table.storages.size() - 1);
    return v;
  });
  try {
    const PickleResult r = reader.parse(data, size);
    std::string text;
    appendValueJson(text, r.root, 100000);
    (void)shortRepr(r.root, 200);
    walkTensors(r.root, [](const Value*, const TensorPath&) {});
  } catch (const FormatError&) {
  }
}

static void exerciseScan(const uint8_t* data, size_t size) {
  SafetyReport report;
  ScanLimits limits;
  limits.maxStack = 100000;
  limits.maxMemo = 100000;
  try {
    const uint64_t end = scanPickle(data, size, "fuzz.pkl", 0, report, limits);
    if (end > size) __builtin_trap();
  } catch (const FormatError&) {
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exerciseScan(data, size);
  exerciseFile(data, size);
  exercisePickle(data, size);
  return 0;
}
