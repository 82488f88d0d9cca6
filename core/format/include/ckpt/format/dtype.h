#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt {

// Element types as torch names them. Storage classes, rebuild arguments and
// safetensors dtype strings all map onto this one list.
enum class DType : uint8_t {
  Float64,
  Float32,
  Float16,
  BFloat16,
  Int64,
  Int32,
  Int16,
  Int8,
  UInt8,
  Bool,
  Complex32,
  Complex64,
  Complex128,
  QInt8,
  QUInt8,
  QInt32,
  QUInt4x2,
  QUInt2x4,
  Float8E4M3FN,
  Float8E5M2,
  Float8E4M3FNUZ,
  Float8E5M2FNUZ,
  UInt16,
  UInt32,
  UInt64,
};

// "float32", "bfloat16", "int64", "bool", ... (torch's names without "torch.").
[[nodiscard]] std::string_view dtypeName(DType t);
// Bytes per element; quint4x2 / quint2x4 pack several values in one byte.
[[nodiscard]] int dtypeSize(DType t);
// quint4x2 packs 2 elements in a byte, quint2x4 packs 4 (low bits first);
// every other type 1.
[[nodiscard]] int dtypeElementsPerByte(DType t);
// Bytes that `elements` consecutive elements occupy.
[[nodiscard]] uint64_t dtypeBytesFor(DType t, uint64_t elements);
[[nodiscard]] bool dtypeIsComplex(DType t);
[[nodiscard]] bool dtypeIsQuantized(DType t);
[[nodiscard]] bool dtypeIsFloatingPoint(DType t);

// "FloatStorage" -> Float32; "UntypedStorage" / "ByteStorage" -> UInt8.
// Takes the class name without its module.
[[nodiscard]] std::optional<DType> dtypeFromStorageClass(std::string_view cls);
// "float32" or "torch.float32"; also torch's aliases ("float", "half", "long").
[[nodiscard]] std::optional<DType> dtypeFromTorchName(std::string_view name);
// safetensors: "F32", "BF16", "I64", "BOOL", ...
[[nodiscard]] std::optional<DType> dtypeFromSafetensors(std::string_view name);

}  // namespace ckpt
