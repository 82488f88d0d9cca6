#pragma once
// Compare of two checkpoints on another machine (docs/REMOTE.md, `diff`
// with `full`): computed on the host where both files are, so only the
// numbers travel (kilobytes for two 1.8 GB checkpoints); the Compare tab
// shows them as it shows the same files compared here. A pair that is not
// on one host (one here and one there, or two hosts) is refused with a
// message: there is nowhere both can be read.

#include <QString>
#include <memory>

#include "compare/compareview.h"

namespace ckpt {

class JobProgress;
class RemoteConnections;

// Why `a` and `b` (each an ssh:// location or a path here) cannot be
// compared: one here and one on a host, or on two hosts. Empty when both
// are on one host, or both here.
[[nodiscard]] QString remotePairProblem(const QString& a, const QString& b);

// Worker thread: `a` and `b`, ssh:// locations on one host, compared there.
// Throws ckpt::remote::RemoteError (what to do) or std::runtime_error (an
// answer that cannot be read). Cancelled (progress.cancelled()): the agent
// is sent `cancel` and an empty, cancelled comparison comes back.
[[nodiscard]] CompareView::Computed diffOnHost(RemoteConnections& connections, const QString& a,
                                               const QString& b, JobProgress& progress);

// The Compare tab's source for two checkpoints on one host (diffOnHost).
[[nodiscard]] CompareView::Source remoteDiffSource(std::shared_ptr<RemoteConnections> connections);

}  // namespace ckpt
