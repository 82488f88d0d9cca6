#pragma once
// Structural comparison of the reader's JSON against the JSON that Python
// wrote from torch.load's result (the independent truth).

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ckpt::test {

using json = nlohmann::ordered_json;

// Returns "" when equal, else where and how they differ. Opaque objects
// ({"$object": name}) are compared by class name only: Python cannot say
// what arguments pickle recorded without re-pickling.
inline std::string compareJson(const json& expected, const json& actual,
                               const std::string& where = "$") {
  auto show = [](const json& j) {
    std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() > 120 ? s.substr(0, 120) + "..." : s;
  };
  auto mismatch = [&] { return where + ": expected " + show(expected) + ", got " + show(actual); };
  if (expected.is_object() && expected.contains("$object")) {
    if (!actual.is_object() || !actual.contains("$object") ||
        actual["$object"] != expected["$object"])
      return mismatch();
    return {};
  }
  if (expected.is_number_float() || actual.is_number_float()) {
    if (!expected.is_number_float() || !actual.is_number_float())
      return mismatch() + " (int vs float)";
    const double a = expected.get<double>(), b = actual.get<double>();
    if (!(a == b) || std::signbit(a) != std::signbit(b)) return mismatch();
    return {};
  }
  if (expected.is_number_integer()) {
    if (!actual.is_number_integer()) return mismatch();
    if (expected.is_number_unsigned() && actual.is_number_unsigned())
      return expected.get<uint64_t>() == actual.get<uint64_t>() ? std::string() : mismatch();
    return expected.get<int64_t>() == actual.get<int64_t>() ? std::string() : mismatch();
  }
  if (expected.type() != actual.type()) return mismatch() + " (type)";
  if (expected.is_array()) {
    if (expected.size() != actual.size())
      return where + ": expected " + std::to_string(expected.size()) + " elements, got " +
             std::to_string(actual.size());
    for (size_t i = 0; i < expected.size(); ++i)
      if (auto d = compareJson(expected[i], actual[i], where + "[" + std::to_string(i) + "]");
          !d.empty())
        return d;
    return {};
  }
  if (expected.is_object()) {
    if (expected.size() != actual.size()) return mismatch() + " (key count)";
    auto ia = actual.begin();
    for (auto ie = expected.begin(); ie != expected.end(); ++ie, ++ia) {
      if (ie.key() != ia.key())
        return where + ": key order: expected '" + ie.key() + "', got '" + ia.key() + "'";
      if (auto d = compareJson(ie.value(), ia.value(), where + "." + ie.key()); !d.empty())
        return d;
    }
    return {};
  }
  return expected == actual ? std::string() : mismatch();
}

inline json readJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

}  // namespace ckpt::test
