// ckptscope-cli verify FILE
// Checks every record's CRC and every tensor's extent. A sharded checkpoint
// (a folder or an index) is checked file by file, every file its layout
// holds (a Megatron save's distrib_optim.pt too), and the OK line names the
// layout and counts the files, records and tensors checked.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/zip_archive.h"
#include "common.h"
#include "remote_commands.h"
#include "trainer_folder.h"

namespace ckpt::cli {
namespace {

// Records of one file: its zip's entries, or its storages (safetensors,
// legacy files).
size_t recordsOf(const CheckpointFile& f) {
  return f.zip() ? f.zip()->entries().size() : f.storages().size();
}

// "sharded: Megatron-LM, 4 files, 27 records, 19 tensors": what verify
// checked, summed over the files (the description, each part, each of
// DCP's chunk archives).
std::string shardedCounts(const ShardSet& shards) {
  size_t files = shards.entry().empty() ? 0 : 1, records = 0, tensors = 0;
  std::set<const CheckpointFile*> counted;
  auto add = [&](const CheckpointFile* f) {
    if (!f || !counted.insert(f).second) return;
    records += recordsOf(*f);
    tensors += f->tensors().size();
  };
  for (size_t i = 0; i < shards.parts().size(); ++i) {
    if (shards.parts()[i].present) ++files;
    add(shards.partFile(int(i)));
  }
  for (const LogicalTensor& t : shards.tensors()) {
    if (t.incomplete()) continue;
    for (const ShardChunk& c : t.chunks) {
      if (c.slice < 0) continue;
      try {
        add(shards.chunkFile(c));
      } catch (const FormatError&) {
      }
    }
  }
  auto plural = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return "sharded: " + std::string(shardLayoutTitle(shards.layout())) + ", " +
         plural(files, "file", "files") + ", " + plural(records, "record", "records") + ", " +
         plural(tensors, "tensor", "tensors");
}

}  // namespace

int runVerify(int argc, char** argv) {
  Args args;
  std::string problem;
  if (!parseArgs(argc, argv, 2, {}, args, problem)) return usageError(problem, "verify");
  if (args.positional.size() != 1) return usageError("verify takes exactly one FILE", "verify");
  if (const auto remote = remotePaths(args.positional, problem))
    return runRemoteVerify(remote->front());
  if (!problem.empty()) return usageError(problem, "verify");
  // A Trainer's checkpoint-<step>/ folder: its weights and every file of it
  // torch.load would read on a resume (optimizer.pt, scheduler.pt, ...).
  std::vector<std::string> paths;
  try {
    if (const auto folder = trainerFolder(args.positional[0])) {
      paths.push_back(folder->weights);
      for (const CheckpointPart& p : folder->parts)
        if (!p.verdict.empty()) paths.push_back(p.path);
    } else {
      paths.push_back(args.positional[0]);
    }
  } catch (const FormatError& e) {
    return failWith(e.what());
  }
  std::string failure;
  for (const std::string& path : paths) {
    std::unique_ptr<CheckpointFile> file;
    try {
      file = CheckpointFile::open(path);
    } catch (const FormatError& e) {
      if (paths.size() == 1) return failWith(e.what());
      std::printf("BROKEN  %s\n", e.what());
      if (failure.empty()) failure = e.what();
      continue;
    }
    const std::vector<std::string> problems = file->verify();
    if (!problems.empty()) {
      // Several files: each line names its file.
      const std::string where = paths.size() > 1 ? file->path() + ": " : "";
      for (const std::string& p : problems) std::printf("BROKEN  %s%s\n", where.c_str(), p.c_str());
      if (failure.empty()) failure = file->path() + ": " + problems.front();
      continue;
    }
    if (const ShardSet* shards = file->shards())
      std::printf("%s: OK (%s, %s)\n", file->path().c_str(), shardedCounts(*shards).c_str(),
                  humanBytes(file->fileSize()).c_str());
    else
      std::printf("%s: OK (%s, %zu records, %zu tensors, %s)\n", file->path().c_str(),
                  std::string(formatName(file->format())).c_str(), recordsOf(*file),
                  file->tensors().size(), humanBytes(file->fileSize()).c_str());
  }
  if (!failure.empty()) return failWith(failure);
  if (paths.size() > 1)
    std::printf("%s: OK (%zu files)\n", args.positional[0].c_str(), paths.size());
  return kExitOk;
}

}  // namespace ckpt::cli
