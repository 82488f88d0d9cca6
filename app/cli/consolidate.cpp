// ckptscope-cli consolidate SRC OUT.pt|OUT.safetensors [--dtype fp32|bf16] [--model-only]
#include <cstdio>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/consolidate.h"
#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "common.h"

namespace ckpt::cli {

int runConsolidate(int argc, char** argv) {
  ConsolidateOptions options;
  std::vector<std::string> positional;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model-only") {
      options.modelOnly = true;
    } else if (a == "--dtype") {
      if (i + 1 >= argc) return usageError("--dtype needs fp32 or bf16", "consolidate");
      const std::string t = argv[++i];
      if (t == "fp32" || t == "float32")
        options.dtype = DType::Float32;
      else if (t == "bf16" || t == "bfloat16")
        options.dtype = DType::BFloat16;
      else
        return usageError("--dtype takes fp32 or bf16, not '" + t + "'", "consolidate");
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option " + a, "consolidate");
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) return usageError("consolidate takes SRC and OUT", "consolidate");
  try {
    const auto source = CheckpointFile::open(positional[0]);
    const ConsolidateResult r = consolidateCheckpoint(*source, positional[1], options);
    std::printf("%s: %zu tensors, %s of tensor data, from %s\n", positional[1].c_str(), r.tensors,
                humanBytes(r.bytes).c_str(),
                source->shards() ? source->shards()->summary().c_str()
                                 : std::string(formatName(source->format())).c_str());
  } catch (const FormatError& e) {
    return failWith(e.what());
  }
  return kExitOk;
}

}  // namespace ckpt::cli
