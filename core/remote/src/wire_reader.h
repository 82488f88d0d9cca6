#pragma once
// Reading an agent's answer back (core/remote's *_wire.cpp and
// core/remote_analysis's): every
// field by its place, a wrong one named ("scan: runs[1].checkpoints[3].step
// is not an integer").

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ckpt::remote {

using Json = nlohmann::ordered_json;

class Reader {
 public:
  Reader(const Json& j, std::string where, std::string what)
      : m_j(j), m_where(std::move(where)), m_what(std::move(what)) {}
  // A reader of `j`, which must be a JSON object ("describe: tensors[3] is
  // not an object" otherwise).
  [[nodiscard]] static Reader object(const Json& j, std::string where, std::string what) {
    if (!j.is_object()) throw std::runtime_error(what + ": " + where + " is not an object");
    return Reader(j, std::move(where), std::move(what));
  }

  [[nodiscard]] bool has(const char* name) const {
    return m_j.contains(name) && !m_j[name].is_null();
  }
  [[nodiscard]] const Json& at(const char* name) const {
    if (!m_j.is_object() || !m_j.contains(name)) fail(name, "is missing");
    return m_j[name];
  }
  [[nodiscard]] std::string text(const char* name, bool required = false) const {
    if (!required && !has(name)) return {};
    const Json& v = at(name);
    if (!v.is_string()) fail(name, "is not a string");
    return v.get<std::string>();
  }
  [[nodiscard]] std::optional<double> real(const char* name) const {
    if (!has(name)) return std::nullopt;
    const Json& v = at(name);
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const std::string& t = v.get_ref<const std::string&>();
      if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (t == "inf") return std::numeric_limits<double>::infinity();
      if (t == "-inf") return -std::numeric_limits<double>::infinity();
    }
    fail(name, "is not a number");
  }
  template <typename T>
  [[nodiscard]] T integer(const char* name, T fallback = 0) const {
    if (!has(name)) return fallback;
    const Json& v = at(name);
    if (!v.is_number_integer()) fail(name, "is not an integer");
    return v.get<T>();
  }
  [[nodiscard]] bool flag(const char* name) const {
    if (!has(name)) return false;
    const Json& v = at(name);
    if (!v.is_boolean()) fail(name, "is not true or false");
    return v.get<bool>();
  }
  [[nodiscard]] const Json& array(const char* name, bool required = false) const {
    static const Json empty = Json::array();
    if (!required && !has(name)) return empty;
    const Json& v = at(name);
    if (!v.is_array()) fail(name, "is not an array");
    return v;
  }
  [[nodiscard]] std::vector<std::string> texts(const char* name) const {
    std::vector<std::string> out;
    const Json& a = array(name);
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) fail(name, "holds something that is not a string");
      out.push_back(a[i].get<std::string>());
    }
    return out;
  }
  [[nodiscard]] std::string where(const char* name) const { return m_where + "." + name; }
  [[noreturn]] void fail(const char* name, const char* what) const {
    throw std::runtime_error(m_what + ": " + where(name) + " " + what);
  }

 private:
  const Json& m_j;
  std::string m_where;
  std::string m_what;  // the answer's name, first in every message ("scan")
};

}  // namespace ckpt::remote
