#pragma once

#include <nlohmann/json.hpp>

#include "ckpt/format/checkpoint_file.h"

namespace ckpt {

// The `info --json` document:
// {"file", "format", "tensors": [{"path", "dtype", "shape", "stride",
//  "storage_offset", "storage", "nbytes", "requires_grad"}], "tree": VALUE}
// VALUE encodes None/bool/str/int/float as JSON, big ints {"$int"}, NaN and
// infinities {"$float"}, bytes {"$bytes": hex}, tuples {"$tuple"}, sets
// {"$set"}, string-keyed dicts as objects, other dicts {"$dict": [[k, v]]},
// tensors {"$tensor": i}, opaque objects {"$object", "args", "state"}, bare
// globals {"$global"}. Shared references are written out again; a cycle is
// cut with {"$cycle": true}; output is capped at `maxNodes` values (0: four
// times the values the file holds, at least a million), past which a
// {"$truncated": true} stands in: a small pickle that shares one list
// everywhere cannot make the output explode.
nlohmann::ordered_json toJson(const CheckpointFile& file, size_t maxNodes = 0);
nlohmann::ordered_json valueToJson(const Value* v, size_t maxNodes = 1'000'000);
nlohmann::ordered_json pathToJson(const TensorPath& path);

}  // namespace ckpt
