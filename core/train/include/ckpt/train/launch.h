#pragma once
// Data-parallel training on one machine without torchrun: this process
// starts the ranks, hosts their rendezvous and merges their output. The one
// launcher of `ckptscope-cli train|resume|finetune --nproc N` and of the
// desktop app's Train panel (through its plugin). No LibTorch in this header.

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

struct LaunchOptions {
  std::string program;            // what every rank runs
  std::vector<std::string> args;  // its arguments (argv[1..])
  int nproc = 2;
  // How long the other ranks may take to exit on their own once one has
  // failed (they stop within the run's dist_timeout_seconds), before they
  // are terminated.
  double timeoutSeconds = 600;
  // Variables set for every rank on top of this process's environment
  // (OMP_NUM_THREADS, say).
  std::vector<std::pair<std::string, std::string>> env;
};

// What the ranks print, and when to pass a signal on to them.
struct LaunchIo {
  // Each complete line a rank prints (without its newline), as it comes.
  std::function<void(int rank, bool isStderr, const std::string& line)> line;
  // Asked about every 100 ms: a signal to send to every rank still running
  // (SIGINT: they finish their step and save a checkpoint to resume from),
  // or 0.
  std::function<int()> pendingSignal;
};

struct LaunchResult {
  bool ok = true;       // every rank exited 0
  std::string failure;  // else: "rank 1 exited with code 1 first (rank 1 exited with code 1; ...)"
  // Every rank exited 2: each refused what it was asked (its arguments, or
  // batch numbers that contradict each other for the world) before the run.
  bool everyRankRefused = false;
};

// Starts `nproc` ranks as torchrun's agent does on one node: RANK,
// LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (a free port of
// the TCPStore this process hosts), TORCHELASTIC_USE_AGENT_STORE=True,
// OMP_NUM_THREADS=1 unless set; returns when every rank has exited. Once a
// rank fails, the others get the run's timeout to notice and exit, then
// SIGTERM, then SIGKILL. Throws std::runtime_error when it cannot start
// (then no rank is left running). Safe to call from a thread of a
// multi-threaded process: nothing but async-signal-safe calls run between
// fork and exec, and no signal handler is installed.
LaunchResult runLocalRanks(const LaunchOptions& options, const LaunchIo& io);

// runLocalRanks for a terminal: copies every line with "[rankN]: " in front
// (stdout to stdout, stderr to stderr), forwards SIGINT / SIGTERM to every
// rank, says which rank failed and how. Returns 0 when every rank exited 0,
// 2 when every rank exited 2 (refused what it was asked, as a lone process
// would have), else 1.
int launchLocalRanks(const LaunchOptions& options);

}  // namespace ckpt
