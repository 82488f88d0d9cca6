#include "ckpt/format/tensor_info.h"

#include <charconv>
#include <cstring>

#include "ckpt/format/error.h"

namespace ckpt {

std::string joinPath(const TensorPath& path, size_t from) {
  if (from == 0) return std::string(path.name());
  std::string out;
  for (size_t i = from; i < path.size(); ++i) {
    if (!out.empty()) out += '.';  // after anything written, as TensorPath::name
    out += path.key(i);
  }
  return out;
}

int64_t TensorPath::index(size_t i) const {
  const std::string_view digits = key(i);
  int64_t v = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return v;
}

void TensorPath::pushIndex(int64_t index) {
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, index);
  append(digits, size_t(r.ptr - digits), true);
}

void TensorPath::appendGrowing(const char* p, size_t n, bool isIndex) {
  if (n >= (size_t(1) << 31)) throw std::length_error("TensorPath: key too long");
  const std::string copy(p, n);  // `p` may lie in the text that growing frees
  const size_t need = size_t(m_textSize) + (m_textSize ? 1 : 0) + n;
  if (need > (m_heapText ? m_textCapacity : kInlineText)) growText(need);
  if (m_size == (m_heapElements ? m_elementCapacity : kInlineElements)) growElements(m_size + 1);
  append(copy.data(), n, isIndex);
}

void TensorPath::growText(size_t need) {
  if (need > UINT32_MAX / 2) throw std::length_error("TensorPath: name too long");
  const size_t cap = std::max<size_t>(2 * need, 2 * kInlineText);
  char* p = new char[cap];
  if (m_textSize) std::memcpy(p, text(), m_textSize);
  delete[] m_heapText;
  m_heapText = p;
  m_textCapacity = uint32_t(cap);
}

void TensorPath::growElements(size_t need) {
  const size_t cap = std::max(need, 2 * std::max<size_t>(m_size, kInlineElements));
  if (cap > UINT32_MAX / 2) throw std::length_error("TensorPath: too many elements");
  auto* p = new Element[cap];
  if (m_size) std::memcpy(p, elements(), m_size * sizeof(Element));
  delete[] m_heapElements;
  m_heapElements = p;
  m_elementCapacity = uint32_t(cap);
}

void TensorPath::copyFrom(const TensorPath& o) {
  // This is empty (cleared or new); its heap blocks, if any, are reused.
  if (o.m_textSize > (m_heapText ? m_textCapacity : kInlineText)) growText(o.m_textSize);
  if (o.m_size > (m_heapElements ? m_elementCapacity : kInlineElements)) growElements(o.m_size);
  if (o.m_textSize) std::memcpy(m_heapText ? m_heapText : m_inlineText, o.text(), o.m_textSize);
  if (o.m_size)
    std::memcpy(m_heapElements ? m_heapElements : m_inlineElements, o.elements(),
                o.m_size * sizeof(Element));
  m_textSize = o.m_textSize;
  m_size = o.m_size;
}

void TensorPath::take(TensorPath& o) noexcept {
  // This holds no heap block.
  m_textSize = o.m_textSize;
  m_size = o.m_size;
  if (o.m_heapText) {
    m_heapText = o.m_heapText;
    m_textCapacity = o.m_textCapacity;
    o.m_heapText = nullptr;
    o.m_textCapacity = 0;
  } else if (m_textSize) {
    std::memcpy(m_inlineText, o.m_inlineText, m_textSize);
  }
  if (o.m_heapElements) {
    m_heapElements = o.m_heapElements;
    m_elementCapacity = o.m_elementCapacity;
    o.m_heapElements = nullptr;
    o.m_elementCapacity = 0;
  } else if (m_size) {
    std::memcpy(m_inlineElements, o.m_inlineElements, m_size * sizeof(Element));
  }
  o.m_textSize = o.m_size = 0;
}

void TensorPath::release() noexcept {
  delete[] m_heapText;
  delete[] m_heapElements;
  m_heapText = nullptr;
  m_heapElements = nullptr;
  m_textCapacity = m_elementCapacity = 0;
  m_textSize = m_size = 0;
}

std::vector<PathElement> TensorPath::vec() const {
  std::vector<PathElement> v;
  v.reserve(m_size);
  for (size_t i = 0; i < m_size; ++i) v.push_back((*this)[i]);
  return v;
}

bool operator==(const TensorPath& a, const TensorPath& b) {
  // The text and the elements' spans and kinds determine the elements.
  if (a.m_size != b.m_size || a.name() != b.name()) return false;
  for (size_t i = 0; i < a.m_size; ++i) {
    const TensorPath::Element &x = a.elements()[i], &y = b.elements()[i];
    if (x.offset != y.offset || x.length != y.length || x.index != y.index) return false;
  }
  return true;
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

uint64_t TensorInfo::nbytes() const {
  return dtypeBytesFor(dtype, numel());
}

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

StorageInfo storageOf(const TensorInfo& t, size_t index) {
  StorageInfo s;
  s.key = std::to_string(index);
  s.dtype = t.dtype;
  s.numel = t.numel();
  s.location = "cpu";
  return s;
}

}  // namespace ckpt
