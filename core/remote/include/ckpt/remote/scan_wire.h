#pragma once
// A folder's scan on the wire (docs/REMOTE.md, `scan`): `ls --json`'s
// document, and with `full` every other field of the scan too (the paths
// as the host opened them, the metadata's run name and numbers, tensor
// and optimizer bytes, the safety scan's offenders, a checkpoint folder, its
// parts' paths, each run's root), so a client rebuilds the ScanResult the
// host's scanDirectory returned and lists it exactly as it lists a local one.

#include <nlohmann/json.hpp>

#include "ckpt/index/scanner.h"

namespace ckpt::remote {

// `ls --json`'s document (full = false), or that with the other fields.
nlohmann::ordered_json scanToWire(const ScanResult& result, bool full);

// Reads either form back. What a plain `ls --json` document leaves out is
// left empty (a checkpoint's path is then its run's path joined with its
// file name). Throws std::runtime_error naming the field that is missing
// or wrong ("scan: runs[2].checkpoints[0].size is not a number").
ScanResult scanFromWire(const nlohmann::ordered_json& document);

}  // namespace ckpt::remote
