#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ckpt::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // a file cannot be read, a check failed
constexpr int kExitUsage = 2;
constexpr int kExitDangerous = 3;  // scan found a file that would run code

// "ckptscope-cli: <message>" on stderr; returns kExitFailure.
int failWith(const std::string& message);
// The usage text of one subcommand (or all) on stderr; returns kExitUsage.
int usageError(const std::string& problem, const std::string& command = {});
void printUsage(const std::string& command = {});
// `doc` and a newline on stdout, through dumpJson (json_export.h): names
// from files are bytes, escaped the one documented way, never dropped.
void printJson(const nlohmann::ordered_json& doc, int indent = 1);

// Splits arguments into positionals and recognised --flags; anything else is
// a usage error (reported through `problem`).
struct Args {
  std::vector<std::string> positional;
  std::vector<std::string> flags;
  bool has(const std::string& flag) const;
};
bool parseArgs(int argc, char** argv, int first, const std::vector<std::string>& allowedFlags,
               Args& out, std::string& problem);

int runInfo(int argc, char** argv);
int runLs(int argc, char** argv);
int runVerify(int argc, char** argv);
int runDiff(int argc, char** argv);
int runScan(int argc, char** argv);
int runMetrics(int argc, char** argv);
int runRuns(int argc, char** argv);
int runPrune(int argc, char** argv);
int runConsolidate(int argc, char** argv);
int runExport(int argc, char** argv);
int runServe(int argc, char** argv);

}  // namespace ckpt::cli
