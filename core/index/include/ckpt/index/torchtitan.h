#pragma once
// torchtitan's runs as torchtitan/components/checkpoint.py and
// metrics.py leave them: a dump folder holding `checkpoint/step-<N>/`, one
// torch.distributed.checkpoint (DCP) folder per save (read as any DCP
// folder, sharded.h), and `tb/<YYYYmmdd-HHMM>/` TensorBoard event files
// (tfevents.h kRunEventFolders). The dump folder is the run. No Qt.

#include <optional>
#include <string>
#include <string_view>

namespace ckpt {

inline constexpr std::string_view kTorchtitanId = "torchtitan";

// For <dump>/checkpoint/step-<N> (a folder): <dump>; nothing otherwise.
[[nodiscard]] std::optional<std::string> torchtitanRunOf(const std::string& checkpointFolder);

}  // namespace ckpt
