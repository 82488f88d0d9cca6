#pragma once
// The config fields, one table per section: MODEL.md's model config and
// RUN.json's training and data. Each row has the field's name, type,
// default, bounds, choices and help text, and what the training form shows.
// Parsing (fromJson / update), writing (toJson), the single-field checks of
// validate(), the CLI's `train --help` and the desktop form are all made
// from these rows. Rules across fields (d_model % n_heads, the batch split,
// ...) stay written by hand beside validate() and name their fields in the
// ConfigError they throw. No Qt, no LibTorch.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace ckpt {

enum class FieldType {
  Int,            // int64 (seed: uint64)
  Float,          // double; an int is taken too
  OptionalInt,    // int or None (null)
  OptionalFloat,  // float or None (null)
  Bool,
  Choice,  // one of `choices` (a string, or an enum in the choices' order)
  Text,
  Json,  // a dict or None (moe_config)
};

struct ConfigField {
  std::string name;  // the JSON key, as MODEL.md and RUN.json spell it
  FieldType type = FieldType::Int;
  bool required = false;                // no default: a config without it is refused
  nlohmann::ordered_json defaultValue;  // what an absent key means (null: None, or required)
  std::optional<double> minimum;        // validate() refuses a value below it ...
  bool exclusive = false;               // ... or, when set, not above it
  std::optional<double> below;          // and one not below this (dropout < 1)
  std::vector<std::string> choices;     // Choice: the values, in the order shown
  std::string help;                     // one line for a person
  // The desktop training form: whether it shows the field, the value it
  // starts with (a small model that trains on a CPU in minutes) and, for
  // an int spin box, its lowest value when the form is stricter than
  // validate() (log_every 0 works as 1; the form offers 1).
  bool inForm = false;
  nlohmann::ordered_json formDefault;
  std::optional<int64_t> formMinimum;

  [[nodiscard]] std::string typeText() const;     // "int", "float or None", "constant | cosine"
  [[nodiscard]] std::string defaultText() const;  // "required", "1e-05", "null", "\"run\""
  [[nodiscard]] std::string ruleText() const;     // "> 0", ">= 0", "in [0, 1)", "" without bounds
  // The help text with the rule: "Peak learning rate (> 0)" (the form's tooltip).
  [[nodiscard]] std::string describe() const;
  // The lowest value the form's spin box offers (Int fields).
  [[nodiscard]] int64_t formLowest() const;
};

struct ConfigSection {
  std::string name;  // "model", "training", "data": the key in RUN.json
  std::string title;
  std::vector<ConfigField> fields;  // in the order toJson writes them

  [[nodiscard]] const ConfigField* find(std::string_view key) const;
};

// How a section reads values and words its errors.
// Python: MODEL.md's config as the reference library's dataclass takes it:
//   required keys, exact types ('config: d_model must be an int, got str
//   ("32")'), null only for the optional fields; "d_model must be > 0".
// Run: RUN.json: an absent or null key keeps the value, 2.0 is an int
//   ("max_steps: expected an integer, got \"x\""); "max_steps: must be > 0 (got 0)".
enum class FieldStyle { Python, Run };

// One present value as the field's setter takes it (ints as int64, floats
// as double, null for None), or a ConfigError naming the field. Run style:
// never called with null.
nlohmann::ordered_json readField(const ConfigField& field, const nlohmann::ordered_json& value,
                                 FieldStyle style);
// validate()'s check of one value, as toJson writes it, against the field's
// bounds and choices: a ConfigError naming the field.
void checkField(const ConfigField& field, const nlohmann::ordered_json& value, FieldStyle style);
// "lr_schedule: expected constant or cosine, got linear", naming the field.
[[noreturn]] void refuseChoice(const ConfigField& field, const std::string& got);
// "config: missing vocab_size", naming the field.
[[noreturn]] void refuseMissing(const ConfigField& field);
// Python's name of a JSON value's type: "int", "str", "dict", "None", ...
std::string pythonTypeName(const nlohmann::ordered_json& value);
// The fields of the sections for --help: name, type, default, rule, help.
std::string describeSections(const std::vector<const ConfigSection*>& sections);

// ---- the tables' rows, bound to a config struct's members ---------------

template <class C>
struct FieldEntry {
  ConfigField field;
  std::function<nlohmann::ordered_json(const C&)> get;
  std::function<void(C&, const nlohmann::ordered_json&)> set;  // a value readField accepted

  FieldEntry& required() {
    field.required = true;
    return *this;
  }
  FieldEntry& above(double v) {
    field.minimum = v;
    field.exclusive = true;
    return *this;
  }
  FieldEntry& atLeast(double v) {
    field.minimum = v;
    return *this;
  }
  FieldEntry& below(double v) {
    field.below = v;
    return *this;
  }
  FieldEntry& help(std::string text) {
    field.help = std::move(text);
    return *this;
  }
  // Shown in the form, starting at the default, or at `start`.
  FieldEntry& form() {
    field.inForm = true;
    return *this;
  }
  FieldEntry& form(nlohmann::ordered_json start) {
    field.formDefault = std::move(start);
    return form();
  }
  FieldEntry& formMinimum(int64_t v) {
    field.formMinimum = v;
    return *this;
  }
};

namespace schema_detail {
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
constexpr FieldType typeOf() {
  if constexpr (std::is_same_v<T, bool>)
    return FieldType::Bool;
  else if constexpr (std::is_enum_v<T>)
    return FieldType::Choice;
  else if constexpr (std::is_integral_v<T>)
    return FieldType::Int;
  else if constexpr (std::is_floating_point_v<T>)
    return FieldType::Float;
  else if constexpr (std::is_same_v<T, std::optional<double>>)
    return FieldType::OptionalFloat;
  else if constexpr (IsOptional<T>::value)
    return FieldType::OptionalInt;
  else if constexpr (std::is_same_v<T, std::string>)
    return FieldType::Text;
  else
    return FieldType::Json;
}
}  // namespace schema_detail

// A row for member `member` under JSON key `name`. A string member with
// `choices` is a Choice checked by validate(); an enum member is a Choice
// whose values are its enumerators in order, refused when read.
template <class C, class T>
FieldEntry<C> field(std::string name, T C::*member, std::vector<std::string> choices = {}) {
  using json = nlohmann::ordered_json;
  FieldEntry<C> e;
  e.field.name = std::move(name);
  e.field.type = schema_detail::typeOf<T>();
  if (!choices.empty()) e.field.type = FieldType::Choice;
  e.field.choices = std::move(choices);
  if constexpr (std::is_enum_v<T>) {
    const std::vector<std::string> names = e.field.choices;
    const ConfigField spec = e.field;
    e.get = [member, names](const C& c) { return json(names.at(size_t(c.*member))); };
    e.set = [member, names, spec](C& c, const json& v) {
      const std::string s = v.get<std::string>();
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == s) return void(c.*member = T(i));
      refuseChoice(spec, s);
    };
  } else if constexpr (schema_detail::IsOptional<T>::value) {
    e.get = [member](const C& c) { return (c.*member) ? json(*(c.*member)) : json(nullptr); };
    e.set = [member](C& c, const json& v) {
      if (v.is_null())
        c.*member = std::nullopt;
      else
        c.*member = v.get<typename T::value_type>();
    };
  } else {
    e.get = [member](const C& c) { return json(c.*member); };
    e.set = [member](C& c, const json& v) { c.*member = v.get<T>(); };
  }
  return e;
}

// A section's rows: reads, writes and checks a config struct by them.
template <class C>
class FieldTable {
 public:
  FieldTable(std::string name, std::string title, FieldStyle style,
             std::vector<FieldEntry<C>> entries)
      : m_style(style), m_entries(std::move(entries)) {
    m_section.name = std::move(name);
    m_section.title = std::move(title);
    const C defaults{};
    for (FieldEntry<C>& e : m_entries) {
      if (!e.field.required) e.field.defaultValue = e.get(defaults);
      if (e.field.inForm && e.field.formDefault.is_null())
        e.field.formDefault = e.field.defaultValue;
      m_section.fields.push_back(e.field);
    }
  }

  [[nodiscard]] const ConfigSection& section() const { return m_section; }

  // Every field of the table that `j` holds. Python style: a required one
  // that is absent is refused; Run style: null keeps the value.
  void read(C& c, const nlohmann::ordered_json& j) const {
    for (const FieldEntry<C>& e : m_entries) {
      const auto it = j.find(e.field.name);
      if (it == j.end() || (m_style == FieldStyle::Run && it->is_null())) {
        if (e.field.required && m_style == FieldStyle::Python) refuseMissing(e.field);
        continue;
      }
      e.set(c, readField(e.field, *it, m_style));
    }
  }
  [[nodiscard]] nlohmann::ordered_json write(const C& c) const {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const FieldEntry<C>& e : m_entries) j[e.field.name] = e.get(c);
    return j;
  }
  // The single-field rules (bounds, choices), in the table's order.
  void check(const C& c) const {
    for (const FieldEntry<C>& e : m_entries) checkField(e.field, e.get(c), m_style);
  }

 private:
  FieldStyle m_style;
  std::vector<FieldEntry<C>> m_entries;
  ConfigSection m_section;
};

}  // namespace ckpt
