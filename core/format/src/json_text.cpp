#include "ckpt/format/json_text.h"

#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ckpt/format/utf8.h"

namespace ckpt {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 512;

class Parser {
 public:
  explicit Parser(std::string_view text) : m_s(text) {}

  Json document() {
    Json v = value(0);
    skipSpace();
    if (m_pos != m_s.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("JSON byte " + std::to_string(m_pos) + ": " + why);
  }
  void skipSpace() {
    while (m_pos < m_s.size() &&
           (m_s[m_pos] == ' ' || m_s[m_pos] == '\t' || m_s[m_pos] == '\n' || m_s[m_pos] == '\r'))
      ++m_pos;
  }
  bool literal(std::string_view word) {
    if (m_s.substr(m_pos, word.size()) != word) return false;
    m_pos += word.size();
    return true;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skipSpace();
    if (m_pos >= m_s.size()) fail("a value was expected, the text ended");
    const char c = m_s[m_pos];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json(string());
    if (literal("null")) return Json(nullptr);
    if (literal("true")) return Json(true);
    if (literal("false")) return Json(false);
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(std::string("unexpected character '") + c + "'");
  }

  Json object(int depth) {
    ++m_pos;  // {
    Json o = Json::object();
    skipSpace();
    if (m_pos < m_s.size() && m_s[m_pos] == '}') {
      ++m_pos;
      return o;
    }
    for (;;) {
      skipSpace();
      if (m_pos >= m_s.size() || m_s[m_pos] != '"') fail("an object key (a string) was expected");
      std::string key = string();
      skipSpace();
      if (m_pos >= m_s.size() || m_s[m_pos] != ':') fail("':' was expected after a key");
      ++m_pos;
      o[key] = value(depth + 1);
      skipSpace();
      if (m_pos < m_s.size() && m_s[m_pos] == ',') {
        ++m_pos;
        continue;
      }
      if (m_pos < m_s.size() && m_s[m_pos] == '}') {
        ++m_pos;
        return o;
      }
      fail("',' or '}' was expected in an object");
    }
  }

  Json array(int depth) {
    ++m_pos;  // [
    Json a = Json::array();
    skipSpace();
    if (m_pos < m_s.size() && m_s[m_pos] == ']') {
      ++m_pos;
      return a;
    }
    for (;;) {
      a.push_back(value(depth + 1));
      skipSpace();
      if (m_pos < m_s.size() && m_s[m_pos] == ',') {
        ++m_pos;
        continue;
      }
      if (m_pos < m_s.size() && m_s[m_pos] == ']') {
        ++m_pos;
        return a;
      }
      fail("',' or ']' was expected in an array");
    }
  }

  unsigned hex4() {
    if (m_pos + 4 > m_s.size()) fail("a \\u escape needs four hex digits");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = m_s[m_pos++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= unsigned(c - 'A' + 10);
      else
        fail("a \\u escape needs four hex digits");
    }
    return v;
  }

  std::string string() {
    ++m_pos;  // "
    std::string out;
    for (;;) {
      if (m_pos >= m_s.size()) fail("a string is not closed");
      const char c = m_s[m_pos++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (m_pos >= m_s.size()) fail("a string is not closed");
      switch (m_s[m_pos++]) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          const unsigned u = hex4();
          if (u >= 0xD800 && u <= 0xDBFF && m_s.substr(m_pos, 2) == "\\u") {
            const size_t at = m_pos;
            m_pos += 2;
            const unsigned low = hex4();
            if (low >= 0xDC00 && low <= 0xDFFF) {
              utf8::append(out, char32_t(0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00)));
              break;
            }
            m_pos = at;
          }
          if (u >= 0xDC80 && u <= 0xDCFF) {
            // A byte that started no valid UTF-8 sequence (surrogateescape).
            out.push_back(char(u & 0xFF));
          } else if (u >= 0xD800 && u <= 0xDFFF) {
            fail("a lone surrogate \\u escape");
          } else {
            utf8::append(out, char32_t(u));
          }
          break;
        }
        default:
          fail("an unknown escape in a string");
      }
    }
  }

  Json number() {
    const size_t start = m_pos;
    bool real = false;
    if (m_s[m_pos] == '-') ++m_pos;
    while (m_pos < m_s.size()) {
      const char c = m_s[m_pos];
      if (c >= '0' && c <= '9') {
        ++m_pos;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && m_pos > start)) {
        real = true;
        ++m_pos;
      } else {
        break;
      }
    }
    const std::string_view text = m_s.substr(start, m_pos - start);
    const char* first = text.data();
    const char* last = first + text.size();
    if (!real) {
      // As nlohmann reads them: unsigned, else signed, else (too big) a float.
      if (text[0] != '-') {
        uint64_t u = 0;
        const auto r = std::from_chars(first, last, u);
        if (r.ec == std::errc() && r.ptr == last) return Json(u);
      } else {
        int64_t i = 0;
        const auto r = std::from_chars(first, last, i);
        if (r.ec == std::errc() && r.ptr == last) return Json(i);
      }
    }
    double d = 0;
    const auto r = std::from_chars(first, last, d);
    if (r.ec != std::errc() || r.ptr != last || text == "-") {
      m_pos = start;
      fail("a malformed number");
    }
    return Json(d);
  }

  std::string_view m_s;
  size_t m_pos = 0;
};

}  // namespace

nlohmann::ordered_json parseJsonText(std::string_view text) {
  return Parser(text).document();
}

}  // namespace ckpt
