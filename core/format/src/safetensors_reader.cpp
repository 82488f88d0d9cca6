// safetensors: u64 LE header length, a JSON header, then raw little-endian data.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"

namespace ckpt {

void CheckpointFile::loadSafetensors(const ReadOptions& options) {
  using K = Value::Kind;
  m_format = FileFormat::Safetensors;
  const uint64_t size = m_file->size();
  uint8_t lenBytes[8];
  m_file->read(0, 8, lenBytes);
  uint64_t headerLen = 0;
  for (int i = 0; i < 8; ++i) headerLen |= uint64_t(lenBytes[i]) << (8 * i);
  if (headerLen > options.maxHeaderBytes)
    fail("safetensors header claims " + std::to_string(headerLen) + " bytes, over the limit of " +
         std::to_string(options.maxHeaderBytes));
  if (headerLen > size - 8)
    failTruncated("truncated: safetensors header claims " + std::to_string(headerLen) +
                  " bytes, the file has " + std::to_string(size - 8) + " after the length");
  const std::vector<uint8_t> header = m_file->read(8, headerLen);
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(header.begin(), header.end());
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("safetensors header is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) fail("safetensors header is not a JSON object");
  const uint64_t dataStart = 8 + headerLen;
  const uint64_t dataSize = size - dataStart;

  Value* root = m_arena.make(K::Dict);
  auto str = [this](const std::string& s) {
    Value* v = m_arena.make(K::Str);
    v->text = m_arena.copy(s);
    return v;
  };
  for (const auto& [name, spec] : doc.items()) {
    if (name == "__metadata__") {
      if (!spec.is_object()) fail("safetensors __metadata__ is not an object");
      Value* meta = m_arena.make(K::Dict);
      for (const auto& [k, v] : spec.items())
        m_arena.append(meta->entries,
                       ValuePair{str(k), str(v.is_string() ? v.get<std::string>() : v.dump())});
      m_arena.append(root->entries, ValuePair{str(name), meta});
      continue;
    }
    const std::string where = "safetensors tensor '" + name.substr(0, 200) + "'";
    if (!spec.is_object()) fail(where + ": entry is not an object");
    const auto dt = spec.find("dtype");
    const auto shape = spec.find("shape");
    const auto offsets = spec.find("data_offsets");
    if (dt == spec.end() || !dt->is_string()) fail(where + ": missing dtype");
    const auto dtype = dtypeFromSafetensors(dt->get<std::string>());
    if (!dtype) fail(where + ": unknown dtype " + dt->get<std::string>());
    if (shape == spec.end() || !shape->is_array() || shape->size() > 64)
      fail(where + ": missing or bad shape");
    if (offsets == spec.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      fail(where + ": missing or bad data_offsets");
    TensorInfo info;
    info.dtype = *dtype;
    uint64_t numel = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned()) fail(where + ": shape holds a non-integer or negative value");
      const uint64_t x = d.get<uint64_t>();
      if (x > uint64_t(INT64_MAX) || mulOverflows(numel, x, &numel))
        fail(where + ": shape overflows");
      info.shape.push_back(int64_t(x));
    }
    info.stride = contiguousStrides(info.shape);
    const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    uint64_t nbytes = 0;
    if (end < begin)
      fail(where + ": data_offsets end " + std::to_string(end) + " is before begin " +
           std::to_string(begin));
    if (end > dataSize)
      failTruncated("truncated: " + where + " data ends at " + std::to_string(end) + ", past the " +
                    std::to_string(dataSize) + " data bytes");
    if (mulOverflows(numel, uint64_t(dtypeSize(*dtype)), &nbytes) || nbytes != end - begin)
      fail(where + ": shape needs " + std::to_string(nbytes) + " bytes, data_offsets give " +
           std::to_string(end - begin));
    StorageInfo s;
    s.key = name;
    s.dtype = *dtype;
    s.numel = numel;
    s.location = "cpu";
    s.dataOffset = dataStart + begin;
    s.dataOffsetKnown = true;
    info.storage = int(m_table.storages.size());
    m_table.storages.push_back(std::move(s));
    Value* t = m_arena.make(K::Tensor);
    t->index = int64_t(m_table.tensors.size());
    m_table.tensors.push_back(std::move(info));
    m_arena.append(root->entries, ValuePair{str(name), t});
  }
  // Tensors may not share bytes (the safetensors format forbids it).
  std::vector<std::pair<uint64_t, const StorageInfo*>> spans;
  for (const StorageInfo& s : m_table.storages) spans.emplace_back(s.dataOffset, &s);
  std::sort(spans.begin(), spans.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < spans.size(); ++i) {
    const StorageInfo& prev = *spans[i - 1].second;
    if (prev.dataOffset + prev.nbytes() > spans[i].first)
      fail("safetensors tensors '" + prev.key.substr(0, 100) + "' and '" +
           spans[i].second->key.substr(0, 100) + "' overlap");
  }
  m_root = root;
}

}  // namespace ckpt
