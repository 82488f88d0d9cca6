#include "remote/remotediff.h"

#include <stdexcept>

#include "backgroundjob.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/diff_wire.h"
#include "ckpt/remote/remote_path.h"
#include "remote/remoteconnections.h"
#include "remote/remotefolder.h"
#include "textformat.h"

namespace ckpt {
namespace {

std::optional<remote::RemotePath> remoteOf(const QString& location) {
  try {
    return remote::parseRemotePath(pathToStd(location));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace

QString remotePairProblem(const QString& a, const QString& b) {
  std::optional<remote::RemotePath> ra, rb;
  try {
    ra = remote::parseRemotePath(pathToStd(a));
    rb = remote::parseRemotePath(pathToStd(b));
  } catch (const std::invalid_argument& e) {
    return fromStd(e.what());
  }
  if (!ra && !rb) return {};
  if (ra && rb) {
    if (ra->endpoint() == rb->endpoint()) return {};
    return QObject::tr(
               "Cannot compare a checkpoint on %1 with one on %2: a comparison is computed "
               "where both files are. Copy one of them to the other host (scp), then compare "
               "them there.")
        .arg(fromStd(ra->endpoint()), fromStd(rb->endpoint()));
  }
  const QString host = fromStd((ra ? ra : rb)->endpoint());
  const QString there = ra ? a : b;
  const QString here = ra ? b : a;
  return QObject::tr(
             "Cannot compare %1 (on %2) with %3 (on this machine): a comparison is computed "
             "where both files are, and these are on two machines. Copy one of them next to "
             "the other (scp), then compare them there.")
      .arg(there, host, here);
}

CompareView::Computed diffOnHost(RemoteConnections& connections, const QString& a, const QString& b,
                                 JobProgress& progress) {
  using Json = nlohmann::ordered_json;
  const std::optional<remote::RemotePath> ra = remoteOf(a), rb = remoteOf(b);
  if (!ra || !rb || ra->endpoint() != rb->endpoint())
    throw std::runtime_error(pathToStd(remotePairProblem(a, b)));
  Json answer;
  try {
    answer = connections.call(
        *ra, "diff", Json{{"a", ra->path}, {"b", rb->path}, {"full", true}},
        [&progress](const Json& p) {
          progress.report(p.value("done", uint64_t(0)), p.value("total", uint64_t(0)));
        },
        [&progress] { return progress.cancelled(); });
  } catch (const remote::RemoteError& e) {
    if (e.code() != "cancelled" || !progress.cancelled()) throw;
    // Stopped on the host: nothing of it comes back (a local compare keeps
    // the tensors done so far; the agent answers a cancel with none).
    auto none = std::make_shared<CheckpointDiff>();
    none->pathA = ra->path;
    none->pathB = rb->path;
    none->cancelled = true;
    return {std::move(none), {}};
  }
  if (!answer.is_object() || !answer.contains("diff"))
    throw std::runtime_error(
        "the agent's answer to diff has no 'diff': update ckptscope-cli on the host (" + ra->host +
        "): " + remote::installHint());
  remote::WireDiff wire = remote::diffFromWire(answer["diff"]);
  return {std::make_shared<const CheckpointDiff>(std::move(wire.diff)), std::move(wire.everyKey)};
}

CompareView::Source remoteDiffSource(std::shared_ptr<RemoteConnections> connections) {
  return [connections](const QString& a, const QString& b, JobProgress& progress) {
    return diffOnHost(*connections, a, b, progress);
  };
}

}  // namespace ckpt
