#include "ckpt/format/tensor_info.h"

#include <charconv>
#include <cstring>

#include "ckpt/format/error.h"

namespace ckpt {

std::string joinPath(const TensorPath& path, size_t from) {
  // Assembled on the stack when it fits: then the result is one allocation
  // (or none) and one copy.
  char buf[256];
  size_t n = 0;
  bool spilled = false;  // `out` holds the name: it outgrew buf
  std::string out;
  auto put = [&](const char* p, size_t len) {
    if (!spilled && n + len <= sizeof buf) {
      std::memcpy(buf + n, p, len);
      n += len;
      return;
    }
    if (!spilled) out.assign(buf, n);
    spilled = true;
    out.append(p, len);
  };
  for (size_t i = from; i < path.size(); ++i) {
    if (n > 0 || !out.empty()) put(".", 1);  // after anything written
    if (const auto* s = std::get_if<std::string>(&path[i])) {
      put(s->data(), s->size());
    } else {
      char digits[24];
      const auto r = std::to_chars(digits, digits + sizeof digits, std::get<int64_t>(path[i]));
      put(digits, size_t(r.ptr - digits));
    }
  }
  return spilled ? out : std::string(buf, n);
}

uint64_t StorageInfo::nbytes() const {
  uint64_t n = 0;
  if (mulOverflows(numel, uint64_t(dtypeSize(dtype)), &n)) return UINT64_MAX;
  return n;
}

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape)
    if (mulOverflows(n, uint64_t(d), &n)) return UINT64_MAX;
  return n;
}

uint64_t TensorInfo::nbytes() const { return dtypeBytesFor(dtype, numel()); }

bool TensorInfo::isContiguous() const {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (stride[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string TensorInfo::shapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> stride(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    stride[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return stride;
}

}  // namespace ckpt
