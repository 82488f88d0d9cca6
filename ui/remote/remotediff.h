#pragma once
// Compare of checkpoints on another machine (docs/REMOTE.md). Two on one
// host: computed there (`diff` with `full`), so only the numbers travel
// (kilobytes for two 1.8 GB checkpoints). A pair on two machines (one here
// and one on a host, or two hosts): computed here by diffAcrossMachines
// (ckpt/remote/cross_diff.h), each host's tensors fetched only where they
// differ. Either way the Compare tab shows them as it shows the same files
// compared here.

#include <QString>
#include <memory>

#include "compare/compareview.h"

namespace ckpt {

class JobProgress;
class RemoteConnections;

// Why `a` and `b` (each an ssh:// location or a path here) cannot be
// compared: a malformed ssh:// location. Empty otherwise (here, one host,
// or two machines: each can be compared).
[[nodiscard]] QString remotePairProblem(const QString& a, const QString& b);

// Worker thread: `a` and `b` (at least one an ssh:// location) compared:
// on their host when both are on one, else here with each host's bytes.
// Throws ckpt::remote::RemoteError (what to do) or std::runtime_error (an
// answer that cannot be read). Cancelled (progress.cancelled()): the agent
// is sent `cancel` and an empty, cancelled comparison comes back.
[[nodiscard]] CompareView::Computed diffOnHost(RemoteConnections& connections, const QString& a,
                                               const QString& b, JobProgress& progress);

// The Compare tab's source for a pair with a checkpoint on a host (diffOnHost).
[[nodiscard]] CompareView::Source remoteDiffSource(std::shared_ptr<RemoteConnections> connections);

}  // namespace ckpt
