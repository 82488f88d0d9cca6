// ckptscope-cli: read, list and check PyTorch checkpoints without Python.
#include <cstdio>
#include <cstring>
#include <exception>
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
  try {
    if (cmd == "info") return runInfo(argc, argv);
    if (cmd == "ls") return runLs(argc, argv);
    if (cmd == "verify") return runVerify(argc, argv);
  } catch (const std::exception& e) {
    // Every reader error is caught per command; this is the last guard.
    return failWith(e.what());
  }
  return usageError("unknown command '" + cmd + "'");
}
