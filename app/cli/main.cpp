// ckptscope-cli: read, list and check PyTorch checkpoints without Python.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

#include "ckpt/index/huge_page_malloc.h"
#include "ckpt/version.h"
#include "common.h"
#include "remote_commands.h"

namespace {

// ckptscope-train, the LibTorch half, beside this program.
std::string trainerPath() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "ckptscope-train").string();
}

// This program's version, then the LibTorch that ckptscope-train runs with
// (its own --version: loading LibTorch is what tells), or why there is none.
int printVersion() {
  std::printf("ckptscope-cli %s\n", CKPT_VERSION);
  std::fflush(stdout);
  const std::string trainer = trainerPath();
  if (std::string(CKPT_TORCH_VERSION).empty()) {
    std::puts(
        "LibTorch: none (built without LibTorch: no train, resume, finetune, score, generate)");
    return ckpt::cli::kExitOk;
  }
  if (::access(trainer.c_str(), X_OK) != 0) {
    std::printf("LibTorch %s at build time, but %s is missing\n", CKPT_TORCH_VERSION,
                trainer.c_str());
    return ckpt::cli::kExitOk;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    ::execl(trainer.c_str(), trainer.c_str(), "--version", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::printf("LibTorch %s at build time, but %s --version failed\n", CKPT_TORCH_VERSION,
                trainer.c_str());
  return ckpt::cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  ckpt::restartWithHugePageMalloc(argv);
  using namespace ckpt::cli;
  if (argc < 2) return usageError("no command given");
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    printUsage();
    return kExitOk;
  }
  if (cmd == "--version") return printVersion();
  // --remote-cli PATH: the program on the host for every remote path.
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    int take = 0;
    if (a == "--remote-cli") {
      if (i + 1 >= argc) return usageError("--remote-cli needs a PATH");
      setRemoteCli(argv[i + 1]);
      take = 2;
    } else if (a.rfind("--remote-cli=", 0) == 0) {
      setRemoteCli(a.substr(13));
      take = 1;
    } else if (a == "--") {
      break;
    }
    if (!take) continue;
    for (int j = i; j + take <= argc; ++j) argv[j] = argv[j + take];
    argc -= take;
    --i;
  }
  // A resume or fine-tune of a checkpoint on another machine starts there.
  if ((cmd == "resume" || cmd == "finetune") && remoteCheckpointOf(argc, argv))
    return runRemoteTrain(argc, argv);
  if (cmd == "stop") return runRemoteStop(argc, argv);
  if (cmd == "train" || cmd == "resume" || cmd == "finetune" || cmd == "score" ||
      cmd == "generate") {
    // These need LibTorch, which costs 0.4 s and 160 MB to load: they live in
    // the sibling program ckptscope-train.
    const std::string trainer = trainerPath();
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
    if (cmd == "serve") return runServe(argc, argv);
    if (cmd == "info") return runInfo(argc, argv);
    if (cmd == "ls") return runLs(argc, argv);
    if (cmd == "verify") return runVerify(argc, argv);
    if (cmd == "diff") return runDiff(argc, argv);
    if (cmd == "scan") return runScan(argc, argv);
    if (cmd == "metrics") return runMetrics(argc, argv);
    if (cmd == "runs") return runRuns(argc, argv);
    if (cmd == "prune") return runPrune(argc, argv);
    if (cmd == "consolidate") return runConsolidate(argc, argv);
    if (cmd == "export") return runExport(argc, argv);
  } catch (const std::exception& e) {
    // Every reader error is caught per command; this is the last guard.
    return failWith(e.what());
  }
  return usageError("unknown command '" + cmd + "'");
}
