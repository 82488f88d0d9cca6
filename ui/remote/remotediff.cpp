#include "remote/remotediff.h"

#include <stdexcept>

#include "backgroundjob.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/cross_diff.h"
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
  try {
    (void)remote::parseRemotePath(pathToStd(a));
    (void)remote::parseRemotePath(pathToStd(b));
  } catch (const std::invalid_argument& e) {
    return fromStd(e.what());
  }
  return {};
}

namespace {

// A pair on two machines: each host's file sent without its tensor bytes,
// the tensors that differ fetched, and compared here by the code that
// compares two files here.
CompareView::Computed diffAcross(RemoteConnections& connections, const QString& a, const QString& b,
                                 JobProgress& progress) {
  const std::optional<remote::RemotePath> ra = remoteOf(a), rb = remoteOf(b);
  auto end = [](const std::optional<remote::RemotePath>& r, const QString& path) {
    remote::DiffEnd e;
    e.path = r ? r->path : pathToStd(path);
    e.host = r ? r->endpoint() : std::string();
    return e;
  };
  remote::DiffEnd ea = end(ra, a), eb = end(rb, b);
  remote::CrossDiffOptions options;
  options.progress = [&progress](const std::string&, uint64_t done, uint64_t total) {
    return progress.report(done, total);
  };
  options.cancelled = [&progress] { return progress.cancelled(); };
  remote::CrossDiff result;
  auto run = [&] { result = remote::diffAcrossMachines(ea, eb, options); };
  // Each host's agent held for the comparison (its requests in a row), the
  // file opened as a root (a folder opened in the window holds it already).
  auto hold = [&connections](const remote::RemotePath& where, remote::DiffEnd& e,
                             const std::function<void()>& then) {
    connections.withAgentOf(where, [&](remote::AgentClient& agent) {
      agent.call("open", nlohmann::ordered_json{{"path", where.path}});
      e.agent = &agent;
      then();
    });
  };
  try {
    if (ra && rb) {
      // Two hosts: locked in one order, whoever asks.
      const bool aFirst = ra->endpoint() < rb->endpoint();
      const remote::RemotePath& first = aFirst ? *ra : *rb;
      const remote::RemotePath& second = aFirst ? *rb : *ra;
      remote::DiffEnd& e1 = aFirst ? ea : eb;
      remote::DiffEnd& e2 = aFirst ? eb : ea;
      hold(first, e1, [&] { hold(second, e2, run); });
    } else {
      hold(ra ? *ra : *rb, ra ? ea : eb, run);
    }
  } catch (const remote::RemoteError& e) {
    if (e.code() != "cancelled" || !progress.cancelled()) throw;
    result.diff.cancelled = true;
  }
  if (result.diff.cancelled || progress.cancelled()) {
    auto none = std::make_shared<CheckpointDiff>();
    none->pathA = ea.path;
    none->pathB = eb.path;
    none->cancelled = true;
    return {std::move(none), {}};
  }
  std::vector<MetadataChange> every = diffMetadata(*result.a, *result.b, /*everyKey=*/true);
  return {std::make_shared<const CheckpointDiff>(std::move(result.diff)), std::move(every)};
}

}  // namespace

CompareView::Computed diffOnHost(RemoteConnections& connections, const QString& a, const QString& b,
                                 JobProgress& progress) {
  using Json = nlohmann::ordered_json;
  const std::optional<remote::RemotePath> ra = remoteOf(a), rb = remoteOf(b);
  if (!ra || !rb || ra->endpoint() != rb->endpoint())
    return diffAcross(connections, a, b, progress);
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
