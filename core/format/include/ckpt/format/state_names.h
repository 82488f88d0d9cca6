#pragma once
// State-dict key normalisation, in one place: the checkpoint view, the
// parameter tree, diff and the trainer's resume / fine-tune / score mapping
// all name tensors through it.
//
// A model saved without unwrapping carries its wrappers' attribute names in
// every key: DistributedDataParallel / DataParallel add "module.",
// torch.compile adds "_orig_mod.". They nest in either order
// ("module._orig_mod.blocks.0..." when a compiled model is wrapped in DDP,
// "_orig_mod.module..." when a DDP model is compiled), sometimes twice
// (DataParallel inside DDP).

#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

struct StateNames {
  std::vector<std::string> names;  // one per key, in order
  bool ddp = false;                // a "module." wrapper was stripped
  bool compiled = false;           // an "_orig_mod." wrapper was stripped
};

// The rules:
//  * a leading chain of "module." / "_orig_mod." components that EVERY key
//    shares is stripped (a wrapper prefixes all keys; a model whose own
//    submodule happens to be called "module" next to others keeps its names);
//  * then any key still starting with "_orig_mod." loses it (nobody names a
//    submodule that, and some tools strip it from part of a dict only);
//  * a key never becomes empty: a key that is nothing but prefixes is kept.
// At most 8 levels are stripped.
[[nodiscard]] StateNames normaliseStateNames(const std::vector<std::string_view>& keys);
[[nodiscard]] StateNames normaliseStateNames(const std::vector<std::string>& keys);

// What StateNames says, for a summary: "saved from a DDP-wrapped / compiled
// model (module._orig_mod. stripped)"; "" when nothing was stripped.
[[nodiscard]] std::string describeWrapping(bool ddp, bool compiled);

}  // namespace ckpt
