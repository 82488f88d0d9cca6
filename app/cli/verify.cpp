// ckptscope-cli verify FILE
#include <cstdio>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/zip_archive.h"
#include "common.h"
#include "remote_commands.h"

namespace ckpt::cli {

int runVerify(int argc, char** argv) {
  Args args;
  std::string problem;
  if (!parseArgs(argc, argv, 2, {}, args, problem)) return usageError(problem, "verify");
  if (args.positional.size() != 1) return usageError("verify takes exactly one FILE", "verify");
  if (const auto remote = remotePaths(args.positional, problem))
    return runRemoteVerify(remote->front());
  if (!problem.empty()) return usageError(problem, "verify");
  std::unique_ptr<CheckpointFile> file;
  try {
    file = CheckpointFile::open(args.positional[0]);
  } catch (const FormatError& e) {
    return failWith(e.what());
  }
  const std::vector<std::string> problems = file->verify();
  if (!problems.empty()) {
    for (const std::string& p : problems) std::printf("BROKEN  %s\n", p.c_str());
    return failWith(file->path() + ": " + problems.front());
  }
  const size_t records = file->zip() ? file->zip()->entries().size() : file->storages().size();
  std::printf("%s: OK (%s, %zu records, %zu tensors, %s)\n", file->path().c_str(),
              std::string(formatName(file->format())).c_str(), records, file->tensors().size(),
              humanBytes(file->fileSize()).c_str());
  return kExitOk;
}

}  // namespace ckpt::cli
