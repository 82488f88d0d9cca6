#pragma once
// What the metric readers share (internal): the names metrics go by and how
// much of a growing text file is read at a time.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace ckpt::detail {

// metrics.jsonl and logs are read this much at a time; a longer line is skipped.
inline constexpr uint64_t kJsonlBlock = 4ull << 20;
inline constexpr size_t kMaxJsonlLine = 64u << 20;

// One name per metric whatever the trainer calls it ("learning_rate" is "lr").
inline std::string canonicalMetric(std::string key) {
  if (key == "learning_rate") return "lr";
  return key;
}

// A growing text file from `offset` on, read in blocks (a file of gigabytes
// is never held whole): lines(text, at) for each run of complete lines
// (`text` ends with '\n'; `at`: its byte in the file), tooLong(at) once for
// each line longer than kMaxJsonlLine, which is skipped. What the file
// holds now is read; lines appended meanwhile wait for the next call, from
// `*end` (just past the last complete line). A file shorter than `offset`
// was rewritten: read from the start.
template <typename Lines, typename TooLong>
void forEachLineBlock(const std::string& path, uint64_t offset, uint64_t* end, const Lines& lines,
                      const TooLong& tooLong) {
  if (end) *end = offset;
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(std::max<std::streamoff>(0, in.tellg()));
  if (size < offset) offset = 0;
  in.seekg(std::streamoff(offset));
  uint64_t remaining = size - offset;
  uint64_t bufferStart = offset;  // file offset of buffer[0]
  std::string buffer;
  bool skipping = false;  // inside a line too long to hold
  while (remaining > 0) {
    const size_t old = buffer.size();
    buffer.resize(old + size_t(std::min<uint64_t>(remaining, kJsonlBlock)));
    in.read(buffer.data() + old, std::streamsize(buffer.size() - old));
    const size_t got = size_t(in.gcount());
    buffer.resize(old + got);
    if (got == 0) break;
    remaining -= got;
    size_t lineStart = 0;
    const size_t lastNl = buffer.rfind('\n');
    if (lastNl != std::string::npos && lastNl >= old) {
      if (skipping) {
        // The rest of a too-long line: it ends at the first newline.
        skipping = false;
        lineStart = buffer.find('\n', old) + 1;
      }
      if (lastNl + 1 > lineStart)
        lines(std::string_view(buffer.data() + lineStart, lastNl + 1 - lineStart),
              bufferStart + lineStart);
      lineStart = lastNl + 1;
    }
    buffer.erase(0, lineStart);
    bufferStart += lineStart;
    if (buffer.size() > kMaxJsonlLine) {
      if (!skipping) tooLong(bufferStart);
      skipping = true;
      bufferStart += buffer.size();
      buffer.clear();
    }
  }
  if (end) *end = bufferStart;
}

}  // namespace ckpt::detail
