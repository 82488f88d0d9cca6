#include "remote_commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/cross_diff.h"
#include "ckpt/remote/metrics_request.h"
#include "ckpt/version.h"
#include "common.h"
#include "trainer_folder.h"

namespace ckpt::cli {
namespace {

using Json = nlohmann::ordered_json;
using remote::AgentClient;
using remote::RemotePath;

std::string g_remoteCli;  // --remote-cli

// The agent on `where`'s host, with `opened` opened as roots (the paths the
// command names, nothing else is readable through it).
std::unique_ptr<AgentClient> connect(const RemotePath& where,
                                     const std::vector<const RemotePath*>& opened) {
  auto agent = std::make_unique<AgentClient>(
      remote::sshAgentCommand(where, g_remoteCli, remote::cliSshQuestions()),
      "host " + where.endpoint(), std::string("ckptscope-cli ") + CKPT_VERSION);
  for (const RemotePath* p : opened) agent->call("open", Json{{"path", p->path}});
  return agent;
}

// "comparing: 42%" on a terminal, as the local diff shows it.
AgentClient::ProgressFn terminalProgress(const char* what) {
  if (::isatty(STDERR_FILENO) != 1) return {};
  return [what](const Json& p) {
    const double done = p.value("done", 0.0), total = p.value("total", 0.0);
    std::fprintf(stderr, "\r%s: %3d%%", what, total > 0 ? int(100.0 * done / total) : 100);
  };
}

// The document, then the failure the host's command would have ended with.
int printDocument(const Json& result) {
  printJson(result["document"]);
  std::fflush(stdout);
  if (result.contains("failure") && result["failure"].is_string())
    return failWith(result["failure"].get<std::string>());
  return kExitOk;
}

template <typename Fn>
int guarded(const Fn& fn) {
  try {
    return fn();
  } catch (const remote::RemoteError& e) {
    return failWith(e.what());
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
}

// The text report: the host runs the command itself (the agent's `report`)
// and what it printed is printed here, on the same streams, with its exit
// status, so `info host:/p/x.pt` is exactly `info /p/x.pt` on the host.
int textReport(const char* command, const std::vector<const RemotePath*>& paths,
               Json params = Json::object()) {
  return guarded([&] {
    auto agent = connect(*paths.front(), paths);
    Json names = Json::array();
    for (const RemotePath* p : paths) names.push_back(p->path);
    params["command"] = command;
    params["paths"] = std::move(names);
    Json r;
    try {
      r = agent->call("report", params);
    } catch (const remote::RemoteError& e) {
      if (e.code() != "unknown_method") throw;
      // An agent from before `report`: its JSON answers still work (verify
      // has none).
      const bool hasJson = std::string(command) != "verify";
      return failWith("the ckptscope-cli on " + paths.front()->endpoint() + " (" +
                      agent->hello().value("version", std::string("?")) + ") cannot print " +
                      command + "'s text report: " + (hasJson ? "add --json, or " : "") +
                      "update ckptscope-cli on the host");
    }
    const std::string out = r.value("stdout", std::string()),
                      err = r.value("stderr", std::string());
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    std::fwrite(err.data(), 1, err.size(), stderr);
    std::fflush(stderr);
    return r.value("exit", int(kExitFailure));
  });
}

// A host's run among the runs of several machines: named with its host
// and its files named as ssh:// locations, so that two machines' runs never
// share a name and each path can be handed to another command as it is.
void placeOnHost(RunMetrics& run, const RemotePath& where) {
  const auto at = [&where](std::string& path) { path = where.locationOf(path); };
  run.run = where.endpoint() + ":" + run.run;
  at(run.path);
  for (MetricSeries& s : run.series)
    for (std::string& file : s.files) at(file);
  for (CheckpointMarker& m : run.markers) at(m.path);
  if (!run.summaryFile.empty()) at(run.summaryFile);
  for (std::string& problem : run.problems) problem = where.endpoint() + ": " + problem;
}

}  // namespace

void setRemoteCli(std::string program) {
  g_remoteCli = std::move(program);
}

const std::string& remoteCli() {
  return g_remoteCli;
}

std::optional<std::vector<RemotePath>> remotePaths(const std::vector<std::string>& paths,
                                                   std::string& problem) {
  std::vector<RemotePath> out;
  size_t local = 0;
  try {
    for (const std::string& p : paths) {
      if (auto r = remote::parseRemotePath(p))
        out.push_back(std::move(*r));
      else
        ++local;
    }
  } catch (const std::invalid_argument& e) {
    problem = e.what();
    return std::nullopt;
  }
  if (out.empty()) return std::nullopt;
  if (local) {
    problem =
        "local and remote paths in one command: not supported yet (copy the file, or run "
        "the command on the host)";
    return std::nullopt;
  }
  for (const RemotePath& r : out)
    if (r.endpoint() != out.front().endpoint()) {
      problem = "paths on two hosts (" + out.front().endpoint() + ", " + r.endpoint() +
                ") in one command: not supported yet";
      return std::nullopt;
    }
  return out;
}

int runRemoteLs(const RemotePath& dir, bool json) {
  if (!json) return textReport("ls", {&dir});
  return guarded([&] {
    auto agent = connect(dir, {&dir});
    return printDocument(agent->call("scan", Json{{"path", dir.path}}));
  });
}

int runRemoteInfo(const RemotePath& file, bool json) {
  if (!json) return textReport("info", {&file});
  return guarded([&] {
    auto agent = connect(file, {&file});
    return printDocument(agent->call("info", Json{{"path", file.path}}));
  });
}

int runRemoteDiff(const RemotePath& a, const RemotePath& b, size_t top, bool json) {
  if (!json) return textReport("diff", {&a, &b}, top > 0 ? Json{{"top", top}} : Json::object());
  return guarded([&] {
    // Both files are on one host: compared there, only the report travels.
    auto agent = connect(a, {&a, &b});
    const Json result = agent->call("diff", Json{{"a", a.path}, {"b", b.path}, {"top", top}},
                                    terminalProgress("comparing"));
    if (::isatty(STDERR_FILENO) == 1) std::fprintf(stderr, "\r%20s\r", "");
    return printDocument(result);
  });
}

bool acrossMachines(const std::vector<std::string>& paths) {
  std::optional<std::string> first;  // "" here, else the endpoint
  try {
    for (const std::string& p : paths) {
      const auto r = remote::parseRemotePath(p);
      const std::string where = r ? r->endpoint() : std::string();
      if (first && *first != where) return true;
      first = where;
    }
  } catch (const std::invalid_argument&) {
    return false;
  }
  return false;
}

int runCrossDiff(const std::string& pathA, const std::string& pathB, size_t top, bool json) {
  return guarded([&] {
    // One agent per host, each with its file opened as a root.
    std::vector<std::unique_ptr<AgentClient>> agents;
    auto end = [&](const std::string& arg) {
      remote::DiffEnd e;
      if (const auto r = remote::parseRemotePath(arg)) {
        e.path = r->path;
        e.host = r->endpoint();
        agents.push_back(connect(*r, {&*r}));
        e.agent = agents.back().get();
      } else {
        e.path = checkpointArgument(arg);
      }
      return e;
    };
    const remote::DiffEnd a = end(pathA), b = end(pathB);
    remote::CrossDiffOptions options;
    options.topN = diffOptions(top).topN;
    const bool terminal = ::isatty(STDERR_FILENO) == 1;
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    if (terminal)
      options.progress = [&last](const std::string& phase, uint64_t done, uint64_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last > std::chrono::milliseconds(200) || done == total) {
          last = now;
          std::fprintf(stderr, "\r%-40s %3d%%", (phase + ":").c_str(),
                       total ? int(100.0 * double(done) / double(total)) : 100);
        }
        return true;
      };
    const remote::CrossDiff r = remote::diffAcrossMachines(a, b, options);
    if (terminal) {
      std::fprintf(stderr, "\r%50s\r", "");
      for (const auto* side : {&a, &b}) {
        if (!side->agent) continue;
        const remote::EndTraffic& t = side == &a ? r.trafficA : r.trafficB;
        std::fprintf(stderr, "%s: %zu tensors fetched (%s), the file without them %s\n",
                     side->host.c_str(), t.tensorsFetched, humanBytes(t.tensorBytes).c_str(),
                     humanBytes(t.skeletonBytes).c_str());
      }
      std::fprintf(stderr, "%zu tensors equal on both sides: not fetched\n", r.identical);
    }
    if (json)
      printJson(diffToJson(r.diff, top));
    else
      printDiffText(r.diff, *r.a, *r.b);
    std::fflush(stdout);
    const std::string failure = diffFailure(r.diff);
    return failure.empty() ? kExitOk : failWith(failure);
  });
}

int runRemoteScan(const std::vector<RemotePath>& paths, bool recursive, bool json) {
  std::vector<const RemotePath*> opened;
  for (const RemotePath& p : paths) opened.push_back(&p);
  if (!json) return textReport("scan", opened, Json{{"recursive", recursive}});
  return guarded([&] {
    Json names = Json::array();
    for (const RemotePath& p : paths) names.push_back(p.path);
    auto agent = connect(paths.front(), opened);
    const Json r = agent->call("scanSafety", Json{{"paths", names}, {"recursive", recursive}});
    if (r["failure"].is_string()) return failWith(r["failure"].get<std::string>());
    printJson(r["document"]);
    std::fflush(stdout);
    return r["exit"].get<int>();
  });
}

int runRemoteVerify(const RemotePath& file) {
  return textReport("verify", {&file});
}

int runRemoteMetrics(const std::vector<RemotePath>& paths, const std::vector<RemotePath>& logs,
                     const std::vector<std::string>& metrics, MetricsFormat format) {
  return guarded([&] {
    std::vector<const RemotePath*> opened;
    std::vector<std::string> names, logNames;
    for (const RemotePath& p : paths) {
      opened.push_back(&p);
      names.push_back(p.path);
    }
    for (const RemotePath& p : logs) {
      opened.push_back(&p);
      logNames.push_back(p.path);
    }
    auto agent = connect(paths.empty() ? logs.front() : paths.front(), opened);
    // Printed as the runs arrive: while the host reads the next ones.
    MetricsPrinter printer(metrics, format, /*eachRunOut=*/true);
    remote::awaitRunMetrics(*agent, remote::postRunMetrics(*agent, names, logNames),
                            [&printer](RunMetrics&& run) { printer.add(run); });
    printer.finish();
    return kExitOk;
  });
}

namespace {

// A command's arguments by machine, in the order the machines are first
// named: lists[k] holds the arguments of the k-th list given (paths, logs)
// on this machine, a host's as its paths there, opened as roots.
struct Machine {
  std::optional<RemotePath> host;  // nothing: here
  std::vector<std::vector<std::string>> lists;
  std::vector<RemotePath> opened;
  std::unique_ptr<AgentClient> agent;
  int64_t asked = 0;
};

std::vector<Machine> byMachine(const std::vector<const std::vector<std::string>*>& lists) {
  std::vector<Machine> machines;
  for (size_t k = 0; k < lists.size(); ++k)
    for (const std::string& arg : *lists[k]) {
      std::optional<RemotePath> r = remote::parseRemotePath(arg);
      const std::string where = r ? r->endpoint() : std::string();
      auto m = std::find_if(machines.begin(), machines.end(), [&where](const Machine& x) {
        return (x.host ? x.host->endpoint() : std::string()) == where;
      });
      if (m == machines.end()) {
        machines.emplace_back().host = r;
        m = machines.end() - 1;
        m->lists.resize(lists.size());
      }
      m->lists[k].push_back(r ? r->path : arg);
      if (r) m->opened.push_back(std::move(*r));
    }
  return machines;
}

// `ask` for a host; what fails names the host (a connection's failure
// does already).
template <typename Ask>
void onHost(const Machine& m, const Ask& ask) {
  try {
    ask();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.rfind("host ", 0) == 0) throw;
    throw std::runtime_error("host " + m.host->endpoint() + ": " + what);
  }
}

// Connects to each host in turn (one connection at a time, so that ssh
// asks for one login at a time) and lets `post` send its request there.
template <typename Post>
void connectAndPost(std::vector<Machine>& machines, const Post& post) {
  for (Machine& m : machines) {
    if (!m.host) continue;
    onHost(m, [&m, &post] {
      std::vector<const RemotePath*> opened;
      for (const RemotePath& p : m.opened) opened.push_back(&p);
      m.agent = connect(*m.host, opened);
      m.asked = post(m);
    });
  }
}

}  // namespace

int runMetricsAcrossMachines(const std::vector<std::string>& paths,
                             const std::vector<std::string>& logs,
                             const std::vector<std::string>& metrics, MetricsFormat format) {
  return guarded([&] {
    std::vector<Machine> machines = byMachine({&paths, &logs});
    // Each host asked first, then this machine's runs read while the hosts
    // read theirs.
    connectAndPost(machines, [](Machine& m) {
      return remote::postRunMetrics(*m.agent, m.lists[0], m.lists[1]);
    });
    std::vector<std::vector<RunMetrics>> runs(machines.size());
    for (size_t i = 0; i < machines.size(); ++i)
      if (!machines[i].host) runs[i] = metricsOf(machines[i].lists[0], machines[i].lists[1]);
    std::vector<RunMetrics> all;
    for (size_t i = 0; i < machines.size(); ++i) {
      Machine& m = machines[i];
      if (m.host) {
        onHost(m, [&] { runs[i] = remote::awaitRunMetrics(*m.agent, m.asked); });
        for (RunMetrics& run : runs[i]) placeOnHost(run, *m.host);
      }
      for (RunMetrics& run : runs[i]) all.push_back(std::move(run));
    }
    printMetrics(all, metrics, format);
    return kExitOk;
  });
}

int runScanAcrossMachines(const std::vector<std::string>& paths, bool recursive, bool json) {
  return guarded([&] {
    std::vector<Machine> machines = byMachine({&paths});
    if (!json) {
      // Each machine's own report in turn, under its name, with the
      // worst exit status of them.
      int exit = kExitOk;
      bool dangerous = false;
      for (Machine& m : machines) {
        std::printf("%s%s:\n", &m == &machines.front() ? "" : "\n",
                    m.host ? m.host->endpoint().c_str() : "here");
        std::fflush(stdout);
        int e = kExitOk;
        if (m.host) {
          std::vector<const RemotePath*> opened;
          for (const RemotePath& p : m.opened) opened.push_back(&p);
          e = textReport("scan", opened, Json{{"recursive", recursive}});
        } else {
          const SafetyScan scan = scanSafety(m.lists[0], recursive, /*printText=*/true);
          std::fflush(stdout);
          e = scan.problem.empty() ? scan.exit : failWith(scan.problem);
        }
        // A machine that fails is said on stderr and the others still
        // scanned; the status is the worst, dangerous first (as one
        // machine's scan: a dangerous file before an unreadable one).
        dangerous = dangerous || e == kExitDangerous;
        if (e != kExitDangerous) exit = std::max(exit, e);
      }
      return dangerous ? kExitDangerous : exit;
    }
    connectAndPost(machines, [recursive](Machine& m) {
      return m.agent->post("scanSafety", Json{{"paths", m.lists[0]}, {"recursive", recursive}});
    });
    SafetyScan here;
    for (Machine& m : machines)
      if (!m.host) here = scanSafety(m.lists[0], recursive, /*printText=*/false);
    if (!here.problem.empty()) return failWith(here.problem);
    Json files = Json::array(), checkpoints = Json::array(), skipped = Json::object();
    bool dangerous = false, unreadable = false;
    for (Machine& m : machines) {
      Json document;
      int exit = kExitOk;
      if (m.host) {
        Json answer;
        onHost(m, [&] { answer = m.agent->await(m.asked, "scanSafety"); });
        if (answer["failure"].is_string())
          return failWith("host " + m.host->endpoint() + ": " +
                          answer["failure"].get<std::string>());
        document = std::move(answer["document"]);
        exit = answer["exit"].get<int>();
        // Files named where the CLI finds them again.
        for (Json& f : document["files"]) f["file"] = m.host->locationOf(f["file"]);
        for (Json& c : document["checkpoints"]) {
          c["path"] = m.host->locationOf(c["path"]);
          if (c["file"].is_string()) c["file"] = m.host->locationOf(c["file"]);
          for (Json& f : c["files"]) f = m.host->locationOf(f);
        }
      } else {
        document = std::move(here.document);
        exit = here.exit;
      }
      dangerous = dangerous || exit == kExitDangerous;
      unreadable = unreadable || exit == kExitFailure;
      for (Json& f : document["files"]) files.push_back(std::move(f));
      for (Json& c : document["checkpoints"]) checkpoints.push_back(std::move(c));
      for (auto it = document["not_examined"].begin(); it != document["not_examined"].end(); ++it)
        skipped[it.key()] = skipped.value(it.key(), uint64_t(0)) + it.value().get<uint64_t>();
    }
    printJson(Json{{"files", std::move(files)},
                   {"checkpoints", std::move(checkpoints)},
                   {"not_examined", std::move(skipped)}});
    std::fflush(stdout);
    // As one machine's scan: a dangerous file anywhere, else an unreadable one.
    return dangerous ? kExitDangerous : (unreadable ? kExitFailure : kExitOk);
  });
}

RunsRead readRunsAcrossMachines(const std::vector<std::string>& paths) {
  std::vector<Machine> machines = byMachine({&paths});
  const bool several = machines.size() > 1;
  // The hyperparameters and the curves of each host's runs asked at once
  // (in that order, as the app asks: the runs stream in last).
  std::vector<int64_t> hparamsAsked(machines.size(), -1);
  connectAndPost(machines, [&machines, &hparamsAsked](Machine& m) {
    hparamsAsked[size_t(&m - machines.data())] = remote::postRunHparams(*m.agent, m.lists[0]);
    return remote::postRunMetrics(*m.agent, m.lists[0]);
  });
  // This machine's runs read while the hosts read theirs.
  RunsRead here;
  for (const Machine& m : machines) {
    if (m.host) continue;
    std::vector<RunEntry> runs;
    for (const std::string& p : m.lists[0])
      for (RunEntry& r : findMetricRuns(p)) runs.push_back(std::move(r));
    here.metrics = collectMetrics(runs);
    for (const RunEntry& run : runs) {
      here.hparamProblems.emplace_back();
      here.hparams.push_back(readHparams(run, &here.hparamProblems.back()));
    }
  }
  RunsRead out;
  for (size_t i = 0; i < machines.size(); ++i) {
    Machine& m = machines[i];
    if (!m.host) {
      for (size_t k = 0; k < here.metrics.size(); ++k) {
        out.metrics.push_back(std::move(here.metrics[k]));
        out.hparams.push_back(std::move(here.hparams[k]));
        out.hparamProblems.push_back(std::move(here.hparamProblems[k]));
      }
      continue;
    }
    std::vector<RunMetrics> metrics;
    std::vector<remote::RunHparams> hparams;
    std::string older;  // an agent from before `hparams`: the table has no hyperparameters
    onHost(m, [&] {
      hparams = remote::awaitRunHparams(*m.agent, hparamsAsked[i], older);
      metrics = remote::awaitRunMetrics(*m.agent, m.asked);
    });
    if (!older.empty())
      older = "hyperparameters not read: the ckptscope-cli on " + m.host->endpoint() +
              " is older than `hparams`";
    std::map<std::string, remote::RunHparams*> byPath;
    for (remote::RunHparams& h : hparams) byPath[h.path] = &h;
    for (RunMetrics& run : metrics) {
      Hparams found;
      std::vector<std::string> problems;
      if (const auto it = byPath.find(run.path); it != byPath.end()) {
        found = std::move(it->second->hparams);
        problems = std::move(it->second->problems);
      }
      if (!older.empty()) {  // said once, with the host's first run
        problems.push_back(std::move(older));
        older.clear();
      }
      if (several) {
        placeOnHost(run, *m.host);
        for (std::string& p : problems) p = m.host->endpoint() + ": " + p;
      }
      out.hparams.push_back(std::move(found));
      out.hparamProblems.push_back(std::move(problems));
      out.metrics.push_back(std::move(run));
    }
  }
  return out;
}

}  // namespace ckpt::cli
