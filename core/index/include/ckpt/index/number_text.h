#pragma once
// Numbers as text for exports of a million points (`ckptscope-cli metrics`):
// the same characters std::to_chars writes, faster for the numbers training
// logs hold. No Qt, no LibTorch.

#include <cstdint>

namespace ckpt {

// Room writeShortest / writeInteger need at most.
inline constexpr int kNumberTextMax = 32;

// What std::to_chars(out, out + kNumberTextMax, value) writes (the shortest
// text that reads back exactly, fixed or scientific, whichever is shorter):
// a value of at most 15 significant digits within [1e-5, 1e15) is written
// directly (a few dozen instructions instead of several hundred), anything
// else by std::to_chars. Returns the end of the text.
char* writeShortest(char* out, double value);

// What std::to_chars(out, out + kNumberTextMax, value) writes for an integer.
char* writeInteger(char* out, int64_t value);

}  // namespace ckpt
