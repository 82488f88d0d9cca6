#include "ckpt/config/config_schema.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "ckpt/config/model_config.h"
#include "ckpt/format/value.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

// A bound as a person writes it: 0, 1, 0.5.
std::string boundText(double d) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

[[noreturn]] void refuse(const ConfigField& f, std::string message) {
  throw ConfigError(std::move(message), {f.name});
}

// Python style: 'config: d_model must be an int, got str ("32")'.
[[noreturn]] void wrongType(const ConfigField& f, std::string_view want, const json& got) {
  refuse(f, "config: " + f.name + " must be " + std::string(want) + ", got " + pythonTypeName(got) +
                " (" + got.dump() + ")");
}

json readPython(const ConfigField& f, const json& v) {
  const bool optional = f.type == FieldType::OptionalInt || f.type == FieldType::OptionalFloat ||
                        f.type == FieldType::Json;
  if (v.is_null() && optional) return nullptr;
  switch (f.type) {
    case FieldType::Int:
    case FieldType::OptionalInt:
      // Booleans are not integers here (Python's dataclass would take True
      // as 1, but no checkpoint writes that).
      if (!v.is_number_integer()) wrongType(f, "an int", v);
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
        refuse(f, "config: " + f.name + " is out of range (" + v.dump() + ")");
      return v.get<int64_t>();
    case FieldType::Float:
    case FieldType::OptionalFloat:
      if (!v.is_number()) wrongType(f, "a float", v);  // Python takes an int for a float field
      return v.get<double>();
    case FieldType::Bool:
      if (!v.is_boolean()) wrongType(f, "a bool", v);
      return v;
    case FieldType::Json:
      if (!v.is_object()) wrongType(f, "a dict or None", v);
      return v;
    case FieldType::Choice:
    case FieldType::Text:
      if (!v.is_string()) wrongType(f, "a str", v);
      return v;
  }
  return v;
}

json readRun(const ConfigField& f, const json& v) {
  switch (f.type) {
    case FieldType::Int:
    case FieldType::OptionalInt:
      if (v.is_number_integer()) return v.get<int64_t>();
      if (v.is_number_float() && v.get<double>() == double(int64_t(v.get<double>())))
        return int64_t(v.get<double>());
      refuse(f, f.name + ": expected an integer, got " + v.dump());
    case FieldType::Float:
    case FieldType::OptionalFloat:
      if (v.is_number()) return v.get<double>();
      refuse(f, f.name + ": expected a number, got " + v.dump());
    case FieldType::Bool:
      if (v.is_boolean()) return v;
      refuse(f, f.name + ": expected true or false, got " + v.dump());
    case FieldType::Choice:
    case FieldType::Text:
      if (v.is_string()) return v;
      refuse(f, f.name + ": expected a string, got " + v.dump());
    case FieldType::Json:
      return v;
  }
  return v;
}

}  // namespace

std::string pythonTypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "int";
    case json::value_t::number_float:
      return "float";
    case json::value_t::string:
      return "str";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "dict";
    default:
      return "unknown";
  }
}

json readField(const ConfigField& f, const json& v, FieldStyle style) {
  return style == FieldStyle::Python ? readPython(f, v) : readRun(f, v);
}

void refuseChoice(const ConfigField& f, const std::string& got) {
  std::string list;
  for (size_t i = 0; i < f.choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == f.choices.size() ? " or " : ", ") + f.choices[i];
  refuse(f, f.name + ": expected " + list + ", got " + got);
}

void refuseMissing(const ConfigField& f) {
  refuse(f, "config: missing " + f.name);
}

void checkField(const ConfigField& f, const json& v, FieldStyle style) {
  if (v.is_null()) return;  // None: nothing to check
  if (!f.choices.empty() && v.is_string()) {
    const std::string s = v.get<std::string>();
    bool known = false;
    for (const std::string& c : f.choices) known |= (c == s);
    if (!known) refuseChoice(f, s);
  }
  if (!f.minimum || !v.is_number()) return;
  const double x = v.get<double>();
  const double lo = *f.minimum;
  // Written so that NaN fails every check.
  const bool ok = f.below ? (x >= lo && x < *f.below) : f.exclusive ? x > lo : x >= lo;
  if (ok) return;
  const bool python = style == FieldStyle::Python;
  if (f.below) {
    const std::string range = "must be in [" + boundText(lo) + ", " + boundText(*f.below) + ")";
    refuse(f, python ? f.name + " (" + formatPythonFloat(x) + ") " + range : f.name + ": " + range);
  }
  const std::string rule = "must be " + std::string(f.exclusive ? "> " : ">= ") + boundText(lo);
  if (python) refuse(f, f.name + " " + rule);
  // RUN.json's count fields say what they got: "max_steps: must be > 0 (got 0)".
  const bool sayValue = f.type == FieldType::Int && f.exclusive;
  refuse(f, f.name + ": " + rule + (sayValue ? " (got " + v.dump() + ")" : ""));
}

std::string ConfigField::typeText() const {
  switch (type) {
    case FieldType::Int:
      return "int";
    case FieldType::Float:
      return "float";
    case FieldType::OptionalInt:
      return "int or null";
    case FieldType::OptionalFloat:
      return "float or null";
    case FieldType::Bool:
      return "bool";
    case FieldType::Choice: {
      std::string s;
      for (const std::string& c : choices) s += (s.empty() ? "" : " | ") + c;
      return s;
    }
    case FieldType::Text:
      return "text";
    case FieldType::Json:
      return "object or null";
  }
  return {};
}

std::string ConfigField::defaultText() const {
  return required ? "required" : defaultValue.dump();
}

std::string ConfigField::ruleText() const {
  if (!minimum) return {};
  if (below) return "in [" + boundText(*minimum) + ", " + boundText(*below) + ")";
  return (exclusive ? "> " : ">= ") + boundText(*minimum);
}

std::string ConfigField::describe() const {
  const std::string rule = ruleText();
  return rule.empty() ? help : help + " (" + rule + ")";
}

int64_t ConfigField::formLowest() const {
  if (formMinimum) return *formMinimum;
  if (!minimum) return 0;
  const auto lo = int64_t(std::ceil(*minimum));
  return exclusive && double(lo) == *minimum ? lo + 1 : lo;
}

const ConfigField* ConfigSection::find(std::string_view key) const {
  for (const ConfigField& f : fields)
    if (f.name == key) return &f;
  return nullptr;
}

std::string describeSections(const std::vector<const ConfigSection*>& sections) {
  std::string out;
  for (const ConfigSection* s : sections) {
    out += "\n" + s->name + " (" + s->title + "):\n";
    for (const ConfigField& f : s->fields) {
      out += "  " + f.name + ": " + f.typeText() + ", " +
             (f.required ? std::string("required") : "default " + f.defaultText());
      if (const std::string rule = f.ruleText(); !rule.empty()) out += ", " + rule;
      out += "\n      " + f.help + "\n";
    }
  }
  return out;
}

}  // namespace ckpt
