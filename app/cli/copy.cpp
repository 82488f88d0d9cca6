// ckptscope-cli consolidate SRC OUT.pt|OUT.safetensors [--dtype fp32|bf16|fp16] [--model-only]
// ckptscope-cli export SRC OUT [--model-only] [--dtype bf16|fp16|fp32] [--format pt|safetensors]
// Both are one streaming copy (core/format checkpoint_copy.h).
#include <sys/stat.h>

#include <cstdio>
#include <functional>
#include <string>

#include "ckpt/format/checkpoint_copy.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "common.h"
#include "trainer_folder.h"

namespace ckpt::cli {
namespace {

struct CopyArgs {
  CopyOptions options;
  bool modelOnly = false;
  std::string source, target;
};

// The options both commands share; `--format` for export only. Returns
// kExitOk or the usage error's status.
int parseCopyArgs(int argc, char** argv, const std::string& command, CopyArgs& out) {
  std::vector<std::string> positional;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model-only") {
      out.modelOnly = true;
    } else if (a == "--dtype") {
      if (i + 1 >= argc) return usageError("--dtype needs fp32, bf16 or fp16", command);
      const std::string t = argv[++i];
      out.options.dtype = parseCopyDtype(t);
      if (!out.options.dtype)
        return usageError("--dtype takes fp32, bf16 or fp16, not '" + t + "'", command);
    } else if (a == "--format" && command == "export") {
      if (i + 1 >= argc) return usageError("--format needs pt or safetensors", command);
      const std::string f = argv[++i];
      if (f == "pt" || f == "torch")
        out.options.format = CopyFormat::Torch;
      else if (f == "safetensors")
        out.options.format = CopyFormat::Safetensors;
      else
        return usageError("--format takes pt or safetensors, not '" + f + "'", command);
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option " + a, command);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) return usageError(command + " takes SRC and OUT", command);
  out.source = positional[0];
  out.target = positional[1];
  return kExitOk;
}

uint64_t sizeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

// One copy command: its arguments, the source opened, the copy, then
// `report` prints its line.
int runCopy(
    int argc, char** argv, const std::string& command, CopyContent plain, CopyContent modelOnly,
    const std::function<void(const CheckpointFile&, const CopyArgs&, const CopyResult&)>& report) {
  CopyArgs args;
  if (const int rc = parseCopyArgs(argc, argv, command, args); rc != kExitOk) return rc;
  args.options.content = args.modelOnly ? modelOnly : plain;
  try {
    const auto source = CheckpointFile::open(checkpointArgument(args.source));
    report(*source, args, copyCheckpoint(*source, args.target, args.options));
  } catch (const FormatError& e) {
    return failWith(e.what());
  }
  return kExitOk;
}

}  // namespace

int runConsolidate(int argc, char** argv) {
  return runCopy(argc, argv, "consolidate", CopyContent::Whole, CopyContent::ModelState,
                 [](const CheckpointFile& source, const CopyArgs& args, const CopyResult& r) {
                   std::printf("%s: %zu tensors, %s of tensor data, from %s\n", args.target.c_str(),
                               r.tensors, humanBytes(r.bytes).c_str(),
                               source.shards() ? source.shards()->summary().c_str()
                                               : std::string(formatName(source.format())).c_str());
                 });
}

int runExport(int argc, char** argv) {
  return runCopy(argc, argv, "export", CopyContent::WithoutOptimizer, CopyContent::ModelOnly,
                 [](const CheckpointFile& source, const CopyArgs& args, const CopyResult& r) {
                   const uint64_t before = describeCopySource(source).size;
                   const uint64_t after = sizeOf(args.target);
                   std::printf(
                       "%s: %zu tensors, %s (%s from %s: %.0f%%), without optimizer state\n",
                       args.target.c_str(), r.tensors, humanBytes(after).c_str(),
                       humanBytes(before).c_str(), args.source.c_str(),
                       before ? 100.0 * double(after) / double(before) : 0.0);
                 });
}

}  // namespace ckpt::cli
