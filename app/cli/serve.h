#pragma once
// The agent (`ckptscope-cli serve --stdio`, docs/REMOTE.md): what its
// methods (serve_methods.cpp) see of the transport (serve.cpp).

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ckpt/index/scanner.h"

namespace ckpt::cli::serve {

using Json = nlohmann::ordered_json;

// A request the agent refuses, with the protocol's error code
// ("bad_field", "outside_roots", "not_found", ...).
class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(std::string code, const std::string& message)
      : std::runtime_error(message), m_code(std::move(code)) {}
  [[nodiscard]] const std::string& code() const { return m_code; }

 private:
  std::string m_code;
};

// The folders (or files) the client opened. Every path a request names must
// resolve (realpath: `..` and symlinks followed) to one of them or below.
class Roots {
 public:
  // Adds `path` (which must exist); returns its real path.
  std::string open(const std::string& path);
  // `path` when it exists and resolves inside a root; else ProtocolError
  // naming `field` and the path.
  [[nodiscard]] std::string check(const std::string& path, const std::string& field) const;
  // A file a `metrics` answer named as one of a run's sources (its read
  // ends): a log beside a run folder opened as the root lies outside it,
  // and `metrics` with `since` may follow it all the same.
  void follow(const std::string& file);
  // check(), or `path` when it is a followed file.
  [[nodiscard]] std::string checkFollowed(const std::string& path, const std::string& field) const;

 private:
  mutable std::mutex m_mutex;
  std::vector<std::string> m_roots;  // real paths
  std::set<std::string> m_followed;  // as metrics named them
};

// A folder's scan shared by the requests that arrived before it was done:
// the app posts `scan`, `hparams` and `metrics` of one folder at once, and
// the host lists it once for the three (on a network filesystem a listing
// of a big sweep costs seconds), so their answers describe one listing.
// A request that arrives after the scan is done lists the folder anew.
// The agent forgets it once no request is waiting.
class ScanShare {
 public:
  using Clock = std::chrono::steady_clock;
  // scanDirectory(path), or the same scan made earlier for a request and
  // done at or after `received`.
  std::shared_ptr<const ScanResult> scan(const std::string& path, Clock::time_point received);
  // The runs under `path` as findMetricRuns finds them, a folder's from scan().
  std::vector<RunEntry> runs(const std::string& path, Clock::time_point received);
  void clear();

 private:
  std::mutex m_mutex;
  std::string m_path;
  std::shared_ptr<const ScanResult> m_scan;
  Clock::time_point m_done;
};

// One request as a method sees it.
struct Call {
  const Json& params;
  const std::atomic<bool>& cancelled;
  Roots& roots;
  // {done, total}: throttled here, sent as the request's progress message.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // An unsolicited message with the request's id (a watch's changes).
  std::function<void(Json event)> event;
  // A method may write its result here as JSON text instead of returning
  // it (`metrics`: a sweep's points, no tree of them); sent when not empty.
  std::string resultText;
  // An event already written as JSON text (`tensorBytes`' chunks of
  // base64: no tree built, no string escaped), sent as event() sends one.
  std::function<void(const std::string& eventJson)> eventText;
  // When the request arrived, and the agent's shared scan (scan, hparams, metrics).
  ScanShare::Clock::time_point received;
  ScanShare* scans = nullptr;

  // params[field] as a string / an array of strings / a number, else
  // ProtocolError("bad_field") naming it.
  [[nodiscard]] std::string text(const char* field) const;
  [[nodiscard]] std::vector<std::string> texts(const char* field, bool required) const;
  [[nodiscard]] int64_t integer(const char* field, int64_t fallback, int64_t lo, int64_t hi) const;
  // params[field]: a path, checked against the roots.
  [[nodiscard]] std::string path(const char* field) const;
};

// Throws ProtocolError("cancelled") when the request was cancelled.
void throwIfCancelled(const Call& call);

// `report` (serve_report.cpp): the text output of ls, info, verify, diff or
// scan, from this program run with that command on the host; {stdout,
// stderr, exit}. Cancellable; ProtocolError("too_large") past 64 MiB.
Json report(Call& call);

// A program run to its end (argv[0] its path, no shell, stdin /dev/null,
// in `cwd` when not empty), its output collected; cancellable (killed).
struct ChildOutput {
  std::string out, err;
  int exit = 0;  // 128 + N when signal N ended it
};
ChildOutput runCollecting(const Call& call, const std::vector<std::string>& argv,
                          const std::string& cwd = {});

// Training on the host (serve_launch.cpp): `launchPlan` (where the run will
// go, its argv, the SLURM script proposed), `launch` (started detached from
// the connection), `submit` (the person's script handed to sbatch).
Json launchPlan(Call& call);
Json launch(Call& call);
Json submit(Call& call);
// `stop` (serve_stop.cpp): a run launch or submit started, asked to finish
// its step and save (SIGTERM; scancel --batch --signal=TERM), once it is
// known to be a ckptscope trainer in that run's folder.
Json stop(Call& call);
// sbatch's path on the agent's PATH, "" when SLURM is not here (hello says).
std::string sbatchProgram();

// A comparison with a file on another machine (serve_bytes.cpp):
// `skeleton` (the file without its storages' bytes, each tensor's digest)
// and `tensorBytes` (one tensor's bytes, in base64 events).
Json skeleton(Call& call);
Json tensorBytes(Call& call);

// The methods other than hello / cancel (answered by the transport itself):
// the result, or ProtocolError("unknown_method").
Json runMethod(const std::string& method, Call& call);

}  // namespace ckpt::cli::serve
