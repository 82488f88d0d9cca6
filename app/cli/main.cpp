// ckptscope-cli: read, list and check PyTorch checkpoints without Python.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

#include "common.h"

int main(int argc, char** argv) {
  using namespace ckpt::cli;
  if (argc < 2) return usageError("no command given");
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    printUsage();
    return kExitOk;
  }
  if (cmd == "--version") {
    std::puts("ckptscope-cli 0.1.0");
    return kExitOk;
  }
  if (cmd == "train" || cmd == "resume" || cmd == "finetune" || cmd == "score" ||
      cmd == "generate") {
    // These need LibTorch, which costs 0.4 s and 160 MB to load: they live in
    // the sibling program ckptscope-train.
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string trainer = (self.parent_path() / "ckptscope-train").string();
    argv[0] = const_cast<char*>(trainer.c_str());
    // LibTorch's OpenMP workers spin while OpenBLAS's own threads run the
    // matrix products; on few cores they fight (measured: +23% tokens/s on 2
    // cores when they sleep instead). libgomp reads this before main(), so it
    // is set here; a value the user chose is kept.
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
    ::execv(trainer.c_str(), argv);
    return failWith("'" + cmd + "' needs " + trainer +
                    " (built with LibTorch): " + std::strerror(errno));
  }
  try {
    if (cmd == "info") return runInfo(argc, argv);
    if (cmd == "ls") return runLs(argc, argv);
    if (cmd == "verify") return runVerify(argc, argv);
    if (cmd == "diff") return runDiff(argc, argv);
    if (cmd == "scan") return runScan(argc, argv);
    if (cmd == "metrics") return runMetrics(argc, argv);
    if (cmd == "consolidate") return runConsolidate(argc, argv);
  } catch (const std::exception& e) {
    // Every reader error is caught per command; this is the last guard.
    return failWith(e.what());
  }
  return usageError("unknown command '" + cmd + "'");
}
