#pragma once
// Data-parallel training on one machine without torchrun: this process
// starts the ranks, hosts their rendezvous and merges their output. No
// LibTorch in this header.

#include <string>
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
};

// Starts `nproc` ranks as torchrun's agent does on one node: RANK,
// LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (a free port of
// the TCPStore this process hosts), TORCHELASTIC_USE_AGENT_STORE=True,
// OMP_NUM_THREADS=1 unless set. Copies every line the ranks print with
// "[rankN]: " in front (stdout to stdout, stderr to stderr); forwards
// SIGINT / SIGTERM to every rank (they finish their step and save a
// checkpoint to resume from); says which rank failed and how. Returns 0 when
// every rank exited 0, else 1. Throws std::runtime_error when it cannot start.
int launchLocalRanks(const LaunchOptions& options);

}  // namespace ckpt
