// The block YAML of yaml.safe_dump and yaml.v3 Marshal (block_yaml.h).
#include "block_yaml.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

#include "ckpt/format/utf8.h"

namespace ckpt::detail {
namespace {

// Deeper than a config ever nests: a hostile file cannot make the reader
// recurse without end.
constexpr int kMaxDepth = 64;

struct Line {
  int indent = 0;    // leading spaces
  std::string text;  // the rest, trailing blanks removed
  bool blank = false;
  int number = 0;  // 1-based, for errors
};

bool isSequenceItem(std::string_view t) {
  return t == "-" || t.starts_with("- ");
}

std::string_view trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// A double-quoted scalar's text (without its quotes), escapes resolved.
std::string unescapeDouble(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    auto hex = [&](size_t digits) {
      uint32_t v = 0;
      if (i + digits >= s.size()) return;  // too few digits: left out
      const auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 1 + digits, v, 16);
      if (ec == std::errc() && p == s.data() + i + 1 + digits) {
        utf8::append(out, char32_t(v));
        i += digits;
      }
    };
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
        out += '\0';
        break;
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      default:
        out += c;  // \" \\ \/ and the rest as themselves
    }
  }
  return out;
}

// A single-quoted scalar's text (without its quotes): '' is one quote.
std::string unescapeSingle(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '\'' && i + 1 < s.size() && s[i + 1] == '\'') ++i;
  }
  return out;
}

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// A plain scalar as YAML 1.1's resolver (PyYAML's safe_load) reads it; an
// exponent without a dot ("1e-05", as yaml.v3 writes floats) is a float too.
nlohmann::json plainScalar(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  for (std::string_view t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (s == t) return true;
  for (std::string_view f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (s == f) return false;
  std::string_view body = s;
  const bool negative = body.front() == '-';
  if (body.front() == '-' || body.front() == '+') body.remove_prefix(1);
  for (std::string_view inf : {".inf", ".Inf", ".INF"})
    if (body == inf)
      return negative ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
  for (std::string_view nan : {".nan", ".NaN", ".NAN"})
    if (s == nan) return std::numeric_limits<double>::quiet_NaN();
  // Digits, '_' separators (YAML 1.1), at most one dot, an exponent.
  std::string digits(s.substr(0, s.size() - body.size()));
  bool dot = false, exponent = false, any = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (isDigit(c)) {
      any = true;
      digits += c;
    } else if (c == '_' && !exponent) {
      continue;
    } else if (c == '.' && !dot && !exponent) {
      dot = true;
      digits += c;
    } else if ((c == 'e' || c == 'E') && any && !exponent) {
      exponent = true;
      digits += c;
      if (i + 1 < body.size() && (body[i + 1] == '-' || body[i + 1] == '+')) digits += body[++i];
      if (i + 1 == body.size()) return std::string(s);
    } else {
      return std::string(s);
    }
  }
  if (!any) return std::string(s);
  if (!dot && !exponent) {
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc() && p == digits.data() + digits.size()) return v;
  }
  double d = 0;
  const char* begin = digits.data() + (digits.front() == '+' ? 1 : 0);
  const auto [p, ec] = std::from_chars(begin, digits.data() + digits.size(), d);
  if (ec == std::errc() && p == digits.data() + digits.size()) return d;
  return std::string(s);
}

nlohmann::json scalar(std::string_view raw) {
  const std::string_view s = trimmed(raw);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
    return unescapeDouble(s.substr(1, s.size() - 2));
  if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'')
    return unescapeSingle(s.substr(1, s.size() - 2));
  if (s == "[]") return nlohmann::json::array();
  if (s == "{}") return nlohmann::json::object();
  // A flow sequence of scalars ("[1, 2]", as yaml.v3 may write a short list).
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']' &&
      s.find_first_of("[]{}\"'", 1) == s.size() - 1) {
    nlohmann::json out = nlohmann::json::array();
    std::string_view rest = s.substr(1, s.size() - 2);
    while (true) {
      const size_t comma = rest.find(',');
      out.push_back(scalar(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    return out;
  }
  return plainScalar(s);
}

class Parser {
 public:
  explicit Parser(std::string_view text) {
    int number = 0;
    for (size_t pos = 0; pos <= text.size();) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      std::string_view raw = text.substr(pos, nl - pos);
      pos = nl + 1;
      ++number;
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      Line l;
      l.number = number;
      while (size_t(l.indent) < raw.size() && raw[size_t(l.indent)] == ' ') ++l.indent;
      const std::string_view rest = raw.substr(size_t(l.indent));
      const size_t end = rest.find_last_not_of(" \t");
      l.text = end == std::string_view::npos ? std::string() : std::string(rest.substr(0, end + 1));
      // Full-line comments and document markers carry nothing.
      l.blank = l.text.empty() || l.text.front() == '#' ||
                (l.indent == 0 && (l.text == "---" || l.text == "..."));
      m_lines.push_back(std::move(l));
      if (nl == text.size()) break;
    }
  }

  nlohmann::json document(std::string* error) {
    size_t i = 0;
    nlohmann::json out = node(i, 0, 0);
    skipBlank(i);
    if (m_error.empty() && i < m_lines.size())
      fail(m_lines[i], "indented less than the block it is in");
    if (error) *error = m_error;
    return out;
  }

 private:
  std::vector<Line> m_lines;
  std::string m_error;

  void fail(const Line& l, const std::string& why) {
    if (m_error.empty()) m_error = "line " + std::to_string(l.number) + ": " + why;
  }
  void skipBlank(size_t& i) const {
    while (i < m_lines.size() && m_lines[i].blank) ++i;
  }

  // The node that starts at line i, indented at least minIndent.
  nlohmann::json node(size_t& i, int minIndent, int depth) {
    skipBlank(i);
    if (i >= m_lines.size() || m_lines[i].indent < minIndent || !m_error.empty()) return nullptr;
    if (depth > kMaxDepth) {
      fail(m_lines[i], "nested deeper than " + std::to_string(kMaxDepth) + " levels");
      return nullptr;
    }
    const Line& l = m_lines[i];
    if (isSequenceItem(l.text)) return sequence(i, l.indent, depth);
    std::string key, rest;
    if (splitKey(l.text, key, rest)) return mapping(i, l.indent, depth);
    // A scalar on its own lines (a sequence item's folded text).
    const int indent = l.indent;
    std::string text = l.text;
    for (++i; i < m_lines.size() && !m_lines[i].blank && m_lines[i].indent >= indent; ++i)
      text += " " + m_lines[i].text;
    return scalar(text);
  }

  nlohmann::json sequence(size_t& i, int indent, int depth) {
    nlohmann::json out = nlohmann::json::array();
    for (skipBlank(i); m_error.empty() && i < m_lines.size() && m_lines[i].indent == indent &&
                       isSequenceItem(m_lines[i].text);
         skipBlank(i)) {
      Line& l = m_lines[i];
      const std::string content = l.text.substr(1);
      const size_t start = content.find_first_not_of(' ');
      if (start == std::string::npos) {
        ++i;
        out.push_back(node(i, indent + 1, depth + 1));
        continue;
      }
      // "- a: 1" opens a mapping (or "- - 1" a sequence) at the column of
      // its content: the item's line is read again as if it began there.
      l.indent = indent + 1 + int(start);
      l.text = content.substr(start);
      out.push_back(node(i, l.indent, depth + 1));
    }
    return out;
  }

  nlohmann::json mapping(size_t& i, int indent, int depth) {
    nlohmann::json out = nlohmann::json::object();
    for (skipBlank(i); m_error.empty() && i < m_lines.size() && m_lines[i].indent == indent &&
                       !isSequenceItem(m_lines[i].text);
         skipBlank(i)) {
      const Line& l = m_lines[i];
      std::string key, rest;
      if (!splitKey(l.text, key, rest)) {
        fail(l, "not a `key: value` line");
        break;
      }
      ++i;
      if (rest.empty()) {
        size_t j = i;
        skipBlank(j);
        if (j < m_lines.size() && m_lines[j].indent > indent)
          out[key] = node(i, indent + 1, depth + 1);
        else if (j < m_lines.size() && m_lines[j].indent == indent &&
                 isSequenceItem(m_lines[j].text))
          out[key] = sequence(i, indent, depth + 1);  // PyYAML: the items at the key's column
        else
          out[key] = nullptr;
      } else if (rest.front() == '|' || rest.front() == '>') {
        out[key] = blockScalar(i, indent, rest);
      } else if ((rest.front() == '\'' || rest.front() == '"') && !closedQuote(rest)) {
        out[key] = scalar(quotedLines(i, rest));
      } else {
        // A long plain scalar folded onto more-indented lines.
        for (; i < m_lines.size() && !m_lines[i].blank && m_lines[i].indent > indent; ++i)
          rest += " " + m_lines[i].text;
        out[key] = scalar(rest);
      }
    }
    return out;
  }

  // Whether a quoted scalar's text (from its opening quote) holds its
  // closing quote.
  static bool closedQuote(std::string_view t) {
    const char q = t.front();
    for (size_t k = 1; k < t.size(); ++k) {
      if (q == '"' && t[k] == '\\') {
        ++k;
      } else if (t[k] == q) {
        if (q == '\'' && k + 1 < t.size() && t[k + 1] == '\'') {
          ++k;
          continue;
        }
        return true;
      }
    }
    return false;
  }

  // A quoted scalar over several lines, as PyYAML folds a long or multi-line
  // string: a line break is a space, each empty line a newline; in double
  // quotes a line ending in '\' joins the next without a space.
  std::string quotedLines(size_t& i, std::string text) {
    size_t newlines = 0;
    for (; i < m_lines.size() && !closedQuote(text); ++i) {
      const Line& l = m_lines[i];
      if (l.text.empty()) {
        ++newlines;
        continue;
      }
      if (newlines) {
        text += std::string(newlines, '\n');
      } else if (text.front() == '"' && text.back() == '\\') {
        text.pop_back();
      } else {
        text += ' ';
      }
      newlines = 0;
      text += l.text;
    }
    return text;
  }

  // `|` keeps the line breaks, `>` folds them into spaces (an empty line a
  // newline); the text is the lines indented deeper than the key, less their
  // common indentation. Its end as the indicator says: one newline (clip),
  // none (`-`, yaml.v3's `|-`), or every trailing one (`+`).
  std::string blockScalar(size_t& i, int indent, std::string_view header) {
    const bool folded = header.front() == '>';
    const char chomp = header.find('-') != std::string_view::npos   ? '-'
                       : header.find('+') != std::string_view::npos ? '+'
                                                                    : ' ';
    std::vector<const Line*> lines;
    int common = -1;
    for (; i < m_lines.size() && (m_lines[i].text.empty() || m_lines[i].indent > indent); ++i) {
      lines.push_back(&m_lines[i]);
      if (!m_lines[i].text.empty() && (common < 0 || m_lines[i].indent < common))
        common = m_lines[i].indent;
    }
    size_t trailing = 0;
    while (!lines.empty() && lines.back()->text.empty()) {
      lines.pop_back();
      ++trailing;
    }
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
      const bool empty = lines[k]->text.empty();
      if (k && (!folded || empty))
        out += '\n';
      else if (k && !lines[k - 1]->text.empty())
        out += ' ';  // folded: a break between two lines of text is a space
      if (!empty) out += std::string(size_t(lines[k]->indent - common), ' ') + lines[k]->text;
    }
    if (lines.empty() || chomp == '-') return out;
    return out + "\n" + (chomp == '+' ? std::string(trailing, '\n') : std::string());
  }

  // "key: value" / "key:" (plain, or in quotes as yaml.v3 writes "1":).
  static bool splitKey(std::string_view t, std::string& key, std::string& rest) {
    if (t.empty() || t.starts_with("? ")) return false;
    size_t colon = std::string_view::npos;
    if (t.front() == '"' || t.front() == '\'') {
      const char q = t.front();
      size_t k = 1;
      for (; k < t.size(); ++k) {
        if (q == '"' && t[k] == '\\') {
          ++k;
          continue;
        }
        if (t[k] == q) {
          if (q == '\'' && k + 1 < t.size() && t[k + 1] == '\'') {
            ++k;
            continue;
          }
          break;
        }
      }
      if (k >= t.size() || k + 1 >= t.size() || t[k + 1] != ':') return false;
      key = q == '"' ? unescapeDouble(t.substr(1, k - 1)) : unescapeSingle(t.substr(1, k - 1));
      colon = k + 1;
    } else {
      for (size_t k = t.find(':'); k != std::string_view::npos; k = t.find(':', k + 1))
        if (k + 1 == t.size() || t[k + 1] == ' ') {
          colon = k;
          break;
        }
      if (colon == std::string_view::npos || colon == 0) return false;
      key = std::string(trimmed(t.substr(0, colon)));
    }
    if (colon + 1 < t.size() && t[colon + 1] != ' ') return false;
    rest = std::string(trimmed(t.substr(colon + 1)));
    return true;
  }
};

}  // namespace

nlohmann::json parseBlockYaml(std::string_view text, std::string* error) {
  return Parser(text).document(error);
}

}  // namespace ckpt::detail
