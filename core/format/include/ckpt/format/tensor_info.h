#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ckpt/format/dtype.h"

namespace ckpt {

// One step of a path from the root of the value tree: a string key, or an
// integer key / list index.
using PathElement = std::variant<std::string, int64_t>;
using TensorPath = std::vector<PathElement>;

// "model_state.blocks.0.attn.q_proj.weight"; integer steps print as numbers.
std::string joinPath(const TensorPath& path, size_t from = 0);

// A storage record: the bytes that one or more tensors view.
struct StorageInfo {
  std::string key;       // "0", "1", ... as in the file
  DType dtype = DType::UInt8;  // element type of the storage class
  uint64_t numel = 0;    // elements of `dtype` the file claims
  std::string location;  // "cpu", "cuda:0", ...
  int64_t zipEntry = -1;  // index into the zip's entries once found
  std::string record;     // the zip record name, set only when it is missing or short (for messages)
  uint64_t dataOffset = 0;  // absolute byte offset, when known (legacy, safetensors)
  bool dataOffsetKnown = false;
  int useCount = 0;      // tensors viewing it
  std::string error;     // why its bytes cannot be read, "" when fine

  [[nodiscard]] uint64_t nbytes() const;
};

// A lazy tensor: everything the pickle says about it, no element bytes.
struct TensorInfo {
  TensorPath path;  // first place in the tree where it occurs
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;  // in elements
  int64_t storageOffset = 0;    // in elements of `dtype`
  int storage = -1;             // index into storages(); -1 for meta tensors
  bool requiresGrad = false;
  bool isParameter = false;
  bool isMeta = false;
  std::string subclass;          // tensor subclass named by _rebuild_from_type_v2
  std::string qscheme;           // quantized tensors: "per_tensor_affine", ...
  double qscale = 0.0;           // per-tensor quantisation
  int64_t qzeroPoint = 0;
  std::string error;  // why its bytes cannot be read ("" when the extent is fine)

  [[nodiscard]] uint64_t numel() const;
  [[nodiscard]] uint64_t nbytes() const;  // numel x element size
  [[nodiscard]] bool isContiguous() const;
  [[nodiscard]] std::string shapeString() const;  // "[768, 3072]"
};

// What a reader builds while decoding: tensors in the order the pickle
// creates them, and the storages they view.
struct TensorTable {
  std::vector<TensorInfo> tensors;
  std::vector<StorageInfo> storages;
};

// Contiguous (row-major) strides for a shape.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape);

}  // namespace ckpt
