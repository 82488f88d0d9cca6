#pragma once
// Bytes on the agent protocol's wire (docs/REMOTE.md: `skeleton`,
// `tensorBytes`): base64 (RFC 4648, with padding), a third more than the
// bytes, where JSON numbers would cost five times as much and round.

#include <string>
#include <string_view>

namespace ckpt::remote {

// Bytes sent at most per `tensorBytes` event (before base64).
inline constexpr size_t kTensorChunkBytes = size_t(1) << 20;

[[nodiscard]] std::string base64Encode(std::string_view bytes);
// The same text appended to `out` (a buffer kept across a tensor's chunks:
// no megabyte string made and dropped per chunk).
void base64Append(std::string_view bytes, std::string& out);
// Appends the decoded bytes to `out`; false (out unchanged in meaning, its
// tail undefined) when `text` is not base64.
[[nodiscard]] bool base64Decode(std::string_view text, std::string& out);

}  // namespace ckpt::remote
