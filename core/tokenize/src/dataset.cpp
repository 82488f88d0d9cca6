#include "ckpt/tokenize/dataset.h"

#include "ckpt/format/utf8.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace ckpt {

const char* splitName(Split split) {
  return split == Split::Train ? "train" : "validation";
}

namespace {

// A read-only mapping of a whole file.
struct Mapping {
  void* addr = nullptr;
  size_t length = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr) munmap(addr, length);
  }
};

// A run of tokens of the stream: owned (text) or mapped (.bin).
struct Segment {
  int64_t begin = 0;  // first token's index in the stream
  int64_t count = 0;
  std::shared_ptr<std::vector<int32_t>> owned;
  std::shared_ptr<Mapping> mapping;
  const uint8_t* raw = nullptr;  // mapped tokens, `width` bytes each, little-endian
  int width = 4;
};

std::string lowerExtension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

bool isTextExtension(const fs::path& p) {
  const std::string ext = lowerExtension(p);
  return ext == ".txt" || ext == ".md" || ext == ".text";
}

bool isHidden(const fs::path& relative) {
  for (const fs::path& part : relative)
    if (part.string().starts_with(".")) return true;
  return false;
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("text file " + path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw DataError("text file " + path + ": read error");
  return ss.str();
}

uint32_t loadLittle(const uint8_t* p, int width) {
  if (width == 2) return uint32_t(p[0]) | uint32_t(p[1]) << 8;
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

struct TokenDataset::Impl {
  std::vector<Segment> segments;
  std::vector<std::string> files;
  std::string description;
  int64_t documents = 0;
  int64_t total = 0;
  int64_t vocabSize = 0;
  double valFraction = 0.1;
  int64_t valSize = 0;

  std::vector<int32_t>& textSegment() {
    if (segments.empty() || !segments.back().owned) {
      Segment s;
      s.begin = total;
      s.owned = std::make_shared<std::vector<int32_t>>();
      segments.push_back(std::move(s));
    }
    return *segments.back().owned;
  }

  void addText(const std::string& path, const std::string& bytes, const Tokenizer& tokenizer,
               const DatasetOptions& options) {
    std::string_view text = bytes;
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    if (const int64_t bad = utf8::firstInvalid(text); bad >= 0) {
      const int64_t offset = bad + int64_t(bytes.size() - text.size());
      throw DataError("text file " + path + ": not valid UTF-8 at byte offset " +
                      std::to_string(offset));
    }
    std::vector<int32_t>& out = textSegment();
    const std::vector<int32_t> ids = tokenizer.encode(text);
    out.insert(out.end(), ids.begin(), ids.end());
    if (options.separator) out.push_back(*options.separator);
    segments.back().count = int64_t(out.size());
    total = segments.back().begin + segments.back().count;
    files.push_back(path);
    ++documents;
  }

  void addTextFile(const std::string& path, const Tokenizer& tokenizer,
                   const DatasetOptions& options) {
    const std::string bytes = readText(path);
    if (bytes.empty() || bytes == "\xEF\xBB\xBF")
      throw DataError("text file " + path + " is empty (0 bytes of text)");
    addText(path, bytes, tokenizer, options);
  }

  void addDirectory(const std::string& path, const Tokenizer& tokenizer,
                    const DatasetOptions& options) {
    const fs::path root(path);
    std::vector<std::pair<std::string, fs::path>> found;  // (relative, full)
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) throw DataError("data directory " + path + ": cannot list (" + ec.message() + ")");
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) throw DataError("data directory " + path + ": cannot list (" + ec.message() + ")");
      const fs::path rel = it->path().lexically_relative(root);
      if (isHidden(rel)) {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec) && isTextExtension(it->path()))
        found.emplace_back(rel.generic_string(), it->path());
    }
    if (ec) throw DataError("data directory " + path + ": cannot list (" + ec.message() + ")");
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    if (found.empty())
      throw DataError("data directory " + path + " has no text: no *.txt, *.md or *.text files");
    int64_t used = 0;
    for (const auto& [rel, full] : found) {
      const std::string bytes = readText(full.string());
      if (bytes.empty() || bytes == "\xEF\xBB\xBF") continue;
      addText(full.string(), bytes, tokenizer, options);
      ++used;
    }
    if (used == 0)
      throw DataError("data directory " + path + " has no text: its " +
                      std::to_string(found.size()) + " text file(s) are all empty");
  }

  void addBin(const std::string& path, const DatasetOptions& options) {
    const int width = options.binUint32 ? 4 : 2;
    const char* type = options.binUint32 ? "uint32" : "uint16";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw DataError("token file " + path + ": cannot open (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      throw DataError("token file " + path + ": cannot stat (" + std::strerror(err) + ")");
    }
    const uint64_t bytes = uint64_t(st.st_size);
    if (bytes == 0) {
      ::close(fd);
      throw DataError("token file " + path + " is empty (0 bytes)");
    }
    if (bytes % uint64_t(width) != 0) {
      ::close(fd);
      throw DataError("token file " + path + ": size " + std::to_string(bytes) +
                      " bytes is not a multiple of the " + std::to_string(width) + "-byte " + type +
                      " token size");
    }
    auto mapping = std::make_shared<Mapping>();
    void* addr = ::mmap(nullptr, size_t(bytes), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (addr == MAP_FAILED)
      throw DataError("token file " + path + ": cannot map (" + std::strerror(err) + ")");
    mapping->addr = addr;
    mapping->length = size_t(bytes);
    ::madvise(addr, size_t(bytes), MADV_SEQUENTIAL);

    const auto* raw = static_cast<const uint8_t*>(addr);
    const int64_t count = int64_t(bytes / uint64_t(width));
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t id = loadLittle(raw + i * width, width);
      if (int64_t(id) >= vocabSize)
        throw DataError("token file " + path + ": token id " + std::to_string(id) +
                        " at byte offset " + std::to_string(i * width) +
                        " is out of range (vocabulary size " + std::to_string(vocabSize) +
                        "; read as " + type + ")");
    }
    ::madvise(addr, size_t(bytes), MADV_RANDOM);

    Segment s;
    s.begin = total;
    s.count = count;
    s.mapping = std::move(mapping);
    s.raw = raw;
    s.width = width;
    segments.push_back(std::move(s));
    total += count;
    files.push_back(path);
  }

  void finish(const DatasetOptions& options) {
    if (!(options.valFraction >= 0.0 && options.valFraction < 1.0))
      throw DataError("dataset " + description + ": valFraction " +
                      (std::ostringstream() << options.valFraction).str() + " is not in [0, 1)");
    valFraction = options.valFraction;
    valSize = int64_t(std::floor(static_cast<long double>(total) * options.valFraction));
    valSize = std::clamp<int64_t>(valSize, 0, total);
  }

  void copy(int64_t begin, int64_t count, int32_t* out) const {
    auto it = std::upper_bound(segments.begin(), segments.end(), begin,
                               [](int64_t v, const Segment& s) { return v < s.begin; });
    --it;
    while (count > 0) {
      const Segment& s = *it;
      const int64_t local = begin - s.begin;
      const int64_t take = std::min(count, s.count - local);
      if (s.owned) {
        std::memcpy(out, s.owned->data() + local, size_t(take) * sizeof(int32_t));
      } else if (s.width == 2) {
        const uint8_t* p = s.raw + local * 2;
        if constexpr (std::endian::native == std::endian::little) {
          for (int64_t i = 0; i < take; ++i) {
            uint16_t v;
            std::memcpy(&v, p + i * 2, 2);
            out[i] = int32_t(v);
          }
        } else {
          for (int64_t i = 0; i < take; ++i) out[i] = int32_t(loadLittle(p + i * 2, 2));
        }
      } else {
        const uint8_t* p = s.raw + local * 4;
        if constexpr (std::endian::native == std::endian::little) {
          std::memcpy(out, p, size_t(take) * 4);
        } else {
          for (int64_t i = 0; i < take; ++i) out[i] = int32_t(loadLittle(p + i * 4, 4));
        }
      }
      out += take;
      begin += take;
      count -= take;
      ++it;
    }
  }
};

namespace {

std::string joinPaths(const std::vector<std::string>& paths) {
  std::string out;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i) out += ", ";
    if (i == 8) {
      out += "... (" + std::to_string(paths.size()) + " paths)";
      break;
    }
    out += paths[i];
  }
  return out;
}

}  // namespace

TokenDataset::TokenDataset(const std::vector<std::string>& paths, const Tokenizer& tokenizer,
                           const DatasetOptions& options)
    : m_impl(std::make_unique<Impl>()) {
  Impl& d = *m_impl;
  d.description = joinPaths(paths);
  d.vocabSize = tokenizer.vocabSize();
  if (paths.empty()) throw DataError("dataset: no data paths given");
  if (options.separator && (*options.separator < 0 || *options.separator >= d.vocabSize))
    throw DataError("dataset " + d.description + ": separator id " +
                    std::to_string(*options.separator) + " is not in the vocabulary (size " +
                    std::to_string(d.vocabSize) + ")");
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) throw DataError("data path " + path + ": no such file or directory");
    if (fs::is_directory(st)) {
      d.addDirectory(path, tokenizer, options);
    } else if (!fs::is_regular_file(st)) {
      throw DataError("data path " + path + ": not a regular file or directory");
    } else if (lowerExtension(path) == ".bin") {
      d.addBin(path, options);
    } else {
      d.addTextFile(path, tokenizer, options);
    }
  }
  d.finish(options);
}

TokenDataset::TokenDataset(std::vector<int32_t> tokens, int64_t vocabSize,
                           const DatasetOptions& options)
    : m_impl(std::make_unique<Impl>()) {
  Impl& d = *m_impl;
  d.description = "in-memory tokens";
  d.vocabSize = vocabSize;
  if (tokens.empty()) throw DataError("dataset in-memory tokens: no tokens");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocabSize)
      throw DataError("dataset in-memory tokens: id " + std::to_string(tokens[i]) + " at index " +
                      std::to_string(i) + " is out of range (vocabulary size " +
                      std::to_string(vocabSize) + ")");
  }
  Segment s;
  s.count = int64_t(tokens.size());
  s.owned = std::make_shared<std::vector<int32_t>>(std::move(tokens));
  d.segments.push_back(std::move(s));
  d.total = d.segments.back().count;
  d.finish(options);
}

TokenDataset::~TokenDataset() = default;
TokenDataset::TokenDataset(TokenDataset&&) noexcept = default;
TokenDataset& TokenDataset::operator=(TokenDataset&&) noexcept = default;

int64_t TokenDataset::size() const {
  return m_impl->total;
}
int64_t TokenDataset::vocabSize() const {
  return m_impl->vocabSize;
}
double TokenDataset::valFraction() const {
  return m_impl->valFraction;
}
const std::vector<std::string>& TokenDataset::files() const {
  return m_impl->files;
}
int64_t TokenDataset::documentCount() const {
  return m_impl->documents;
}
const std::string& TokenDataset::description() const {
  return m_impl->description;
}

int64_t TokenDataset::splitBegin(Split split) const {
  return split == Split::Train ? 0 : m_impl->total - m_impl->valSize;
}

int64_t TokenDataset::splitSize(Split split) const {
  return split == Split::Train ? m_impl->total - m_impl->valSize : m_impl->valSize;
}

void TokenDataset::read(Split split, int64_t offset, int64_t count, int32_t* out) const {
  const int64_t size = splitSize(split);
  if (offset < 0 || count < 0 || offset > size || count > size - offset)
    throw std::out_of_range("TokenDataset::read: [" + std::to_string(offset) + ", " +
                            std::to_string(offset + count) + ") is outside the " +
                            splitName(split) + " split of " + std::to_string(size) + " tokens");
  if (count > 0) m_impl->copy(splitBegin(split) + offset, count, out);
}

std::vector<int32_t> TokenDataset::read(Split split, int64_t offset, int64_t count) const {
  std::vector<int32_t> out(size_t(std::max<int64_t>(count, 0)));
  read(split, offset, count, out.data());
  return out;
}

void TokenDataset::requireWindow(Split split, int64_t seqLen) const {
  const Impl& d = *m_impl;
  if (seqLen < 2)
    throw DataError("dataset " + d.description + ": sequence length " + std::to_string(seqLen) +
                    " is too short; a window needs at least 2 tokens (one input, one target)");
  const int64_t have = splitSize(split);
  if (have >= seqLen) return;
  std::string message = "dataset " + d.description + ": the " + splitName(split) + " split has " +
                        std::to_string(have) + " tokens";
  if (split == Split::Val) {
    std::ostringstream fraction;
    fraction << d.valFraction * 100.0;
    message += " (the last " + fraction.str() + "% of " + std::to_string(d.total) + ")";
  } else {
    message += " (of " + std::to_string(d.total) + ", " + std::to_string(d.valSize) +
               " held out for validation)";
  }
  message += ", fewer than one window of " + std::to_string(seqLen) +
             " tokens (it needs at least seqLen = " + std::to_string(seqLen) + ")";
  throw DataError(message);
}

// ---------------------------------------------------------------------------

uint64_t splitmix64At(uint64_t seed, uint64_t index) {
  return mix64(seed + (index + 1) * kGamma);
}

WindowSampler::WindowSampler(const TokenDataset& data, Split split, int64_t seqLen, uint64_t seed)
    : m_data(&data), m_split(split), m_seqLen(seqLen), m_seed(seed) {
  data.requireWindow(split, seqLen);
  m_startCount = data.splitSize(split) - seqLen + 1;
}

int64_t WindowSampler::windowStart(uint64_t index) const {
  const uint64_t x = splitmix64At(m_seed, index);
  return int64_t((static_cast<unsigned __int128>(x) * uint64_t(m_startCount)) >> 64);
}

void WindowSampler::next(int32_t* out, int64_t batch) {
  if (batch < 0) throw std::invalid_argument("WindowSampler::next: negative batch size");
  for (int64_t b = 0; b < batch; ++b) {
    m_data->read(m_split, windowStart(m_position), m_seqLen, out + b * m_seqLen);
    ++m_position;
  }
}

std::vector<std::pair<int64_t, int64_t>> consecutiveWindows(int64_t tokens, int64_t T) {
  if (T <= 0)
    throw std::invalid_argument("consecutiveWindows: window length " + std::to_string(T) +
                                " is not positive");
  std::vector<std::pair<int64_t, int64_t>> out;
  if (tokens < T) return out;
  out.reserve(size_t(tokens / T));
  for (int64_t begin = 0; begin + T <= tokens; begin += T) out.emplace_back(begin, begin + T);
  return out;
}

}  // namespace ckpt
