#pragma once
// W&B's JSON values as curves and summary entries (internal): what the
// .wandb reader (wandb_store.cpp) and the older SDKs' wandb-history.jsonl
// reader (wandb_history.cpp) share, so that one logged row gives the same
// series whichever file holds it.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace ckpt::detail {

using WandbNumberSink = std::function<void(const std::string& name, double value)>;

// Every number under `v`, named `prefix.key.key` (a dict logged under one
// key, as W&B's UI names its parts); a media object (an Image, Histogram,
// Table: a `_type` member), a string, a boolean or null is no number. `v`
// may hold NaN / Infinity marked by markNonFinite (python_json.h).
void flattenWandbNumbers(const nlohmann::json& v, const std::string& prefix,
                         const WandbNumberSink& emit, int depth = 0);

// A row's keys that are the SDK's own, never a curve: `_step` (the step),
// `_timestamp` (the wall time), `_runtime`, `_wandb` and what is under it.
[[nodiscard]] bool isWandbInternalKey(const std::string& key);

}  // namespace ckpt::detail
