// GPT-2's pre-tokenizer: the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matched by hand over the Unicode classes of unicode_classes.cpp (one
// table lookup per code point).
#include "ckpt/format/utf8.h"
#include "ckpt/tokenize/tokenizer.h"
#include "unicode_classes.h"

namespace ckpt {

namespace {

struct AsciiClasses {
  CharClass cls[128];
  AsciiClasses() {
    for (char32_t c = 0; c < 128; ++c) cls[c] = charClass(c);
  }
};

const AsciiClasses& asciiClasses() {
  static const AsciiClasses table;
  return table;
}

using utf8::kInvalid;

struct Symbol {
  CharClass cls;
  uint32_t len;
};

Symbol symbolAt(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {asciiClasses().cls[b0], 1};
  const utf8::Decoded d = utf8::decode(s, pos);
  if (d.cp == kInvalid) return {CharClass::Other, 1};
  return {charClass(d.cp), d.len};
}

}  // namespace

std::vector<std::string_view> gpt2PreTokenize(std::string_view s) {
  std::vector<std::string_view> out;
  const size_t n = s.size();
  size_t pos = 0;
  while (pos < n) {
    const size_t start = pos;
    // 's|'t|'re|'ve|'m|'ll|'d
    if (s[pos] == '\'' && pos + 1 < n) {
      const char d = s[pos + 1];
      if (d == 's' || d == 't' || d == 'm' || d == 'd') {
        out.push_back(s.substr(pos, 2));
        pos += 2;
        continue;
      }
      if (pos + 2 < n) {
        const std::string_view three = s.substr(pos, 3);
        if (three == "'re" || three == "'ve" || three == "'ll") {
          out.push_back(three);
          pos += 3;
          continue;
        }
      }
    }
    // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional U+0020, then a
    // run of one class.
    Symbol first = symbolAt(s, pos);
    CharClass cls = first.cls;
    size_t p = pos;
    if (s[pos] == ' ' && pos + 1 < n) {
      const Symbol second = symbolAt(s, pos + 1);
      if (second.cls != CharClass::Space) {
        cls = second.cls;
        p = pos + 1;
      }
    }
    if (cls != CharClass::Space) {
      size_t q = p;
      while (q < n) {
        const Symbol sym = symbolAt(s, q);
        if (sym.cls != cls) break;
        q += sym.len;
      }
      out.push_back(s.substr(start, q - start));
      pos = q;
      continue;
    }
    // '\s+(?!\S)' then '\s+': a whitespace run; when something other than
    // whitespace follows it, its last character is left to start the next
    // piece (unless the run is that one character).
    size_t q = pos;
    size_t last = pos;
    size_t count = 0;
    while (q < n) {
      const Symbol sym = symbolAt(s, q);
      if (sym.cls != CharClass::Space) break;
      last = q;
      q += sym.len;
      ++count;
    }
    const size_t end = (q == n || count == 1) ? q : last;
    out.push_back(s.substr(start, end - start));
    pos = end;
  }
  return out;
}

}  // namespace ckpt
