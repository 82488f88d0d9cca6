#pragma once
// The read commands on paths of another machine (ssh://host/path,
// host:/path): the same work, done by `ckptscope-cli serve --stdio` there
// through ssh (docs/REMOTE.md). --json documents are printed here by the
// same printers; a text report is printed there (the agent's `report`) and
// copied here as it is.

#include <optional>
#include <string>
#include <vector>

#include "ckpt/index/hparams.h"
#include "ckpt/remote/remote_path.h"
#include "documents.h"

namespace ckpt::cli {

// --remote-cli PATH (main.cpp takes it out of argv for every command).
void setRemoteCli(std::string program);
[[nodiscard]] const std::string& remoteCli();

// Which of `paths` are remote: nothing when none is; an error message in
// `problem` when some are and some not, they name different hosts, or an
// ssh:// URL is malformed.
std::optional<std::vector<remote::RemotePath>> remotePaths(const std::vector<std::string>& paths,
                                                           std::string& problem);

int runRemoteLs(const remote::RemotePath& dir, bool json);
int runRemoteInfo(const remote::RemotePath& file, bool json);
int runRemoteDiff(const remote::RemotePath& a, const remote::RemotePath& b, size_t top, bool json);
// `paths` name files on more than one machine (one here and one on a host,
// or two hosts); false when a malformed ssh:// URL is among them (then
// remotePaths says what is wrong).
[[nodiscard]] bool acrossMachines(const std::vector<std::string>& paths);
// diff A B with A and B on different machines: compared here (each host's
// file without its tensor bytes, the tensors that differ fetched), so the
// report is the one two files here give.
int runCrossDiff(const std::string& a, const std::string& b, size_t top, bool json);
int runRemoteScan(const std::vector<remote::RemotePath>& paths, bool recursive, bool json);
// verify has only a text report: the host runs it (the agent's `report`).
int runRemoteVerify(const remote::RemotePath& file);
int runRemoteMetrics(const std::vector<remote::RemotePath>& paths,
                     const std::vector<remote::RemotePath>& logs,
                     const std::vector<std::string>& metrics, MetricsFormat format);
// metrics of paths on more than one machine (here and hosts, or several
// hosts): each machine's runs read there (the hosts' agents asked at once,
// this machine's runs read meanwhile), printed together in the order the
// machines are first named. A host's runs are named "ENDPOINT:NAME", their
// paths and files as ssh:// locations. Any machine that fails fails the
// command, with nothing printed.
int runMetricsAcrossMachines(const std::vector<std::string>& paths,
                             const std::vector<std::string>& logs,
                             const std::vector<std::string>& metrics, MetricsFormat format);
// scan of paths on more than one machine. --json: one document of every
// machine's files and checkpoints (a host's named as ssh:// locations),
// `not_examined` summed; a machine that fails fails the command with
// nothing printed. Text: each machine's own report in turn under its name
// ("here:", "ENDPOINT:"); a machine that fails is said on stderr. The exit
// status is 3 where any machine has a dangerous file, else the worst.
int runScanAcrossMachines(const std::vector<std::string>& paths, bool recursive, bool json);
// `runs` of paths of which some are on a host: each machine's runs, their
// curves (the host's agent's `metrics`) and hyperparameters (`hparams`)
// read where they are, the hosts asked at once. On one host the runs are
// named as there; among several machines a host's are named "ENDPOINT:RUN"
// with ssh:// paths. The problems of reading each run's hyperparameters,
// by run. Throws what a machine fails with, its host named.
struct RunsRead {
  std::vector<RunMetrics> metrics;
  std::vector<Hparams> hparams;
  std::vector<std::vector<std::string>> hparamProblems;
};
[[nodiscard]] RunsRead readRunsAcrossMachines(const std::vector<std::string>& paths);

// resume / finetune (remote_train.cpp): the checkpoint argv names when it
// is on another machine (a malformed ssh:// URL gives an empty one).
std::optional<remote::RemotePath> remoteCheckpointOf(int argc, char** argv);
// Started on that host through its agent, detached from the connection, or
// submitted to SLURM there (--sbatch).
int runRemoteTrain(int argc, char** argv);
// stop (remote_stop.cpp): a run started there asked to finish its step,
// save and end, through the host's agent (`stop`).
int runRemoteStop(int argc, char** argv);

}  // namespace ckpt::cli
