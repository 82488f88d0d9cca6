#include "ckpt/format/error.h"

#include <cstdio>

namespace ckpt {

void fail(const std::string& message) {
  throw FormatError(message);
}
void failTruncated(const std::string& message) {
  throw TruncatedError(message);
}

std::string humanBytes(uint64_t bytes) {
  static const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : (v < 100 ? "%.1f %s" : "%.0f %s"), v,
                  units[u]);
  return buf;
}

}  // namespace ckpt
