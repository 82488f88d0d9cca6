#pragma once
// The runs table's filter: `lr == 3e-4`, `val_loss < 2.5`, `name ~ sft`,
// combined with and / or / not and parentheses (`and` binds tighter).
//   NAME OP VALUE   OP: == (or =) != < <= > >= ~ (regex search) !~
//   VALUE: a number (3e-4), a quoted string ('a b' or "a b"), or a bare word.
// A number compares by value with a number (3e-4 == 0.0003) or with text
// that reads as one; text compares as text (< in natural order: seed2 <
// seed10). A run without NAME matches no comparison on it (`not` inverts).
// A bad expression throws FilterError naming the 1-based position. No Qt.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/hparams.h"

namespace ckpt {

class FilterError : public std::runtime_error {
 public:
  FilterError(const std::string& message, size_t position)
      : std::runtime_error(message + " at position " + std::to_string(position)),
        m_position(position) {}
  [[nodiscard]] size_t position() const { return m_position; }  // 1-based, in characters

 private:
  size_t m_position;
};

class RunFilter {
 public:
  // The value a run has for a name, or nothing.
  using Lookup = std::function<std::optional<HparamValue>(std::string_view name)>;

  // Throws FilterError. An empty text matches every run.
  static RunFilter parse(std::string_view text);
  RunFilter();
  ~RunFilter();
  RunFilter(RunFilter&&) noexcept;
  RunFilter& operator=(RunFilter&&) noexcept;

  [[nodiscard]] bool matches(const Lookup& lookup) const;
  // The names compared, with where each stands (1-based), to tell a name
  // no run has ("unknown name").
  struct Name {
    std::string name;
    size_t position = 0;
  };
  [[nodiscard]] const std::vector<Name>& names() const { return m_names; }

  struct Node;

 private:
  std::unique_ptr<Node> m_root;
  std::vector<Name> m_names;
};

}  // namespace ckpt
