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
// a value within [1e-5, 1e15) whose shortest decimal is short (its digits
// below 2^50) is written directly (about 300 instructions against
// std::to_chars's 600 for the benchmark's losses, callgrind), anything else
// by std::to_chars. Returns the end of the text.
char* writeShortest(char* out, double value);

// What std::to_chars(out, out + kNumberTextMax, value) writes for an integer
// (std::to_chars itself: for the tests and exports to use one pair).
char* writeInteger(char* out, int64_t value);

}  // namespace ckpt
