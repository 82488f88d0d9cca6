// ckptscope-cli verify FILE
#include <cstdio>
#include <string>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/zip_archive.h"
#include "common.h"
#include "remote_commands.h"
#include "trainer_folder.h"

namespace ckpt::cli {

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
    const size_t records = file->zip() ? file->zip()->entries().size() : file->storages().size();
    std::printf("%s: OK (%s, %zu records, %zu tensors, %s)\n", file->path().c_str(),
                std::string(formatName(file->format())).c_str(), records, file->tensors().size(),
                humanBytes(file->fileSize()).c_str());
  }
  if (!failure.empty()) return failWith(failure);
  if (paths.size() > 1)
    std::printf("%s: OK (%zu files)\n", args.positional[0].c_str(), paths.size());
  return kExitOk;
}

}  // namespace ckpt::cli
