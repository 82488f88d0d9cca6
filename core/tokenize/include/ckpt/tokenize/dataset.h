#pragma once

// Token streams for training and scoring: text files tokenized on load, or
// pre-tokenized .bin files memory-mapped; a contiguous held-out validation
// tail; fixed-length windows drawn by a seeded, resumable sampler. Plain
// C++20: no Qt, no LibTorch (the trainer turns windows into tensors).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/tokenize/tokenizer.h"

namespace ckpt {

enum class Split { Train, Val };

const char* splitName(Split split);  // "train", "validation"

struct DatasetOptions {
  // The last valFraction of all tokens (contiguous) is the validation split;
  // in [0, 1). Its size is floor(tokens * valFraction); 0 means no split.
  double valFraction = 0.1;
  // Appended after every text document (file), e.g. GPT-2's <|endoftext|>
  // (tokenizer.specialTokenId("<|endoftext|>")). Never added to .bin files.
  std::optional<int32_t> separator;
  // .bin files hold little-endian uint32 tokens instead of uint16.
  bool binUint32 = false;
};

// One token stream, the concatenation of its sources in the order given:
//  - a directory: every *.txt, *.md and *.text file below it (recursively,
//    case-insensitive extensions, hidden names skipped), sorted by relative
//    path (byte order); empty files inside are skipped;
//  - a .bin file: pre-tokenized little-endian uint16 (or uint32) ids,
//    memory-mapped, never copied; every id must be < the tokenizer's
//    vocabSize();
//  - any other file: one UTF-8 text document.
// Text must be valid UTF-8 (a leading byte-order mark is dropped). Errors are
// DataErrors naming the path and the numbers: a missing path, an empty file,
// a directory without text, invalid UTF-8 (byte offset), a .bin file whose
// size is not a multiple of the token size, an id out of range (byte offset of
// the first one).
class TokenDataset {
 public:
  TokenDataset(const std::vector<std::string>& paths, const Tokenizer& tokenizer,
               const DatasetOptions& options = {});
  // Tokens already in memory (generated data, tests); ids must be in
  // [0, vocabSize).
  TokenDataset(std::vector<int32_t> tokens, int64_t vocabSize, const DatasetOptions& options = {});
  ~TokenDataset();
  TokenDataset(TokenDataset&&) noexcept;
  TokenDataset& operator=(TokenDataset&&) noexcept;
  TokenDataset(const TokenDataset&) = delete;
  TokenDataset& operator=(const TokenDataset&) = delete;

  [[nodiscard]] int64_t size() const;  // all tokens, both splits
  [[nodiscard]] int64_t vocabSize() const;
  [[nodiscard]] double valFraction() const;
  // The files read, in stream order, and the number of text documents.
  [[nodiscard]] const std::vector<std::string>& files() const;
  [[nodiscard]] int64_t documentCount() const;
  // The paths as given, for messages.
  [[nodiscard]] const std::string& description() const;

  // Train is [0, size - valSize), Val is [size - valSize, size).
  [[nodiscard]] int64_t splitBegin(Split split) const;
  [[nodiscard]] int64_t splitSize(Split split) const;
  // Copies tokens [offset, offset + count) of the split into out; the range
  // must lie inside the split (std::out_of_range otherwise).
  void read(Split split, int64_t offset, int64_t count, int32_t* out) const;
  [[nodiscard]] std::vector<int32_t> read(Split split, int64_t offset, int64_t count) const;

  // Throws a DataError unless seqLen >= 2 and the split holds at least one
  // window, i.e. splitSize(split) >= seqLen. Why seqLen and not seqLen + 1:
  // windows are both inputs and labels (the model shifts: logits[:, :-1]
  // against labels[:, 1:]), so a window of seqLen tokens carries its own
  // seqLen - 1 targets and no token after it is read. seqLen 1 would have
  // no target at all.
  void requireWindow(Split split, int64_t seqLen) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Windows of seqLen consecutive tokens from one split, at start offsets drawn
// uniformly from [0, splitSize - seqLen] (with replacement).
//
// Generator (specified, so that runs are reproducible anywhere): window k
// (k = 0, 1, ...) starts at
//   floor(x_k * (splitSize - seqLen + 1) / 2^64),
//   x_k = splitmix64 output k for the seed = mix(seed + (k + 1) * 0x9E3779B97F4A7C15),
//   mix(z): z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) * 0x94D049BB133111EB;
//           z ^ z >> 31            (all mod 2^64; Vigna's splitmix64)
// i.e. Lemire's multiply-shift on the k-th output of splitmix64 (bias below
// 2^-24 for any split under 2^40 tokens). Window k depends on (seed, k) only,
// so position() is simply the number of windows drawn and restore() is O(1):
// after restore(p) the sampler yields exactly windows p, p+1, ... as an
// uninterrupted one would. The sampler keeps a pointer to the dataset: the
// dataset must outlive it and stay where it is (not be moved from).
class WindowSampler {
 public:
  WindowSampler(const TokenDataset& data, Split split, int64_t seqLen, uint64_t seed);

  // Writes batch windows, row-major: out[b * seqLen + t]; advances position()
  // by batch.
  void next(int32_t* out, int64_t batch);
  // The start offset (within the split) of window `index`.
  [[nodiscard]] int64_t windowStart(uint64_t index) const;
  // Windows drawn so far; save it in checkpoints, hand it to restore().
  [[nodiscard]] uint64_t position() const { return m_position; }
  void restore(uint64_t position) { m_position = position; }

  [[nodiscard]] Split split() const { return m_split; }
  [[nodiscard]] int64_t seqLen() const { return m_seqLen; }
  [[nodiscard]] uint64_t seed() const { return m_seed; }
  // How many distinct start offsets there are: splitSize - seqLen + 1.
  [[nodiscard]] int64_t startCount() const { return m_startCount; }

 private:
  const TokenDataset* m_data;
  Split m_split;
  int64_t m_seqLen;
  uint64_t m_seed;
  int64_t m_startCount;
  uint64_t m_position = 0;
};

// splitmix64 output `index` (0-based) for `seed`, as used by WindowSampler.
uint64_t splitmix64At(uint64_t seed, uint64_t index);

// Consecutive non-overlapping windows [begin, end) of length T over `tokens`
// tokens: [0, T), [T, 2T), ...; a last partial window is dropped (none when
// tokens < T). T must be positive.
std::vector<std::pair<int64_t, int64_t>> consecutiveWindows(int64_t tokens, int64_t T);

}  // namespace ckpt
