#pragma once
// A time as the local clock's minute, "YYYY-MM-DD HH:MM", for listings of
// thousands of files written within minutes of each other: the text of the
// last minute asked is kept and given again for every second of that
// minute, so localtime_r (a lock and a look at the time zone each call)
// and the formatting run once a minute, not once a file. Used by
// `ckptscope-cli ls` and the browser's Modified column. No Qt, no LibTorch.

#include <cstdint>
#include <string>

namespace ckpt {

class LocalMinuteText {
 public:
  // The text of `secs` (seconds since the epoch) in the local time zone;
  // nullptr when localtime_r cannot say (a time out of its range). Valid
  // until the next call. One object per thread.
  [[nodiscard]] const std::string* of(int64_t secs);
  // Whether of(secs) gives the kept text (nothing is worked out again).
  [[nodiscard]] bool holds(int64_t secs) const { return secs >= m_start && secs < m_end; }

 private:
  int64_t m_start = 1, m_end = 0;  // [start, end): the seconds the kept text is right for
  std::string m_text;
};

}  // namespace ckpt
