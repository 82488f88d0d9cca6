#pragma once
// The agent protocol's constants (docs/REMOTE.md), shared by
// `ckptscope-cli serve --stdio` and its clients.

#include <cstddef>

namespace ckpt::remote {

// Raised when a message changes meaning or a method a client relies on
// goes away; a client refuses an agent older than it needs, naming both.
inline constexpr int kProtocolVersion = 1;
// The longest line either side accepts: requests are small; responses are
// bounded by what they may hold (a slice, a metrics refresh).
inline constexpr size_t kMaxRequestBytes = size_t(1) << 20;
inline constexpr size_t kMaxResponseBytes = size_t(1) << 30;
// Elements one `slice` request may return.
inline constexpr size_t kMaxSliceElements = size_t(1) << 16;

}  // namespace ckpt::remote
