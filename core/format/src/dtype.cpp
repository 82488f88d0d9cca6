#include "ckpt/format/dtype.h"

#include <array>

namespace ckpt {
namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  int size;
  std::string_view storageClass;  // torch.<X>Storage, without "Storage"
  std::string_view safetensors;
};

// One table for every mapping so the names cannot drift apart.
constexpr std::array<DTypeRow, 25> kRows = {{
    {DType::Float64, "float64", 8, "Double", "F64"},
    {DType::Float32, "float32", 4, "Float", "F32"},
    {DType::Float16, "float16", 2, "Half", "F16"},
    {DType::BFloat16, "bfloat16", 2, "BFloat16", "BF16"},
    {DType::Int64, "int64", 8, "Long", "I64"},
    {DType::Int32, "int32", 4, "Int", "I32"},
    {DType::Int16, "int16", 2, "Short", "I16"},
    {DType::Int8, "int8", 1, "Char", "I8"},
    {DType::UInt8, "uint8", 1, "Byte", "U8"},
    {DType::Bool, "bool", 1, "Bool", "BOOL"},
    {DType::Complex32, "complex32", 4, "ComplexHalf", "C32"},
    {DType::Complex64, "complex64", 8, "ComplexFloat", "C64"},
    {DType::Complex128, "complex128", 16, "ComplexDouble", "C128"},
    {DType::QInt8, "qint8", 1, "QInt8", ""},
    {DType::QUInt8, "quint8", 1, "QUInt8", ""},
    {DType::QInt32, "qint32", 4, "QInt32", ""},
    {DType::QUInt4x2, "quint4x2", 1, "QUInt4x2", ""},
    {DType::QUInt2x4, "quint2x4", 1, "QUInt2x4", ""},
    {DType::Float8E4M3FN, "float8_e4m3fn", 1, "", "F8_E4M3"},
    {DType::Float8E5M2, "float8_e5m2", 1, "", "F8_E5M2"},
    {DType::Float8E4M3FNUZ, "float8_e4m3fnuz", 1, "", ""},
    {DType::Float8E5M2FNUZ, "float8_e5m2fnuz", 1, "", ""},
    {DType::UInt16, "uint16", 2, "", "U16"},
    {DType::UInt32, "uint32", 4, "", "U32"},
    {DType::UInt64, "uint64", 8, "", "U64"},
}};

const DTypeRow& row(DType t) {
  return kRows[static_cast<size_t>(t)];
}

}  // namespace

std::string_view dtypeName(DType t) {
  return row(t).name;
}
int dtypeSize(DType t) {
  return row(t).size;
}

int dtypeElementsPerByte(DType t) {
  if (t == DType::QUInt4x2) return 2;
  if (t == DType::QUInt2x4) return 4;
  return 1;
}

uint64_t dtypeBytesFor(DType t, uint64_t elements) {
  const uint64_t per = uint64_t(dtypeElementsPerByte(t));
  if (per > 1) return elements / per + (elements % per ? 1 : 0);
  uint64_t n = 0;
  if (__builtin_mul_overflow(elements, uint64_t(dtypeSize(t)), &n)) return UINT64_MAX;
  return n;
}

bool dtypeIsComplex(DType t) {
  return t == DType::Complex32 || t == DType::Complex64 || t == DType::Complex128;
}
bool dtypeIsQuantized(DType t) {
  return t == DType::QInt8 || t == DType::QUInt8 || t == DType::QInt32 || t == DType::QUInt4x2 ||
         t == DType::QUInt2x4;
}
bool dtypeIsFloatingPoint(DType t) {
  switch (t) {
    case DType::Float64:
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2FNUZ:
      return true;
    default:
      return false;
  }
}

std::optional<DType> dtypeFromStorageClass(std::string_view cls) {
  if (cls == "UntypedStorage" || cls == "_UntypedStorage") return DType::UInt8;
  constexpr std::string_view suffix = "Storage";
  if (cls.size() <= suffix.size() || cls.substr(cls.size() - suffix.size()) != suffix) return {};
  std::string_view stem = cls.substr(0, cls.size() - suffix.size());
  for (const auto& r : kRows)
    if (!r.storageClass.empty() && r.storageClass == stem) return r.type;
  return {};
}

std::optional<DType> dtypeFromTorchName(std::string_view name) {
  if (name.substr(0, 6) == "torch.") name.remove_prefix(6);
  for (const auto& r : kRows)
    if (r.name == name) return r.type;
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr Alias aliases[] = {
      {"double", DType::Float64},   {"float", DType::Float32},      {"half", DType::Float16},
      {"long", DType::Int64},       {"int", DType::Int32},          {"short", DType::Int16},
      {"cfloat", DType::Complex64}, {"cdouble", DType::Complex128}, {"chalf", DType::Complex32},
  };
  for (const auto& a : aliases)
    if (a.name == name) return a.type;
  return {};
}

std::optional<DType> dtypeFromSafetensors(std::string_view name) {
  for (const auto& r : kRows)
    if (!r.safetensors.empty() && r.safetensors == name) return r.type;
  return {};
}

}  // namespace ckpt
