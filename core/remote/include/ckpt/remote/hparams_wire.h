#pragma once
// Runs' hyperparameters on the wire (docs/REMOTE.md, `hparams`): what
// readHparams finds for each run on the host, so that remote runs group
// and fill the runs table as local ones do.
//
//   {"runs": [{"run": NAME, "path": DIR, "hparams": {KEY: VALUE, ...},
//              "problems": ["path: why", ...]}, ...]}
//
// VALUE is {"number": N, "text": T} for a number (N as on the metrics wire:
// "nan", "inf", "-inf" where JSON has no number) or {"text": T}.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/index/hparams.h"

namespace ckpt::remote {

struct RunHparams {
  std::string run;   // RunEntry::name
  std::string path;  // the run's directory, as the host names it
  Hparams hparams;
  std::vector<std::string> problems;  // files a source could not read
};

nlohmann::ordered_json hparamsToWire(const std::vector<RunHparams>& runs);

// Reads the answer back; throws std::runtime_error naming the field that
// is wrong ("hparams: runs[1].hparams.lr.number is not a number").
std::vector<RunHparams> hparamsFromWire(const nlohmann::ordered_json& answer);

}  // namespace ckpt::remote
