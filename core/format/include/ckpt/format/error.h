#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ckpt {

// Everything the reader rejects ends in a FormatError whose message says what
// is wrong and where (file, record, byte offset). Code that adds context
// catches it and rethrows a new one with the context in front.
class FormatError : public std::runtime_error {
 public:
  explicit FormatError(const std::string& message) : std::runtime_error(message) {}
};

// The pickle reader ran past the end of its buffer. Callers that feed a pickle
// in growing chunks (the legacy format) catch this one to read more.
class TruncatedError : public FormatError {
 public:
  using FormatError::FormatError;
};

[[noreturn]] void fail(const std::string& message);
[[noreturn]] void failTruncated(const std::string& message);

// Overflow-checked arithmetic for sizes read from files.
[[nodiscard]] inline bool mulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
[[nodiscard]] inline bool addOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

// "1.8 GB", "512 B": sizes as people read them.
std::string humanBytes(uint64_t bytes);

}  // namespace ckpt
