#include "ckpt/index/local_minute.h"

#include <ctime>

namespace ckpt {

const std::string* LocalMinuteText::of(int64_t secs) {
  if (holds(secs)) return &m_text;
  const time_t t = static_cast<time_t>(secs);
  struct tm local {};
  if (!localtime_r(&t, &local)) {
    m_start = 1;
    m_end = 0;
    return nullptr;
  }
  char buf[64];
  m_text.assign(buf, std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &local));
  // The same minute on the clock, unless the zone's offset changes in it
  // (a leap second's 60 ends it a second later: kept to 60 s after its start).
  m_start = secs - local.tm_sec;
  m_end = m_start + 60;
  const time_t last = static_cast<time_t>(m_end - 1);
  struct tm end {};
  if (local.tm_sec > 59 || !localtime_r(&last, &end) || end.tm_gmtoff != local.tm_gmtoff ||
      end.tm_min != local.tm_min)
    m_end = secs + 1;  // this second only
  return &m_text;
}

}  // namespace ckpt
