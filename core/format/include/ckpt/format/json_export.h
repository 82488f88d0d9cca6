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
// everywhere cannot make the output explode. A dict that repeats a key
// holds it as Python's dict does: where it first appears, with the value
// it was last given.
// toJson's "tree" is held as compact JSON text (a binary value that only
// dumpJson lays out): read it back with nlohmann::json::parse(dumpJson(...)).
nlohmann::ordered_json toJson(const CheckpointFile& file, size_t maxNodes = 0);
nlohmann::ordered_json valueToJson(const Value* v, size_t maxNodes = 1'000'000);
// The same encoding as compact JSON text appended to `out`, with no DOM in
// between (what `info --json` prints of a tree of millions of values).
void appendValueJson(std::string& out, const Value* v, size_t maxNodes = 1'000'000);
nlohmann::ordered_json pathToJson(const TensorPath& path);

// The text of `j`, laid out as nlohmann's dump(indent) lays it out (-1:
// compact), every string and key written by utf8::appendJsonString. Trees
// built here hold the file's bytes as they are (names from files are bytes);
// this is the one place they become JSON text, escaped one documented way
// (docs/ARCHITECTURE.md, "JSON output"). nlohmann's own dump() would throw
// on such a byte, or with a replace handler lose it silently: every JSON
// document the app prints or writes goes through here instead.
std::string dumpJson(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace ckpt
