#pragma once
// The names Megatron-LM gives its save folders (megatron/training/
// checkpointing.py, ckpt_format "torch"): `iter_<iteration, 7 digits>/` or
// `release/`, holding `mp_rank_<tensor rank, 2 digits>[_<pipeline rank, 3
// digits>[_<expert rank, 3 digits>]]/` folders with `model_optim_rng.pt`
// and, with the distributed optimizer, `distrib_optim.pt`. Here so that the
// index (runs, parts) and the safety verdict (the Megatron profile) read a
// layout by one rule. In the torch_dist format a save folder holds a DCP
// checkpoint, metadata.json and common.pt instead of rank folders.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

// "iter_0000100" -> 100; anything else (release/ too) -> nothing.
[[nodiscard]] std::optional<int64_t> megatronIterationOf(std::string_view folderName);

// "mp_rank_00", "mp_rank_01_002", "mp_rank_00_000_001": a rank's folder.
[[nodiscard]] bool isMegatronRankName(std::string_view folderName);

// A rank's file where Megatron writes it: model_optim_rng.pt or
// distrib_optim.pt in a rank folder of an iter_<N>/ or release/ folder.
// By the names alone (no file is opened).
[[nodiscard]] bool isMegatronRankFile(const std::string& path);

// The rank folders of an iter_<N>/ or release/ folder that hold
// model_optim_rng.pt ("mp_rank_00", "mp_rank_01", ...), ordered by pipeline
// rank, then tensor rank, then expert rank; empty for any other folder.
[[nodiscard]] std::vector<std::string> megatronRankFolders(const std::string& saveDir);

// "mp_rank_01_002" -> tensor rank 1, pipeline rank 2, expert rank -1 (none).
struct MegatronRank {
  int tensor = 0, pipeline = 0, expert = -1;
};
[[nodiscard]] std::optional<MegatronRank> parseMegatronRank(std::string_view folderName);

// The common state of a save in the torch_dist format (megatron/core/
// dist_checkpointing, ckpt_format "torch_dist"): common.pt in an iter_<N>/
// or release/ folder, beside the DCP files. By the names alone.
[[nodiscard]] bool isMegatronCommonFile(const std::string& path);

}  // namespace ckpt
