#pragma once
// A comparison of two checkpoints on different machines (one here and one
// on a host, or on two hosts): `diff A B` where no one machine holds both
// (docs/REMOTE.md, "Comparing across machines"). Each file on a host is
// sent without its storages' bytes (the agent's `skeleton`) and opened here
// as the same CheckpointFile (a sharded checkpoint: its files so, in a
// private folder); the comparison is then made by
// diffCheckpoints, the code that compares two files here, so the report is
// the one two files here give (byte for byte in diff --json). Tensor bytes
// travel only where a tensor differs: each side's digest of a tensor's
// stored bytes is compared first, and a tensor equal on both sides is
// compared with itself from the side that has it (here: nothing moves; two
// hosts: one side's bytes). No Qt: ckptscope-cli and the app's Compare tab
// both use it.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ckpt/analysis/diff.h"
#include "ckpt/format/checkpoint_file.h"

namespace ckpt::remote {

class AgentClient;

// One file of the comparison: here (agent null), or on a host through its
// agent, which has the path opened as a root (or below one).
struct DiffEnd {
  std::string path;  // here: a path; on a host: the path there, as the agent is given it
  AgentClient* agent = nullptr;
  std::string host;  // "[user@]host[:port]", for messages
};

// What crossed the network for one side.
struct EndTraffic {
  uint64_t skeletonBytes = 0;  // the file without its storages (decoded bytes)
  size_t tensorsFetched = 0;   // tensorBytes requests answered
  uint64_t tensorBytes = 0;    // tensor bytes received (decoded)
};

struct CrossDiffOptions {
  size_t topN = 20;
  // What is being done (`phase`: "reading HOST", "comparing"), how far;
  // called from the calling thread or a worker, never two at once;
  // returning false cancels.
  std::function<bool(const std::string& phase, uint64_t done, uint64_t total)> progress;
  // Asked while an agent works (every ~50 ms) and between tensors: true
  // cancels (the agent is sent `cancel`), as progress returning false does.
  std::function<bool()> cancelled;
};

struct CrossDiff {
  CheckpointDiff diff;  // `cancelled` set (and nothing else) when it was cancelled
  // Where a host's sharded checkpoint is read from here (its files without
  // their storages' bytes, in a private folder removed with this): held
  // while `a` and `b` are (declared before them, it goes after them).
  std::shared_ptr<const void> skeletonFolders;
  // Both files, as diffCheckpoints saw them (a host's: its skeleton, no
  // tensor bytes): for their metadata (diffMetadata with everyKey) and the
  // text report's summary line.
  std::unique_ptr<CheckpointFile> a, b;
  EndTraffic trafficA, trafficB;
  size_t identical = 0;  // compared pairs whose bytes were equal on both sides
};

// Throws RemoteError (an agent's answer, or why there is none; the message
// names the host, and the tensor for a fetch), FormatError (a file here
// cannot be read; a tensor that cannot be read on either side is that
// tensor's error, as in a diff here) or std::runtime_error (an answer that
// is not what it should be: named).
[[nodiscard]] CrossDiff diffAcrossMachines(const DiffEnd& a, const DiffEnd& b,
                                           const CrossDiffOptions& options = {});

}  // namespace ckpt::remote
