// libFuzzer target for W&B run files (core/index wandb.h): the input is
// written as a run's .wandb file (after W&B's header unless the first byte
// is odd: the header's checks are fuzzed too) and read whole, then again in
// two pieces as a live run is followed (a copy cut at a byte the input
// picks, then the whole file from where the first read stopped); and as the
// run's files/config.yaml (the block-YAML reader) and wandb-summary.json.
// Besides the sanitizers it checks that each read stops inside what it was
// given and the second goes on from the first. Build with the `fuzz` preset,
// then:
//   /usr/bin/python3 tests/python/make_wandb.py build/fuzz/wandb
//   mkdir -p CORPUS && cp build/fuzz/wandb/proj/wandb/*/run-*.wandb \
//       build/fuzz/wandb/proj/wandb/*/files/config.yaml CORPUS/
//   build/fuzz/tests/fuzz/fuzz_wandb -max_len=131072 -timeout=5 CORPUS
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ckpt/index/wandb.h"

using namespace ckpt;

namespace {

// A run folder of its own for the files each input becomes.
const std::string& runDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fuzz_wandb.XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) std::abort();
    const std::string run = std::string(d) + "/run-20240101_000000-fuzz01";
    std::filesystem::create_directories(run + "/files");
    return run;
  }();
  return dir;
}

void write(const std::string& path, const std::string& bytes) {
  // A new file, not a truncated one (see fuzz_tfevents.cpp).
  ::unlink(path.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string bytes =
      size && (data[0] & 1) ? input : std::string(":W&B\xe1\xbe\x00", 7) + input;
  const std::string store = runDir() + "/run-fuzz01.wandb";
  write(store, bytes);
  std::vector<std::string> problems;
  uint64_t end = 0, damaged = 0;
  (void)readWandbPoints(store, 0, &end, &problems, &damaged);
  if (end > bytes.size()) std::abort();
  (void)readWandbHistory(store, &end, &problems, &damaged);
  (void)readWandbRunInfo(store);

  // A live run: the first read of a copy cut short, the rest from where it stopped.
  const size_t at = size ? size_t(data[size - 1]) * bytes.size() / 256 : 0;
  write(store, bytes.substr(0, at));
  uint64_t mid = 0;
  (void)readWandbPoints(store, 0, &mid);
  if (mid > at) std::abort();
  write(store, bytes);
  uint64_t end2 = 0;
  (void)readWandbPoints(store, mid, &end2);
  if (end2 > bytes.size() || end2 < mid) std::abort();

  // The same bytes as the run's config and summary.
  write(runDir() + "/files/config.yaml", input);
  (void)readWandbConfig(runDir(), &problems);
  write(runDir() + "/files/wandb-summary.json", input);
  (void)readWandbSummary(runDir() + "/files/wandb-summary.json", &problems);
  return 0;
}
