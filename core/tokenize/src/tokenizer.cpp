// The tokenizers: bytes, and byte-level BPE as GPT-2's encoder.py and
// Hugging Face's ByteLevel BPE do it (merges by rank, a piece cache).
// Pre-tokenizing: pretokenize.cpp; reading tokenizer files: tokenizer_files.cpp.
#include "ckpt/tokenize/tokenizer.h"

#include <algorithm>
#include <climits>
#include <functional>

#include "ckpt/format/utf8.h"

namespace ckpt {

namespace {

using utf8::kInvalid;

// OpenAI's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the
// other 68 bytes to U+0100.. in byte order.
struct ByteLevelTables {
  char32_t byteToCp[256];
  std::string byteToUtf8[256];
  int16_t cpToByte[324];  // -1: not a byte-level character

  ByteLevelTables() {
    bool printable[256] = {};
    for (int b = '!'; b <= '~'; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) byteToCp[b] = printable[b] ? char32_t(b) : next++;
    std::fill(std::begin(cpToByte), std::end(cpToByte), int16_t(-1));
    for (int b = 0; b < 256; ++b) {
      cpToByte[byteToCp[b]] = int16_t(b);
      utf8::append(byteToUtf8[b], byteToCp[b]);
    }
  }
};

const ByteLevelTables& byteLevel() {
  static const ByteLevelTables tables;
  return tables;
}

constexpr uint64_t pairKey(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

// Pieces of at most this many bytes go through the quadratic loop of
// encoder.py; longer ones through the equivalent heap-based one.
constexpr size_t kShortWord = 64;
// Pieces longer than this are not cached; the cache is dropped when it holds
// more than kCacheEntries pieces.
constexpr size_t kCachedPieceBytes = 256;
constexpr size_t kCacheEntries = size_t(1) << 20;

}  // namespace

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > 255)
      throw DataError("byte tokenizer: id " + std::to_string(ids[i]) + " at position " +
                      std::to_string(i) + " is not a byte (0..255)");
    out += char(ids[i]);
  }
  return out;
}

// ---------------------------------------------------------------------------

BpeTokenizer::BpeTokenizer(const std::unordered_map<std::string, int32_t>& vocab,
                           const std::vector<std::pair<std::string, std::string>>& merges,
                           std::vector<AddedToken> addedTokens, BpeOptions options,
                           std::string source)
    : m_source(std::move(source)),
      m_options(std::move(options)),
      m_vocab(vocab),
      m_added(std::move(addedTokens)) {
  const std::string where = "tokenizer " + m_source;
  if (m_vocab.empty()) throw DataError(where + ": the vocabulary is empty");
  int64_t maxId = -1;
  for (const auto& [token, id] : m_vocab) {
    if (id < 0) throw DataError(where + ": token \"" + token + "\" has a negative id");
    if (token.empty()) throw DataError(where + ": the vocabulary has an empty token");
    maxId = std::max<int64_t>(maxId, id);
  }
  for (const AddedToken& t : m_added) {
    if (t.id < 0) throw DataError(where + ": added token \"" + t.content + "\" has a negative id");
    if (t.content.empty())
      throw DataError(where + ": an added token (id " + std::to_string(t.id) + ") is empty");
    maxId = std::max<int64_t>(maxId, t.id);
  }
  m_vocabSize = maxId + 1;
  m_idToToken.resize(size_t(m_vocabSize));
  m_idKind.assign(size_t(m_vocabSize), 0);
  for (const auto& [token, id] : m_vocab) {
    if (m_idKind[id] != 0)
      throw DataError(where + ": id " + std::to_string(id) + " is given to both \"" +
                      m_idToToken[id] + "\" and \"" + token + "\"");
    m_idKind[id] = 1;
    m_idToToken[id] = token;
  }
  for (const AddedToken& t : m_added) {
    if (m_idKind[t.id] == 1 && m_idToToken[t.id] != t.content)
      throw DataError(where + ": added token \"" + t.content + "\" has id " + std::to_string(t.id) +
                      ", which the vocabulary gives to \"" + m_idToToken[t.id] + "\"");
    if (m_idKind[t.id] == 2 && m_idToToken[t.id] != t.content)
      throw DataError(where + ": added tokens \"" + m_idToToken[t.id] + "\" and \"" + t.content +
                      "\" share id " + std::to_string(t.id));
    m_idKind[t.id] = 2;
    m_idToToken[t.id] = t.content;
  }

  const ByteLevelTables& bl = byteLevel();
  for (int b = 0; b < 256; ++b) {
    auto it = m_vocab.find(bl.byteToUtf8[b]);
    m_byteIds[b] = it == m_vocab.end() ? -1 : it->second;
  }

  m_merges.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto ia = m_vocab.find(a);
    const auto ib = m_vocab.find(b);
    const auto im = m_vocab.find(a + b);
    const char* missing = ia == m_vocab.end()   ? "its first part"
                          : ib == m_vocab.end() ? "its second part"
                          : im == m_vocab.end() ? "its result"
                                                : nullptr;
    if (missing)
      throw DataError(where + ": merge " + std::to_string(rank) + " (\"" + a + " " + b +
                      "\"): " + missing + " is not in the vocabulary");
    if (rank > size_t(INT32_MAX)) throw DataError(where + ": too many merges");
    // A later duplicate takes the later rank, as dict(zip(merges, ranks)) does.
    m_merges.insert_or_assign(pairKey(ia->second, ib->second),
                              MergeRule{int32_t(rank), im->second});
  }
  m_mergeCount = int64_t(merges.size());

  if (m_options.unkToken) {
    if (auto id = tokenId(*m_options.unkToken)) {
      m_unkId = *id;
    } else if (auto sid = specialTokenId(*m_options.unkToken)) {
      m_unkId = *sid;
    } else {
      throw DataError(where + ": unk_token \"" + *m_options.unkToken +
                      "\" is not in the vocabulary");
    }
  }
}

std::optional<int32_t> BpeTokenizer::tokenId(const std::string& token) const {
  auto it = m_vocab.find(token);
  if (it == m_vocab.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> BpeTokenizer::specialTokenId(std::string_view token) const {
  for (const AddedToken& t : m_added)
    if (t.content == token) return t.id;
  return std::nullopt;
}

const BpeTokenizer::MergeRule* BpeTokenizer::findMerge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  auto it = m_merges.find(pairKey(left, right));
  return it == m_merges.end() ? nullptr : &it->second;
}

// encoder.py's loop: find the lowest-ranked adjacent pair, merge every
// occurrence of it left to right, repeat until no pair has a rank.
void BpeTokenizer::bpeShort(std::vector<int32_t>& word) const {
  while (word.size() > 1) {
    const MergeRule* best = nullptr;
    int32_t left = 0, right = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const MergeRule* rule = findMerge(word[i], word[i + 1]);
      if (rule && (!best || rule->rank < best->rank)) {
        best = rule;
        left = word[i];
        right = word[i + 1];
      }
    }
    if (!best) break;
    size_t j = 0;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
        word[j++] = best->merged;
        i += 2;
      } else {
        word[j++] = word[i++];
      }
    }
    word.resize(j);
  }
}

// The same result in O(n log n): symbols in a linked list, candidate pairs in
// a min-heap of (rank, position). All pending pairs of the lowest rank are
// merged in position order (skipping those an earlier merge of the batch
// consumed) before any pair a merge creates is looked at, exactly as one pass
// of encoder.py merges every occurrence of its chosen pair. A merge never
// creates a pair of the rank being merged (the merged token differs from both
// parts), so each batch is complete when it starts.
void BpeTokenizer::bpeLong(std::vector<int32_t>& word) const {
  const int32_t n = int32_t(word.size());
  std::vector<int32_t> next(n), prev(n);
  std::vector<uint8_t> alive(n, 1);
  for (int32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  using Entry = std::pair<int32_t, int32_t>;  // (rank, position)
  std::vector<Entry> heap;
  const auto cmp = std::greater<Entry>();
  auto push = [&](int32_t pos) {
    const int32_t q = next[pos];
    if (q < 0) return;
    if (const MergeRule* rule = findMerge(word[pos], word[q])) {
      heap.emplace_back(rule->rank, pos);
      std::push_heap(heap.begin(), heap.end(), cmp);
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);

  std::vector<int32_t> batch;
  while (!heap.empty()) {
    const int32_t rank = heap.front().first;
    batch.clear();
    while (!heap.empty() && heap.front().first == rank) {
      batch.push_back(heap.front().second);
      std::pop_heap(heap.begin(), heap.end(), cmp);
      heap.pop_back();
    }
    // Popped in ascending position order; node order equals position order
    // because a merge keeps the left node.
    for (const int32_t pos : batch) {
      if (!alive[pos]) continue;
      const int32_t q = next[pos];
      if (q < 0) continue;
      const MergeRule* rule = findMerge(word[pos], word[q]);
      if (!rule || rule->rank != rank) continue;
      word[pos] = rule->merged;
      alive[q] = 0;
      next[pos] = next[q];
      if (next[q] >= 0) prev[next[q]] = pos;
      if (prev[pos] >= 0) push(prev[pos]);
      push(pos);
    }
  }
  int32_t j = 0;
  for (int32_t i = 0; i >= 0; i = next[i]) word[j++] = word[i];
  word.resize(j);
}

void BpeTokenizer::encodePiece(std::string_view piece, std::vector<int32_t>& out) const {
  const bool cacheable = piece.size() <= kCachedPieceBytes;
  std::string key;
  if (cacheable) {
    key.assign(piece);
    std::lock_guard lock(m_cacheMutex);
    auto it = m_cache.find(key);
    if (it != m_cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word;
  bool whole = false;
  if (m_options.ignoreMerges) {
    std::string mapped;
    for (const char c : piece) mapped += byteLevel().byteToUtf8[static_cast<unsigned char>(c)];
    if (auto it = m_vocab.find(mapped); it != m_vocab.end()) {
      word.push_back(it->second);
      whole = true;
    }
  }
  if (!whole) {
    word.resize(piece.size());
    for (size_t i = 0; i < piece.size(); ++i) {
      const auto b = static_cast<unsigned char>(piece[i]);
      // A byte without a token gets a negative placeholder that no merge matches.
      word[i] = m_byteIds[b] >= 0 ? m_byteIds[b] : -1 - int32_t(b);
    }
    if (word.size() <= kShortWord) {
      bpeShort(word);
    } else {
      bpeLong(word);
    }
    for (int32_t& id : word) {
      if (id >= 0) continue;
      if (!m_unkId) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%02X", unsigned(-1 - id));
        throw DataError("tokenizer " + m_source + ": byte " + hex +
                        " has no token in the vocabulary and there is no unk_token");
      }
      id = *m_unkId;
    }
  }
  out.insert(out.end(), word.begin(), word.end());
  if (cacheable) {
    std::lock_guard lock(m_cacheMutex);
    if (m_cache.size() >= kCacheEntries) m_cache.clear();
    m_cache.emplace(std::move(key), std::move(word));
  }
}

void BpeTokenizer::encodeOrdinary(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string prefixed;
  if (m_options.addPrefixSpace && text.front() != ' ') {
    prefixed.reserve(text.size() + 1);
    prefixed += ' ';
    prefixed += text;
    text = prefixed;
  }
  for (const std::string_view piece : gpt2PreTokenize(text)) encodePiece(piece, out);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 1);
  if (m_added.empty()) {
    encodeOrdinary(text, out);
    return out;
  }
  // Cut out added tokens: at each step the leftmost occurrence of any, the
  // longest when several start there.
  constexpr size_t npos = std::string_view::npos;
  std::vector<size_t> nextAt(m_added.size(), 0);
  std::vector<uint8_t> stale(m_added.size(), 1);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best = npos;
    size_t bestIndex = 0;
    for (size_t i = 0; i < m_added.size(); ++i) {
      if (stale[i] || (nextAt[i] != npos && nextAt[i] < pos)) {
        nextAt[i] = text.find(m_added[i].content, pos);
        stale[i] = 0;
      }
      if (nextAt[i] == npos) continue;
      if (best == npos || nextAt[i] < best ||
          (nextAt[i] == best && m_added[i].content.size() > m_added[bestIndex].content.size())) {
        best = nextAt[i];
        bestIndex = i;
      }
    }
    if (best == npos) {
      encodeOrdinary(text.substr(pos), out);
      break;
    }
    encodeOrdinary(text.substr(pos, best - pos), out);
    out.push_back(m_added[bestIndex].id);
    pos = best + m_added[bestIndex].content.size();
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  const ByteLevelTables& bl = byteLevel();
  std::string out;
  out.reserve(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= m_vocabSize || m_idKind[id] == 0)
      throw DataError("tokenizer " + m_source + ": id " + std::to_string(id) + " at position " +
                      std::to_string(i) + " is not in the vocabulary (size " +
                      std::to_string(m_vocabSize) + ")");
    const std::string& token = m_idToToken[id];
    if (m_idKind[id] == 2) {
      out += token;
      continue;
    }
    for (size_t p = 0; p < token.size();) {
      const utf8::Decoded d = utf8::decode(token, p);
      if (d.cp != kInvalid && d.cp < 324 && bl.cpToByte[d.cp] >= 0) {
        out += char(bl.cpToByte[d.cp]);
      } else {
        out.append(token, p, d.len);  // not a byte-level character: as written
      }
      p += d.len;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------

}  // namespace ckpt
