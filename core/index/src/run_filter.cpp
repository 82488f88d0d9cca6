#include "ckpt/index/run_filter.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <regex>

#include "ckpt/index/run_groups.h"

namespace ckpt {

struct RunFilter::Node {
  enum class Kind { And, Or, Not, Compare };
  enum class Op { Eq, Ne, Lt, Le, Gt, Ge, Match, NoMatch };
  Kind kind = Kind::Compare;
  std::unique_ptr<Node> a, b;
  // Compare:
  std::string name;
  Op op = Op::Eq;
  HparamValue value;
  std::optional<std::regex> pattern;
};

namespace {

using Node = RunFilter::Node;

std::optional<double> readNumber(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/';
}

class Parser {
 public:
  Parser(std::string_view text, std::vector<RunFilter::Name>& names)
      : m_text(text), m_names(names) {}

  std::unique_ptr<Node> parseAll() {
    auto n = parseOr();
    skipSpace();
    if (m_pos < m_text.size())
      fail("expected 'and', 'or' or the end, found '" + std::string(m_text.substr(m_pos, 12)) +
           "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& why, size_t at = SIZE_MAX) const {
    throw FilterError("filter: " + why, (at == SIZE_MAX ? m_pos : at) + 1);
  }
  void skipSpace() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
      ++m_pos;
  }
  // A keyword (and / or / not, or its symbol) next, consumed when it is.
  bool keyword(std::string_view word, std::string_view symbol) {
    skipSpace();
    const std::string_view rest = m_text.substr(m_pos);
    if (!symbol.empty() && rest.starts_with(symbol)) {
      m_pos += symbol.size();
      return true;
    }
    if (rest.size() >= word.size() &&
        std::equal(
            word.begin(), word.end(), rest.begin(),
            [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }) &&
        (rest.size() == word.size() || !isNameChar(rest[word.size()]))) {
      m_pos += word.size();
      return true;
    }
    return false;
  }
  std::unique_ptr<Node> binary(Node::Kind kind, std::unique_ptr<Node> a, std::unique_ptr<Node> b) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  std::unique_ptr<Node> parseOr() {
    auto n = parseAnd();
    while (keyword("or", "||")) n = binary(Node::Kind::Or, std::move(n), parseAnd());
    return n;
  }
  std::unique_ptr<Node> parseAnd() {
    auto n = parseNot();
    while (keyword("and", "&&")) n = binary(Node::Kind::And, std::move(n), parseNot());
    return n;
  }
  std::unique_ptr<Node> parseNot() {
    skipSpace();
    // "!" alone is not; "!=" / "!~" never start a term.
    if (keyword("not", "") ||
        (m_pos < m_text.size() && m_text[m_pos] == '!' &&
         (m_pos + 1 >= m_text.size() || (m_text[m_pos + 1] != '=' && m_text[m_pos + 1] != '~')) &&
         ++m_pos)) {
      if (++m_depth > 100) fail("too deeply nested");
      auto n = binary(Node::Kind::Not, parseNot(), nullptr);
      --m_depth;
      return n;
    }
    return parsePrimary();
  }
  std::unique_ptr<Node> parsePrimary() {
    skipSpace();
    if (m_pos >= m_text.size()) fail("expected a comparison (NAME OP VALUE), found the end");
    if (m_text[m_pos] == '(') {
      const size_t open = m_pos;
      if (++m_depth > 100) fail("too deeply nested");
      ++m_pos;
      auto n = parseOr();
      --m_depth;
      skipSpace();
      if (m_pos >= m_text.size() || m_text[m_pos] != ')')
        fail("the '(' at position " + std::to_string(open + 1) + " is not closed");
      ++m_pos;
      return n;
    }
    return parseComparison();
  }
  std::unique_ptr<Node> parseComparison() {
    auto n = std::make_unique<Node>();
    const size_t nameAt = m_pos;
    while (m_pos < m_text.size() && isNameChar(m_text[m_pos])) ++m_pos;
    if (m_pos == nameAt)
      fail("expected a name (a hyperparameter, a metric, name, best, ...), found '" +
           std::string(m_text.substr(m_pos, 1)) + "'");
    n->name = std::string(m_text.substr(nameAt, m_pos - nameAt));
    m_names.push_back({n->name, nameAt + 1});
    skipSpace();
    static const std::pair<std::string_view, Node::Op> kOps[] = {
        {"==", Node::Op::Eq}, {"!=", Node::Op::Ne},      {"<=", Node::Op::Le},
        {">=", Node::Op::Ge}, {"!~", Node::Op::NoMatch}, {"=", Node::Op::Eq},
        {"<", Node::Op::Lt},  {">", Node::Op::Gt},       {"~", Node::Op::Match}};
    bool found = false;
    for (const auto& [text, op] : kOps)
      if (m_text.substr(m_pos).starts_with(text)) {
        n->op = op;
        m_pos += text.size();
        found = true;
        break;
      }
    if (!found)
      fail("expected an operator (== != < <= > >= ~ !~) after '" + n->name + "', found " +
           (m_pos < m_text.size() ? "'" + std::string(m_text.substr(m_pos, 1)) + "'"
                                  : std::string("the end")));
    skipSpace();
    const size_t valueAt = m_pos;
    if (m_pos >= m_text.size()) fail("expected a value after the operator, found the end");
    std::string value;
    bool quoted = false;
    if (m_text[m_pos] == '"' || m_text[m_pos] == '\'') {
      const char q = m_text[m_pos++];
      const size_t close = m_text.find(q, m_pos);
      if (close == std::string_view::npos) fail("the quote is not closed", valueAt);
      value = std::string(m_text.substr(m_pos, close - m_pos));
      m_pos = close + 1;
      quoted = true;
    } else {
      while (
          m_pos < m_text.size() &&
          (isNameChar(m_text[m_pos]) || m_text[m_pos] == '-' || m_text[m_pos] == '+' ||
           (n->op == Node::Op::Match || n->op == Node::Op::NoMatch
                ? !std::isspace(static_cast<unsigned char>(m_text[m_pos])) && m_text[m_pos] != ')'
                : false)))
        ++m_pos;
      value = std::string(m_text.substr(valueAt, m_pos - valueAt));
      if (value.empty())
        fail("expected a value (a number, a word or a quoted string), found '" +
             std::string(m_text.substr(m_pos, 1)) + "'");
    }
    if (const auto number = quoted ? std::nullopt : readNumber(value))
      n->value = numberHparam(*number);
    else
      n->value = textHparam(value);
    n->value.text = value;  // a pattern is matched as typed
    if (n->op == Node::Op::Match || n->op == Node::Op::NoMatch) {
      try {
        n->pattern.emplace(value, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        fail(std::string("not a regular expression: ") + e.what(), valueAt);
      }
    } else if (!n->value.isNumber && !quoted && readNumber(value.substr(0, 1)) &&
               value.find_first_not_of("0123456789.eE+-") == std::string::npos) {
      fail("'" + value + "' is not a number", valueAt);
    }
    return n;
  }

  std::string_view m_text;
  std::vector<RunFilter::Name>& m_names;
  size_t m_pos = 0;
  int m_depth = 0;
};

bool compare(const Node& n, const HparamValue& field) {
  using Op = Node::Op;
  if (n.op == Op::Match || n.op == Op::NoMatch)
    return std::regex_search(field.text, *n.pattern) == (n.op == Op::Match);
  int order = 0;  // field vs value: -1, 0, 1
  const std::optional<double> fieldNumber =
      field.isNumber ? std::optional<double>(field.number) : readNumber(field.text);
  if (n.value.isNumber) {
    if (!fieldNumber || std::isnan(*fieldNumber)) return false;
    order = *fieldNumber < n.value.number ? -1 : *fieldNumber > n.value.number ? 1 : 0;
  } else {
    order = naturalLess(field.text, n.value.text)   ? -1
            : naturalLess(n.value.text, field.text) ? 1
                                                    : 0;
  }
  switch (n.op) {
    case Op::Eq:
      return order == 0;
    case Op::Ne:
      return order != 0;
    case Op::Lt:
      return order < 0;
    case Op::Le:
      return order <= 0;
    case Op::Gt:
      return order > 0;
    case Op::Ge:
      return order >= 0;
    default:
      return false;
  }
}

bool evaluate(const Node& n, const RunFilter::Lookup& lookup) {
  switch (n.kind) {
    case Node::Kind::And:
      return evaluate(*n.a, lookup) && evaluate(*n.b, lookup);
    case Node::Kind::Or:
      return evaluate(*n.a, lookup) || evaluate(*n.b, lookup);
    case Node::Kind::Not:
      return !evaluate(*n.a, lookup);
    case Node::Kind::Compare: {
      const std::optional<HparamValue> field = lookup(n.name);
      return field && compare(n, *field);
    }
  }
  return false;
}

}  // namespace

RunFilter::RunFilter() = default;
RunFilter::~RunFilter() = default;
RunFilter::RunFilter(RunFilter&&) noexcept = default;
RunFilter& RunFilter::operator=(RunFilter&&) noexcept = default;

RunFilter RunFilter::parse(std::string_view text) {
  RunFilter f;
  bool blank = true;
  for (const char c : text) blank = blank && std::isspace(static_cast<unsigned char>(c));
  if (blank) return f;
  Parser p(text, f.m_names);
  f.m_root = p.parseAll();
  return f;
}

bool RunFilter::matches(const Lookup& lookup) const {
  return !m_root || evaluate(*m_root, lookup);
}

}  // namespace ckpt
