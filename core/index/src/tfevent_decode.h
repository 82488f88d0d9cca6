#pragma once
// Decoding one record of a TensorBoard event file (internal; tfevents.h).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "ckpt/index/tfevents.h"

namespace ckpt::detail {

// Heterogeneous lookup: a tag from a record is found without a string made.
struct TagHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Decodes Event records into a handler's calls. Remembers each tag's plugin
// (its first metadata names it; later values of the tag carry none): a
// rank-0 tensor of another plugin than "scalars" is not a scalar.
class EventDecoder {
 public:
  explicit EventDecoder(TfEventsHandler& handler);
  ~EventDecoder();
  EventDecoder(const EventDecoder&) = delete;
  EventDecoder& operator=(const EventDecoder&) = delete;
  // Reports the record's START and scalars; false (with `why` and the byte
  // `at` in the record) when it is no Event: then nothing is reported.
  bool decode(const uint8_t* data, size_t size, const char** why, size_t* at);

 private:
  struct State;
  std::unique_ptr<State> m;
};

}  // namespace ckpt::detail
