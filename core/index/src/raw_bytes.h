#pragma once
// Numbers as their bytes in host order, and back (internal: the metrics
// cache's files, which never leave the machine that wrote them).

#include <cstring>
#include <string>
#include <string_view>

namespace ckpt::detail {

template <typename T>
void putRaw(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// False, `in` untouched, when fewer bytes are left than a T takes.
template <typename T>
bool getRaw(std::string_view& in, T& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}

}  // namespace ckpt::detail
