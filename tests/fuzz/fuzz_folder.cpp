// libFuzzer target for checkpoints of many files (FORMAT.md section 7): the
// input's first byte picks a layout, the rest replaces that layout's
// description in a small sharded folder whose other files are valid, and the
// folder is opened as one checkpoint (every logical tensor read, verify, JSON)
// and scanned for safety as one.
//   0: a Hugging Face index (model.safetensors.index.json) over 2 safetensors shards
//   1: DCP's .metadata over __0_0.distcp, __1_0.distcp
//   2: FSDP's model_rank0.pt beside model_rank1.pt (ShardedTensor metadata)
//   3: DeepSpeed's mp_rank_00_model_states.pt beside 2 ZeRO-2 optimizer files
// The valid files come from make_sharded.py's output (FUZZ_SHARDED_DIR, by
// default build/fuzz/sharded), copied once into a scratch folder. Build with
// the `fuzz` preset, then:
//   /usr/bin/python3 tests/python/make_sharded.py build/fuzz/sharded
//   tests/fuzz/seed_folder_corpus.sh build/fuzz/sharded CORPUS_DIR
//   build/fuzz/tests/fuzz/fuzz_folder -max_len=65536 -timeout=5 CORPUS_DIR
// Besides the sanitizers it checks that what is said lies inside the
// checkpoint: every chunk inside its tensor's global shape, every part a
// file of the folder.
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_data.h"

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

struct Layout {
  const char* source;       // folder under FUZZ_SHARDED_DIR
  const char* description;  // the file the input replaces
};
constexpr std::array<Layout, 4> kLayouts{
    {{"hf_st", "model.safetensors.index.json"},
     {"dcp_ws2", ".metadata"},
     {"fsdp_ws2", "model_rank0.pt"},
     {"ds_z2_ws2/global_step1000", "mp_rank_00_model_states.pt"}}};

std::string g_root;  // the scratch folder: one copy of each layout, 0 .. 3

void setUp() {
  const char* env = std::getenv("FUZZ_SHARDED_DIR");
  const fs::path from = env ? env : "build/fuzz/sharded";
  g_root = (fs::temp_directory_path() / ("fuzz_folder." + std::to_string(getpid()))).string();
  for (size_t i = 0; i < kLayouts.size(); ++i) {
    const fs::path src = from / kLayouts[i].source;
    if (!fs::exists(src / kLayouts[i].description)) {
      std::fprintf(stderr, "fuzz_folder: %s is missing (run make_sharded.py; FUZZ_SHARDED_DIR)\n",
                   (src / kLayouts[i].description).c_str());
      std::abort();
    }
    const fs::path to = fs::path(g_root) / std::to_string(i);
    fs::create_directories(to);
    fs::copy(src, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void exercise(const std::string& folder) {
  // The safety scan of the whole checkpoint never throws, whatever the
  // description says (DCP: archives at any offset of the .distcp parts).
  const CheckpointSafety safety = scanCheckpoint(folder);
  check(safety.sharded());
  (void)safety.summary();
  try {
    const auto f = CheckpointFile::open(folder);
    const ShardSet* s = f->shards();
    check(s != nullptr);
    (void)toJson(*f, 100000);
    (void)s->summary();
    const std::string base = fs::canonical(folder).string() + "/";
    for (const ShardPart& p : s->parts()) {
      // A part is a file of the folder, never one outside it.
      if (!p.present) continue;
      const std::string real = fs::weakly_canonical(p.path).string();
      check(real.compare(0, base.size(), base) == 0);
    }
    for (const LogicalTensor& t : s->tensors()) {
      if (t.incomplete()) continue;
      for (const ShardChunk& c : t.chunks) {
        check(c.offsets.size() == t.shape.size() && c.sizes.size() == t.shape.size());
        for (size_t d = 0; d < t.shape.size(); ++d)
          check(c.offsets[d] >= 0 && c.sizes[d] >= 0 && c.offsets[d] + c.sizes[d] <= t.shape[d]);
      }
    }
    for (size_t i = 0; i < f->tensors().size() && i < 64; ++i) {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_root.empty()) setUp();
  if (size < 1) return 0;
  const size_t which = data[0] % kLayouts.size();
  const std::string folder = g_root + "/" + std::to_string(which);
  const std::string target = folder + "/" + kLayouts[which].description;
  {
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), std::streamsize(size - 1));
  }
  exercise(folder);
  return 0;
}
