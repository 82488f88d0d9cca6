#pragma once
// Tiny training runs in tests: the text they train on, and what they leave
// behind, read back: metrics.jsonl lines and the raw bytes of a checkpoint's
// model state (bit-for-bit comparisons of resumed against uninterrupted
// runs). Shared by tst_trainer and tst_trainpanel.

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/tensor_data.h"
#include "json_compare.h"

namespace ckpt::test {

// One paragraph of prose; tests repeat it into a small corpus.
inline const char* const kText =
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age "
    "of "
    "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season "
    "of Light, "
    "it was the season of Darkness, it was the spring of hope, it was the winter of despair.\n";

inline std::vector<json> metricsLines(const std::string& runDir) {
  std::vector<json> lines;
  std::ifstream in(runDir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

// (name, bytes) of every model_state tensor, in the state dict's order.
inline std::vector<std::pair<std::string, std::string>> weightBytes(const std::string& checkpoint) {
  const auto f = CheckpointFile::open(checkpoint);
  const CheckpointView view(*f);
  std::vector<std::pair<std::string, std::string>> out;
  for (const StateEntry& e : view.entries()) {
    const TensorData d = f->tensorData(size_t(e.tensor));
    const TensorInfo& t = f->tensors()[size_t(e.tensor)];
    const uint8_t* p = d.elementPtr(uint64_t(t.storageOffset));
    out.emplace_back(e.name, std::string(reinterpret_cast<const char*>(p), t.nbytes()));
  }
  return out;
}

}  // namespace ckpt::test
