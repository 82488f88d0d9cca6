// libFuzzer target for the reader and the safety scan: any bytes as a
// checkpoint file, and as a bare pickle. Build with the `fuzz` preset (clang), then run by hand:
//   cmake --preset fuzz && cmake --build build/fuzz --target fuzz_reader
//   build/fuzz/tests/fuzz/fuzz_reader -max_len=65536 -timeout=5 CORPUS_DIR
// Seed the corpus with the test fixtures (build/dev/tests/fixtures).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/pickle_reader.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/tensor_data.h"

using namespace ckpt;

static void exerciseFile(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz", 0);
  if (fd < 0) return;
  if (write(fd, data, size) != ssize_t(size)) {
    close(fd);
    return;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  {
    // The scan never throws, and whatever it lists lies inside the file.
    const SafetyReport r = scanFile(path);
    for (const GlobalUse& g : r.globals)
      if (g.via.empty() && g.offset >= size) __builtin_trap();
    if (r.verdict == Verdict::Unreadable && r.error.empty()) __builtin_trap();
    (void)r.summary();
  }
  try {
    const auto f = CheckpointFile::open(path);
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
  close(fd);
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
    (void)valueToJson(r.root, 100000);
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
