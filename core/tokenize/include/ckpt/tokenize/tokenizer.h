#pragma once

// Tokenizers for training and scoring: raw bytes, and GPT-2's byte-level BPE
// loaded from OpenAI's files (encoder.json + vocab.bpe), Hugging Face's
// (vocab.json + merges.txt) or a Hugging Face tokenizer.json. Plain C++20:
// no Qt, no LibTorch.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ckpt {

// Everything the tokenizers and the dataset reject ends in a DataError whose
// message names the file (or tokenizer) and what is wrong with it.
class DataError : public std::runtime_error {
 public:
  explicit DataError(const std::string& message) : std::runtime_error(message) {}
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of UTF-8 text. Never fails for a tokenizer whose vocabulary
  // covers all 256 bytes (every byte tokenizer and GPT-2).
  [[nodiscard]] virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // The bytes the ids stand for (UTF-8 when the ids came from text; a slice of
  // ids can end inside a multi-byte character). An unknown id is a DataError.
  [[nodiscard]] virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // One past the largest id: the model's vocab_size must be at least this.
  [[nodiscard]] virtual int64_t vocabSize() const = 0;
  // A spec that loadTokenizer() accepts to load this tokenizer again:
  // "bytes", or "bpe:" followed by the path it was loaded from.
  [[nodiscard]] virtual std::string name() const = 0;
  // The id of a special (added) token given by its text, e.g. "<|endoftext|>".
  [[nodiscard]] virtual std::optional<int32_t> specialTokenId(std::string_view token) const {
    return std::nullopt;
  }
};

// Ids 0..255 are the bytes of the UTF-8 text.
class ByteTokenizer final : public Tokenizer {
 public:
  [[nodiscard]] std::vector<int32_t> encode(std::string_view text) const override;
  [[nodiscard]] std::string decode(const std::vector<int32_t>& ids) const override;
  [[nodiscard]] int64_t vocabSize() const override { return 256; }
  [[nodiscard]] std::string name() const override { return "bytes"; }
};

// A token recognised verbatim in text before pre-tokenization (Hugging Face's
// added_tokens, e.g. GPT-2's <|endoftext|> = 50256).
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = true;
};

struct BpeOptions {
  bool addPrefixSpace = false;  // ByteLevel.add_prefix_space: " " before each text segment
  bool ignoreMerges = false;    // BPE.ignore_merges: a piece found whole in the vocab is one token
  std::optional<std::string> unkToken;  // used for a byte that has no token (GPT-2 has none)
};

// GPT-2's byte-level BPE, exactly as OpenAI's encoder.py: text is split by the
// GPT-2 pattern (gpt2PreTokenize), each piece's UTF-8 bytes are mapped through
// bytes_to_unicode, and the lowest-ranked adjacent pair is merged (every
// occurrence, left to right) until no pair has a rank. Added tokens are cut out
// of the text first (leftmost, then longest). Thread-safe: the piece cache is
// guarded by a mutex.
class BpeTokenizer final : public Tokenizer {
 public:
  // vocab: byte-level token string -> id; merges in rank order (a later
  // duplicate pair takes the later rank, as in encoder.py). `source` names the
  // files in error messages and in name(). Every merge's two parts and their
  // concatenation must be in the vocabulary; ids must be unique and >= 0.
  BpeTokenizer(const std::unordered_map<std::string, int32_t>& vocab,
               const std::vector<std::pair<std::string, std::string>>& merges,
               std::vector<AddedToken> addedTokens, BpeOptions options, std::string source);

  // A Hugging Face tokenizer.json: model.type "BPE" (vocab + merges, merges as
  // "a b" strings or [a, b] pairs), a ByteLevel pre-tokenizer with use_regex,
  // no normalizer; added_tokens are recognised in text.
  static std::unique_ptr<BpeTokenizer> fromTokenizerJson(const std::string& path);
  // vocab.json + merges.txt (Hugging Face) or encoder.json + vocab.bpe
  // (OpenAI): the same formats. "<|endoftext|>", when in the vocabulary, and
  // the entries of an added_tokens.json next to the vocabulary are added tokens.
  // `source` (for name()) defaults to the vocabulary's directory.
  static std::unique_ptr<BpeTokenizer> fromVocabAndMerges(const std::string& vocabPath,
                                                          const std::string& mergesPath,
                                                          std::string source = {});

  [[nodiscard]] std::vector<int32_t> encode(std::string_view text) const override;
  [[nodiscard]] std::string decode(const std::vector<int32_t>& ids) const override;
  [[nodiscard]] int64_t vocabSize() const override { return m_vocabSize; }
  [[nodiscard]] std::string name() const override { return "bpe:" + m_source; }
  [[nodiscard]] std::optional<int32_t> specialTokenId(std::string_view token) const override;

  // The id of one vocabulary entry (byte-level string, e.g. "Ġthe").
  [[nodiscard]] std::optional<int32_t> tokenId(const std::string& token) const;
  [[nodiscard]] int64_t mergeCount() const { return m_mergeCount; }

 private:
  struct MergeRule {
    int32_t rank;
    int32_t merged;
  };
  void encodeOrdinary(std::string_view text, std::vector<int32_t>& out) const;
  void encodePiece(std::string_view piece, std::vector<int32_t>& out) const;
  [[nodiscard]] const MergeRule* findMerge(int32_t left, int32_t right) const;
  void bpeShort(std::vector<int32_t>& word) const;
  void bpeLong(std::vector<int32_t>& word) const;

  std::string m_source;
  BpeOptions m_options;
  std::unordered_map<std::string, int32_t> m_vocab;
  std::vector<std::string> m_idToToken;
  std::vector<uint8_t> m_idKind;  // 0: no token, 1: vocabulary, 2: added (verbatim)
  std::unordered_map<uint64_t, MergeRule> m_merges;  // (left << 32 | right) -> rule
  int64_t m_mergeCount = 0;
  int32_t m_byteIds[256];  // -1: the byte has no token
  std::optional<int32_t> m_unkId;
  std::vector<AddedToken> m_added;
  int64_t m_vocabSize = 0;

  mutable std::mutex m_cacheMutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> m_cache;
};

// "bytes" -> ByteTokenizer. Otherwise (an optional "bpe:" prefix is dropped)
// a path: a tokenizer.json file; or a directory holding tokenizer.json,
// vocab.json + merges.txt, or encoder.json + vocab.bpe (tried in that order).
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& spec);

// GPT-2's pre-tokenizer, the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matched by hand (findall semantics, pieces cover the text). \p{L}, \p{N} and
// \s are the full Unicode 17.0 classes (General_Category L*, N*, and
// White_Space), the tables of Python's `regex` module that OpenAI's
// encoder.py uses. Bytes that are not valid UTF-8 count as one symbol each,
// neither letter, number nor space.
std::vector<std::string_view> gpt2PreTokenize(std::string_view text);

bool isUnicodeLetter(char32_t c);      // \p{L}
bool isUnicodeNumber(char32_t c);      // \p{N}
bool isUnicodeWhitespace(char32_t c);  // \s (White_Space)

}  // namespace ckpt
