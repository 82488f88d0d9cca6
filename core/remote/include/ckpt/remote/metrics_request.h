#pragma once
// The `metrics` request every client sends (docs/REMOTE.md): ckptscope-cli's
// remote `metrics` and the app's Curves tab ask for the same thing the same
// way, so they read the same curves at the same speed.

#include <string>
#include <vector>

#include "ckpt/index/metrics.h"
#include "ckpt/index/metrics_each.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/hparams_wire.h"

namespace ckpt::remote {

// The curves of the runs at `paths` (folders, a run each or runs below)
// and of the extra console `logs`, as the host reads them, asked
// (AgentClient::post: another request can follow before its answer is read)
// with `columns` (progressions travel as first and stride; an agent older
// than `columns` ignores it and sends `points`) and `stream`. The answer is
// then read with awaitRunMetrics (in the order the requests were posted),
// its text straight into the series' columns (metricsResultFromText: no
// JSON tree of the points). awaitRunMetrics throws RemoteError as
// AgentClient::call does, and std::runtime_error naming where an answer
// cannot be read.
int64_t postRunMetrics(AgentClient& agent, const std::vector<std::string>& paths,
                       const std::vector<std::string>& logs = {});
std::vector<RunMetrics> awaitRunMetrics(AgentClient& agent, int64_t id,
                                        const AgentClient::ProgressFn& progress = {},
                                        const AgentClient::CancelFn& cancelled = {});
// The runs handed to `each` in their order as each arrives: the request
// asks for them as a stream (`stream`, docs/REMOTE.md), so a run is decoded
// (and printed, drawn) while the host reads the next. An agent older than
// `stream` sends them all in its answer: they are handed over then.
void awaitRunMetrics(AgentClient& agent, int64_t id, const RunMetricsFn& each,
                     const AgentClient::ProgressFn& progress = {},
                     const AgentClient::CancelFn& cancelled = {});

// The runs' hyperparameters at `paths` (`hparams`), posted with their
// curves and before them (the streamed runs are then the last thing
// waited for), as the app and ckptscope-cli's remote `runs` ask. An agent older than `hparams`
// answers unknown_method: then no runs, and `older` gets its message (empty otherwise); any other
// error is thrown.
int64_t postRunHparams(AgentClient& agent, const std::vector<std::string>& paths);
std::vector<RunHparams> awaitRunHparams(AgentClient& agent, int64_t id, std::string& older);

}  // namespace ckpt::remote
