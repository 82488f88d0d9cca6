// Could PCRE2 replace the hand-written Unicode tables and matcher of the
// GPT-2 pre-tokenizer (core/tokenize/src/pretokenize.cpp, unicode_classes.cpp)?
// Issue #13 asked; this program answers with two figures measured in one run:
//   1. exactness: every code point, PCRE2's \p{L} / \p{N} / \s (UTF + UCP)
//      against our tables (Unicode 17.0, the tables of Python's `regex`);
//   2. speed and agreement: the pattern
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      run by PCRE2's JIT over a text, against gpt2PreTokenize on the same
//      bytes: both piece lists must be equal where the tables agree.
// Built only when Debian's libpcre2-dev is installed (it is not a
// dependency of CkptScope):  bench_pcre2 [TEXT_FILE] [--repeat N]
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ckpt/format/utf8.h"
#include "ckpt/tokenize/tokenizer.h"

namespace {

pcre2_code* compile(const char* pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
  if (!re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    std::fprintf(stderr, "pcre2_compile(%s): %s at %zu\n", pattern, msg, size_t(off));
    std::exit(2);
  }
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
  return re;
}

bool matches(pcre2_code* re, pcre2_match_data* md, const std::string& s) {
  return pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, nullptr) >= 0;
}

double seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else
      path = argv[i];
  }
  uint32_t version = 0;
  pcre2_config(PCRE2_CONFIG_UNICODE, &version);
  char uver[32] = {};
  pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, uver);
  char pver[32] = {};
  pcre2_config(PCRE2_CONFIG_VERSION, pver);
  std::printf("PCRE2 %s, Unicode %s; ours: Unicode 17.0 (Python's regex module)\n", pver, uver);

  // 1. Every code point, class by class.
  pcre2_code* letter = compile("^\\p{L}$");
  pcre2_code* number = compile("^\\p{N}$");
  pcre2_code* space = compile("^\\s$");
  pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
  size_t diff[3] = {};
  char32_t firstDiff[3] = {};
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    ckpt::utf8::append(s, cp);
    const bool ours[3] = {ckpt::isUnicodeLetter(cp), ckpt::isUnicodeNumber(cp),
                          ckpt::isUnicodeWhitespace(cp)};
    const bool theirs[3] = {matches(letter, md, s), matches(number, md, s), matches(space, md, s)};
    for (int k = 0; k < 3; ++k)
      if (ours[k] != theirs[k] && diff[k]++ == 0) firstDiff[k] = cp;
  }
  const char* names[3] = {"\\p{L}", "\\p{N}", "\\s"};
  for (int k = 0; k < 3; ++k) {
    std::printf("%-6s code points classified differently: %zu", names[k], diff[k]);
    if (diff[k]) std::printf(" (the first: U+%04X)", unsigned(firstDiff[k]));
    std::printf("\n");
  }

  // 2. The pattern over a text.
  std::string text;
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    const std::string sample =
        "It's the model's 3rd checkpoint: loss=2.3456 at step 12000, lr 3e-4.  "
        "Les réseaux apprennent vite; Модель обучается. 模型在训练中。 ١٢٣ ½ ⅔\n\t"
        "    indented code_line(x, y) -> {return x+y;}  \n";
    while (text.size() < (8u << 20)) text += sample;
  }
  pcre2_code* gpt2 =
      compile("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");
  std::vector<std::string_view> theirs;
  double best[2] = {1e9, 1e9};
  std::vector<std::string_view> ours;
  for (int r = 0; r < repeat; ++r) {
    auto t = std::chrono::steady_clock::now();
    ours = ckpt::gpt2PreTokenize(text);
    best[0] = std::min(best[0], seconds(t));
    t = std::chrono::steady_clock::now();
    theirs = {};  // a fresh vector, as gpt2PreTokenize returns one
    PCRE2_SIZE pos = 0;
    while (pos < text.size()) {
      const int rc = pcre2_jit_match(gpt2, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(),
                                     pos, 0, md, nullptr);
      if (rc < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      theirs.emplace_back(text.data() + ov[0], ov[1] - ov[0]);
      pos = ov[1] > pos ? ov[1] : pos + 1;
    }
    best[1] = std::min(best[1], seconds(t));
  }
  const bool same = ours == theirs;
  std::printf("text: %zu bytes; pieces: ours %zu, PCRE2 %zu; equal: %s\n", text.size(), ours.size(),
              theirs.size(), same ? "yes" : "NO");
  std::printf(
      "pre-tokenize, best of %d: ours %.1f ms (%.0f MB/s), PCRE2 JIT %.1f ms (%.0f MB/s); "
      "PCRE2/ours = %.2fx the time\n",
      repeat, best[0] * 1e3, text.size() / best[0] / 1e6, best[1] * 1e3,
      text.size() / best[1] / 1e6, best[1] / best[0]);
  pcre2_match_data_free(md);
  return same ? 0 : 1;
}
