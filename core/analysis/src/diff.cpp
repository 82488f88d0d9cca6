// Checkpoint diff: structure by normalised name, then per-tensor metrics
// streamed chunk by chunk from mapped bytes, one tensor per worker thread.
#include "ckpt/analysis/diff.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>

#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/zip_archive.h"
#include "diff_internal.h"

namespace ckpt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------- sums ---

struct Sums {
  double aa = 0, bb = 0, ab = 0, dd = 0, absd = 0, maxd = 0;
  uint64_t pairs = 0;
  uint64_t nanA = 0, infA = 0, nanB = 0, infB = 0;

  void merge(const Sums& o) {
    aa += o.aa;
    bb += o.bb;
    ab += o.ab;
    dd += o.dd;
    absd += o.absd;
    maxd = std::max(maxd, o.maxd);
    pairs += o.pairs;
    nanA += o.nanA;
    infA += o.infA;
    nanB += o.nanB;
    infB += o.infB;
  }
};

// Element loads that tolerate any alignment (legacy files place storages at
// arbitrary offsets); they compile to plain (vector) loads.
struct FromDouble {
  static double at(const void* p, size_t i) { return static_cast<const double*>(p)[i]; }
};
struct FromFloatBytes {
  static double at(const void* p, size_t i) {
    float f;
    std::memcpy(&f, static_cast<const uint8_t*>(p) + i * sizeof(float), sizeof f);
    return f;
  }
};

// The common case, all values finite: independent lanes so that the compiler
// keeps several vector accumulators busy (it may not reorder one sum).
template <typename Load>
[[gnu::always_inline]] inline Sums sumFinite(const void* a, const void* b, size_t n) {
  constexpr size_t L = 8;
  double aa[L] = {}, bb[L] = {}, ab[L] = {}, dd[L] = {}, ad[L] = {}, mx[L] = {};
  size_t i = 0;
  for (; i + L <= n; i += L) {
    for (size_t l = 0; l < L; ++l) {
      const double x = Load::at(a, i + l), y = Load::at(b, i + l), d = y - x, ax = std::fabs(d);
      aa[l] += x * x;
      bb[l] += y * y;
      ab[l] += x * y;
      dd[l] += d * d;
      ad[l] += ax;
      mx[l] = mx[l] < ax ? ax : mx[l];
    }
  }
  for (size_t l = 0; i < n; ++i, ++l) {
    const double x = Load::at(a, i), y = Load::at(b, i), d = y - x, ax = std::fabs(d);
    aa[l] += x * x;
    bb[l] += y * y;
    ab[l] += x * y;
    dd[l] += d * d;
    ad[l] += ax;
    mx[l] = mx[l] < ax ? ax : mx[l];
  }
  Sums s;
  for (size_t l = 0; l < L; ++l) {
    s.aa += aa[l];
    s.bb += bb[l];
    s.ab += ab[l];
    s.dd += dd[l];
    s.absd += ad[l];
    // A NaN difference must reach the finiteness check below.
    s.maxd = (mx[l] != mx[l] || s.maxd < mx[l]) ? mx[l] : s.maxd;
  }
  s.pairs = n;
  return s;
}

// AVX2 where the CPU has it (picked once at load time), SSE2 otherwise: the
// loop is the whole cost of a diff once the bytes are in the page cache.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define CKPT_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define CKPT_CLONES
#endif

CKPT_CLONES Sums sumFiniteDouble(const double* a, const double* b, size_t n) {
  return sumFinite<FromDouble>(a, b, n);
}

// The same sums for float32 bytes, written with vector types so that the
// code does not depend on what the optimiser makes of the lane loop (GCC's
// -O3 made it 2x slower than -O2). Lane l sums elements i = l (mod 8), as
// sumFinite does, so both give the same bits.
CKPT_CLONES Sums sumFiniteFloat(const uint8_t* a, const uint8_t* b, size_t n) {
  typedef double V __attribute__((vector_size(32)));
  typedef float F __attribute__((vector_size(16)));
  typedef int64_t I __attribute__((vector_size(32)));
  const I absMask = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
  V aa0 = {}, aa1 = {}, bb0 = {}, bb1 = {}, ab0 = {}, ab1 = {}, dd0 = {}, dd1 = {}, ad0 = {},
    ad1 = {}, mx0 = {}, mx1 = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    F fa0, fa1, fb0, fb1;
    std::memcpy(&fa0, a + 4 * i, 16);
    std::memcpy(&fa1, a + 4 * i + 16, 16);
    std::memcpy(&fb0, b + 4 * i, 16);
    std::memcpy(&fb1, b + 4 * i + 16, 16);
    const V x0 = __builtin_convertvector(fa0, V), x1 = __builtin_convertvector(fa1, V);
    const V y0 = __builtin_convertvector(fb0, V), y1 = __builtin_convertvector(fb1, V);
    const V d0 = y0 - x0, d1 = y1 - x1;
    const V e0 = V(I(d0) & absMask), e1 = V(I(d1) & absMask);
    aa0 += x0 * x0;
    aa1 += x1 * x1;
    bb0 += y0 * y0;
    bb1 += y1 * y1;
    ab0 += x0 * y0;
    ab1 += x1 * y1;
    dd0 += d0 * d0;
    dd1 += d1 * d1;
    ad0 += e0;
    ad1 += e1;
    mx0 = mx0 < e0 ? e0 : mx0;
    mx1 = mx1 < e1 ? e1 : mx1;
  }
  double aa[8], bb[8], ab[8], dd[8], ad[8], mx[8];
  for (int l = 0; l < 4; ++l) {
    aa[l] = aa0[l], aa[l + 4] = aa1[l];
    bb[l] = bb0[l], bb[l + 4] = bb1[l];
    ab[l] = ab0[l], ab[l + 4] = ab1[l];
    dd[l] = dd0[l], dd[l + 4] = dd1[l];
    ad[l] = ad0[l], ad[l + 4] = ad1[l];
    mx[l] = mx0[l], mx[l + 4] = mx1[l];
  }
  for (size_t l = 0; i < n; ++i, ++l) {
    const double x = FromFloatBytes::at(a, i), y = FromFloatBytes::at(b, i), d = y - x,
                 e = std::fabs(d);
    aa[l] += x * x;
    bb[l] += y * y;
    ab[l] += x * y;
    dd[l] += d * d;
    ad[l] += e;
    mx[l] = mx[l] < e ? e : mx[l];
  }
  Sums s;
  for (size_t l = 0; l < 8; ++l) {
    s.aa += aa[l];
    s.bb += bb[l];
    s.ab += ab[l];
    s.dd += dd[l];
    s.absd += ad[l];
    s.maxd = s.maxd < mx[l] ? mx[l] : s.maxd;  // NaN inputs are caught by the sums of squares
  }
  s.pairs = n;
  return s;
}

// Some value is NaN or infinite: count them per side and leave those pairs out.
Sums sumChunkCareful(const double* a, const double* b, size_t n) {
  Sums s;
  for (size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    const bool fx = std::isfinite(x), fy = std::isfinite(y);
    if (!fx) ++(std::isnan(x) ? s.nanA : s.infA);
    if (!fy) ++(std::isnan(y) ? s.nanB : s.infB);
    if (!fx || !fy) continue;
    const double d = y - x, ax = std::fabs(d);
    s.aa += x * x;
    s.bb += y * y;
    s.ab += x * y;
    s.dd += d * d;
    s.absd += ax;
    s.maxd = std::max(s.maxd, ax);
    ++s.pairs;
  }
  return s;
}

// Every term is >= 0 (or NaN): a finite total means every input was finite.
bool allFinite(const Sums& s) {
  return std::isfinite(s.aa + s.bb + s.dd + s.absd + s.maxd);
}

void finish(TensorDiff& t, const Sums& s) {
  t.finitePairs = s.pairs;
  t.nanA = s.nanA;
  t.infA = s.infA;
  t.nanB = s.nanB;
  t.infB = s.infB;
  t.normA = std::sqrt(s.aa);
  t.normB = std::sqrt(s.bb);
  t.normDiff = std::sqrt(s.dd);
  t.dot = s.ab;
  if (s.pairs == 0 && t.numel > 0) {  // nothing finite to compare
    t.relL2 = t.cosine = t.maxAbs = t.meanAbs = kNaN;
    return;
  }
  t.relL2 = t.normA > 0 ? t.normDiff / t.normA : (t.normDiff == 0 ? 0.0 : kInf);
  if (t.normA > 0 && t.normB > 0)
    t.cosine = s.ab / (t.normA * t.normB);
  else
    t.cosine = (t.normA == 0 && t.normB == 0) ? 1.0 : 0.0;
  t.maxAbs = s.maxd;
  t.meanAbs = s.pairs ? s.absd / double(s.pairs) : 0.0;
}

// ------------------------------------------------------- mapped regions ---

// Pages of a mapped tensor that have been read are handed back as the scan
// passes them: the page cache keeps them, but they leave this process's
// resident set, so a 150 MB embedding does not count 150 MB against it.
class PageDropper {
 public:
  PageDropper(const CheckpointFile& file, const TensorData& data, bool enabled) {
    const TensorInfo& t = data.info();
    if (!enabled || t.numel() == 0 || !t.isContiguous() || dtypeElementsPerByte(t.dtype) != 1)
      return;
    if (!isFileMapping(file, t)) return;
    m_base = data.elementPtr(uint64_t(t.storageOffset));
    m_elemSize = size_t(dtypeSize(t.dtype));
    m_page = uintptr_t(::sysconf(_SC_PAGESIZE));
    m_next = alignUp(uintptr_t(m_base));
  }

  // Elements [0, done) have been read.
  void passed(uint64_t done) {
    if (!m_base) return;
    const uintptr_t end = (uintptr_t(m_base) + done * m_elemSize) & ~(m_page - 1);
    if (end < m_next + kStep) return;
    ::madvise(reinterpret_cast<void*>(m_next), end - m_next, MADV_DONTNEED);
    m_next = end;
  }

 private:
  static constexpr uintptr_t kStep = 4u << 20;

  // Bytes that come straight from the file (a stored zip record, legacy,
  // safetensors); an inflated record lives on the heap and must stay.
  static bool isFileMapping(const CheckpointFile& file, const TensorInfo& t) {
    if (t.storage < 0) return false;
    if (!file.zip()) return true;
    const StorageInfo& s = file.storages()[size_t(t.storage)];
    if (s.zipEntry < 0) return false;
    return file.zip()->entries()[size_t(s.zipEntry)].method == 0;
  }
  uintptr_t alignUp(uintptr_t p) const { return (p + m_page - 1) & ~(m_page - 1); }

  const uint8_t* m_base = nullptr;
  size_t m_elemSize = 0;
  uintptr_t m_page = 4096;
  uintptr_t m_next = 0;
};

// ------------------------------------------------------------ the walk ---

struct Side {
  const CheckpointFile* file = nullptr;
  std::vector<StateEntry> entries;
  std::string stateKey;
  bool compiledPrefix = false;
  bool ddpPrefix = false;
};

// The state dict's entries, or every tensor by its path when the file holds
// none (an arbitrary dict of tensors, a list).
Side collect(const CheckpointFile& file) {
  Side s;
  s.file = &file;
  const CheckpointView view(file);
  if (view.modelState()) {
    s.entries = view.entries();
    s.stateKey = view.modelStateKey();
    s.compiledPrefix = view.compiledPrefix();
    s.ddpPrefix = view.ddpPrefix();
    if (!s.entries.empty()) return s;
    // A model state of nested dicts (Megatron-LM before mcore:
    // model.language_model.encoder.<name>): its tensors by their dotted
    // path below it, not none at all.
    walkTensors(view.modelState(), [&](const Value* t, const TensorPath& path) {
      StateEntry e;
      e.name = e.rawKey = joinPath(path);
      e.tensor = int(t->index);
      s.entries.push_back(std::move(e));
    });
    if (!s.entries.empty()) {
      s.stateKey += " (nested)";
      return s;
    }
  }
  s.stateKey = "(all tensors)";
  const auto& tensors = file.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    StateEntry e;
    e.name = e.rawKey = joinPath(tensors[i].path);
    e.tensor = int(i);
    s.entries.push_back(std::move(e));
  }
  return s;
}

struct Job {
  size_t diffIndex = 0;
  uint64_t bytes = 0;
};

class Runner {
 public:
  Runner(const CheckpointFile& a, const CheckpointFile& b, const DiffOptions& o,
         CheckpointDiff& diff)
      : m_a(a), m_b(b), m_options(o), m_diff(diff) {}

  void run(std::vector<Job> jobs) {
    // Largest first: the embedding starts at once and the small tensors fill
    // the gaps, so the threads finish together.
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const Job& x, const Job& y) { return x.bytes > y.bytes; });
    m_jobs = std::move(jobs);
    for (const Job& j : m_jobs) m_total += j.bytes;
    int threads = m_options.threads;
    if (threads <= 0)
      threads = int(std::min(2u, std::max(1u, std::thread::hardware_concurrency())));
    threads = int(std::min<size_t>(size_t(threads), std::max<size_t>(1, m_jobs.size())));
    if (!report(0)) m_stop = true;
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back([this] { work(); });
    work();
    for (std::thread& t : pool) t.join();
    if (m_failure) std::rethrow_exception(m_failure);
    if (!m_stop && m_total > 0) report(m_total, /*force=*/true);
    m_diff.cancelled = m_stop.load();
    m_diff.bytesCompared = m_done.load();
  }

 private:
  void work() {
    const size_t chunk = std::max<size_t>(256, m_options.chunkElements);
    std::vector<double> bufA(chunk), bufB(chunk);
    while (!m_stop) {
      const size_t j = m_next.fetch_add(1);
      if (j >= m_jobs.size()) return;
      TensorDiff& t = m_diff.tensors[m_jobs[j].diffIndex];
      uint64_t reported = 0;  // bytes of this job already counted in m_done
      try {
        compare(t, bufA.data(), bufB.data(), chunk, reported);
      } catch (const FormatError& e) {
        t.error = e.what();
        t.computed = true;
        const uint64_t rest = m_jobs[j].bytes - std::min(reported, m_jobs[j].bytes);
        if (!report(m_done.fetch_add(rest) + rest)) m_stop = true;
      } catch (...) {
        std::lock_guard lock(m_mutex);
        if (!m_failure) m_failure = std::current_exception();
        m_stop = true;
      }
    }
  }

  void compare(TensorDiff& t, double* bufA, double* bufB, size_t chunk, uint64_t& reported) {
    const auto [da, db] = m_options.tensorBytes ? m_options.tensorBytes(t)
                                                : std::pair{m_a.tensorData(size_t(t.tensorA)),
                                                            m_b.tensorData(size_t(t.tensorB))};
    // Bytes handed by tensorBytes may be a heap buffer (fetched), whose pages
    // must not be dropped: only a file's own mapping is.
    const bool own = !m_options.tensorBytes;
    PageDropper dropA(m_a, da, own), dropB(m_b, db, own);
    const uint64_t n = da.numel();
    const uint64_t bytesPerElem = uint64_t(dtypeSize(t.dtypeA) + dtypeSize(t.dtypeB));
    Sums total;
    // float32 on both sides, contiguous, little-endian: summed straight from
    // the mapped bytes; anything else goes through TensorData::read.
    // (Not for a tensor made of chunks: its bytes are in several files.)
    const bool direct = t.dtypeA == DType::Float32 && t.dtypeB == DType::Float32 && !da.chunked() &&
                        !db.chunked() && da.info().isContiguous() && db.info().isContiguous() &&
                        !da.bigEndian() && !db.bigEndian() && n > 0;
    const uint8_t* pa = direct ? da.elementPtr(uint64_t(da.info().storageOffset)) : nullptr;
    const uint8_t* pb = direct ? db.elementPtr(uint64_t(db.info().storageOffset)) : nullptr;
    for (uint64_t first = 0; first < n;) {
      if (m_stop) return;
      const size_t want = size_t(std::min<uint64_t>(chunk, n - first));
      Sums s;
      if (direct) s = sumFiniteFloat(pa + first * 4, pb + first * 4, want);
      if (!direct || !allFinite(s)) {
        const size_t got = da.read(first, want, bufA);
        if (db.read(first, want, bufB) != got || got != want)
          fail("tensor " + t.name + ": short read");
        if (direct || !allFinite(s = sumFiniteDouble(bufA, bufB, want)))
          s = sumChunkCareful(bufA, bufB, want);
      }
      total.merge(s);
      first += want;
      dropA.passed(first);
      dropB.passed(first);
      // Progress every ~4 MB: cheap for the callback, smooth for a progress bar.
      const uint64_t bytes = first * bytesPerElem;
      if (bytes - reported >= (4u << 20) || first == n) {
        const uint64_t now = m_done.fetch_add(bytes - reported) + (bytes - reported);
        reported = bytes;
        if (!report(now)) {
          m_stop = true;
          return;
        }
      }
    }
    finish(t, total);
    t.computed = true;
  }

  bool report(uint64_t done, bool force = false) {
    if (!m_options.progress) return true;
    std::lock_guard lock(m_mutex);
    if (m_cancelled) return false;
    if (!force && done < m_lastReported) return true;  // another thread got further already
    m_lastReported = done;
    if (!m_options.progress(size_t(done), size_t(m_total))) m_cancelled = true;
    return !m_cancelled;
  }

  const CheckpointFile& m_a;
  const CheckpointFile& m_b;
  const DiffOptions& m_options;
  CheckpointDiff& m_diff;
  std::vector<Job> m_jobs;
  uint64_t m_total = 0;
  std::atomic<size_t> m_next{0};
  std::atomic<uint64_t> m_done{0};
  std::atomic<bool> m_stop{false};
  std::mutex m_mutex;  // the callback, m_failure
  bool m_cancelled = false;
  uint64_t m_lastReported = 0;
  std::exception_ptr m_failure;
};

}  // namespace

std::vector<size_t> CheckpointDiff::topByRelL2(size_t n) const {
  std::vector<size_t> idx;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].computed && tensors[i].error.empty()) idx.push_back(i);
  auto key = [&](size_t i) { return tensors[i].relL2; };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    const double kx = key(x), ky = key(y);
    const bool nx = std::isnan(kx), ny = std::isnan(ky);
    if (nx != ny) return ny;  // NaN last
    if (!nx && kx != ky) return kx > ky;
    return tensors[x].name < tensors[y].name;
  });
  if (idx.size() > n) idx.resize(n);
  return idx;
}

size_t CheckpointDiff::changedDtypeCount() const {
  return size_t(std::count_if(tensors.begin(), tensors.end(),
                              [](const TensorDiff& t) { return t.dtypeA != t.dtypeB; }));
}

size_t CheckpointDiff::errorCount() const {
  return size_t(std::count_if(tensors.begin(), tensors.end(),
                              [](const TensorDiff& t) { return !t.error.empty(); }));
}

CheckpointDiff diffCheckpoints(const CheckpointFile& a, const CheckpointFile& b,
                               const DiffOptions& options) {
  CheckpointDiff diff;
  diff.pathA = a.path();
  diff.pathB = b.path();
  const Side sa = collect(a);
  const Side sb = collect(b);
  diff.stateKeyA = sa.stateKey;
  diff.stateKeyB = sb.stateKey;
  diff.compiledPrefixA = sa.compiledPrefix;
  diff.compiledPrefixB = sb.compiledPrefix;
  diff.ddpPrefixA = sa.ddpPrefix;
  diff.ddpPrefixB = sb.ddpPrefix;

  // Name -> first entry; a name seen twice (a key with and one without
  // "_orig_mod.": normaliseStateNames) compares its first occurrence and says so.
  auto index = [&diff](const Side& s, const char* which) {
    std::unordered_map<std::string, size_t> m;
    for (size_t i = 0; i < s.entries.size(); ++i)
      if (!m.emplace(s.entries[i].name, i).second)
        diff.notes.push_back(std::string(which) + ": " + s.entries[i].rawKey +
                             " repeats the name " + s.entries[i].name + "; the first is compared");
    return m;
  };
  const auto inA = index(sa, "a");
  const auto inB = index(sb, "b");
  auto tiedName = [](const Side& s, size_t i) -> std::string {
    const int t = s.entries[i].tiedTo;
    return t >= 0 ? s.entries[size_t(t)].name : std::string();
  };

  std::vector<Job> jobs;
  std::vector<std::pair<size_t, std::string>> copies;  // diff index, tied-to name
  std::unordered_map<std::string, size_t> diffIndex;
  for (size_t i = 0; i < sa.entries.size(); ++i) {
    const StateEntry& ea = sa.entries[i];
    if (inA.at(ea.name) != i) continue;
    const auto it = inB.find(ea.name);
    if (it == inB.end()) {
      diff.removed.push_back(ea.name);
      continue;
    }
    const StateEntry& eb = sb.entries[it->second];
    const TensorInfo& ta = a.tensors()[size_t(ea.tensor)];
    const TensorInfo& tb = b.tensors()[size_t(eb.tensor)];
    if (ta.shape != tb.shape) {
      diff.changedShape.push_back({ea.name, ta.shape, tb.shape, ta.dtype, tb.dtype});
      continue;
    }
    TensorDiff t;
    t.name = ea.name;
    t.tensorA = ea.tensor;
    t.tensorB = eb.tensor;
    t.dtypeA = ta.dtype;
    t.dtypeB = tb.dtype;
    t.shape = ta.shape;
    t.numel = ta.numel();
    t.layer = classifyTensorName(t.name);
    const std::string tieA = tiedName(sa, i), tieB = tiedName(sb, it->second);
    const size_t at = diff.tensors.size();
    if (!tieA.empty() && tieA == tieB && diffIndex.count(tieA)) {
      t.tiedTo = tieA;  // one storage on both sides: computed once
      copies.emplace_back(at, tieA);
    } else {
      if (tieA != tieB) {
        const std::string& tie = tieA.empty() ? tieB : tieA;
        diff.notes.push_back(t.name + " is tied to " + tie + " in " + (tieA.empty() ? "b" : "a") +
                             " only");
      }
      jobs.push_back({at, ta.nbytes() + tb.nbytes()});
    }
    diffIndex.emplace(t.name, at);
    diff.tensors.push_back(std::move(t));
  }
  for (size_t i = 0; i < sb.entries.size(); ++i)
    if (inB.at(sb.entries[i].name) == i && !inA.count(sb.entries[i].name))
      diff.added.push_back(sb.entries[i].name);

  diff.metadata = diffMetadata(a, b);

  Runner(a, b, options, diff).run(std::move(jobs));

  for (const auto& [at, tie] : copies) {
    TensorDiff& t = diff.tensors[at];
    const TensorDiff& src = diff.tensors[diffIndex.at(tie)];
    if (!src.computed) continue;
    TensorDiff copy = src;
    copy.name = t.name;
    copy.tensorA = t.tensorA;
    copy.tensorB = t.tensorB;
    copy.layer = t.layer;
    copy.tiedTo = tie;
    t = std::move(copy);
  }
  detail::aggregateLayers(diff);
  if (options.topN > 0) diff.top = diff.topByRelL2(options.topN);
  return diff;
}

}  // namespace ckpt
