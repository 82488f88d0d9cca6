#pragma once
// Internal to core/tokenize: the code-point classes GPT-2's pre-tokenizer
// pattern tests (pretokenize.cpp), looked up in constant time.

#include <cstdint>

namespace ckpt {

// In the pattern's order of precedence: \s, then \p{L}, then \p{N};
// everything else, and any value past U+10FFFF, is Other.
enum class CharClass : uint8_t { Letter, Number, Space, Other };

// A two-stage table (a block number per 256 code points; equal blocks
// stored once, about 70 KB in all), made on first use from the range tables
// behind isUnicodeLetter, isUnicodeNumber and isUnicodeWhitespace, which
// answer the same by binary search.
CharClass charClass(char32_t c);

}  // namespace ckpt
