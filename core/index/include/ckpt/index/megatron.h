#pragma once
// Megatron-LM's checkpoints as megatron/training/checkpointing.py saves them
// (ckpt_format "torch"): a save folder holding one folder per save,
// `iter_<iteration, 7 digits>/` (`release/` for a released model), with one
// folder per model-parallel rank, `mp_rank_<tensor rank, 2 digits>` plus
// `_<pipeline rank, 3 digits>` under pipeline parallelism (and
// `_<expert rank, 3 digits>` under expert parallelism), each holding
// `model_optim_rng.pt` (a torch.save of args, checkpoint_version,
// iteration, model, optimizer, opt_param_scheduler, rng_state) and, with
// the distributed optimizer, `distrib_optim.pt`; and
// `latest_checkpointed_iteration.txt`, the newest iteration or `release`.
// One save folder is one checkpoint of the run in the save folder, its
// ranks' files its parts. In the torch_dist format (megatron/core/
// dist_checkpointing) a save folder holds instead a DCP checkpoint
// (.metadata, __<rank>_0.distcp: the tensors by their sharded keys),
// metadata.json (the CheckpointingConfig: {"sharded_backend": "torch_dist",
// ...}) and common.pt (rank 0's torch.save of args, iteration, ...). No Qt,
// no LibTorch.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ckpt/format/megatron_names.h"
#include "ckpt/index/scanner.h"

namespace ckpt {

inline constexpr std::string_view kMegatronId = "megatron";

// megatronIterationOf and isMegatronRankName (the folders' names) are in
// ckpt/format/megatron_names.h: the safety verdict reads them too.

// An iter_<N>/ or release/ folder with a rank folder holding
// model_optim_rng.pt, or a torch_dist save (metadata.json naming a
// sharded_backend, and common.pt).
[[nodiscard]] bool isMegatronCheckpointFolder(const std::string& dir);

// A torch_dist save's common.pt (its args: the run's hyperparameters), from
// the entry describeMegatronCheckpoint made; "" for any other entry.
[[nodiscard]] std::string megatronCommonFile(const CheckpointEntry& e);

// The checkpoint an iter_<N>/ or release/ folder is: `path` the first
// rank's model_optim_rng.pt (read as any checkpoint file: its `iteration`
// is the step, else the folder's number), every other rank's
// model_optim_rng.pt and each distrib_optim.pt its parts (`file`
// relative to the folder: "mp_rank_01/model_optim_rng.pt"), `ranks` the
// rank folders; release/ is the run's final. A torch_dist save: `path`
// the folder (its DCP checkpoint), common.pt and metadata.json its parts,
// the step common.pt's `iteration`. `relative`: the folder as the
// listing names it. Never throws: a folder without a readable rank file
// comes back with `error` set.
[[nodiscard]] CheckpointEntry describeMegatronCheckpoint(const std::string& dir,
                                                         const std::string& relative);

// What Inspect opens for a checkpoint: a Megatron save in the torch format
// made of several model-parallel ranks is its folder (the ranks' slices
// joined into whole tensors: ShardLayout::Megatron), anything else its `path`.
[[nodiscard]] std::string inspectPathOf(const CheckpointEntry& e);

// latest_checkpointed_iteration.txt in `saveDir`: the iteration it names,
// or -1 for `release`; nothing when there is no such file or it holds
// neither (Megatron then refuses to load: so does this, quietly).
[[nodiscard]] std::optional<int64_t> readMegatronTracker(const std::string& saveDir);

// Marks the checkpoint the tracker names `latest` (and the run's trainer).
void markMegatronLatest(RunEntry& run);

}  // namespace ckpt
