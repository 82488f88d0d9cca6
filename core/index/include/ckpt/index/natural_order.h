#pragma once
// Names as people count: "seed2" before "seed10", "checkpoint-500" before
// "checkpoint-1000". The order of runs wherever they are listed (scanner,
// `ckptscope-cli ls`, the browser). No Qt, no LibTorch.

#include <string_view>

namespace ckpt {

// Compares runs of digits by their value (leading zeros ignored; at equal
// values the shorter run first, so "7" < "07"), everything else byte by
// byte. A total order: names that differ never compare equal. Returns <0, 0
// or >0 as strcmp does.
[[nodiscard]] int naturalCompare(std::string_view a, std::string_view b);

[[nodiscard]] inline bool naturalLess(std::string_view a, std::string_view b) {
  return naturalCompare(a, b) < 0;
}

}  // namespace ckpt
