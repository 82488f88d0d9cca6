#include "ckpt/analysis/tensor_stats.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <thread>

namespace ckpt {
namespace {

// Doubles per read: 128 KiB, well inside L2, large enough that the per-chunk
// bookkeeping (merges, progress checks) costs nothing.
constexpr size_t kChunk = 16384;
// Below this many elements one thread finishes before a second would start.
constexpr uint64_t kParallelMin = 1u << 20;

int threadCount(uint64_t n, int asked) {
  if (n < kParallelMin) return 1;
  if (asked > 0) return asked;
  const unsigned hw = std::thread::hardware_concurrency();
  return int(std::clamp(hw, 1u, 4u));
}

// Shared by the threads of one call: how far they got, whether to stop.
struct Control {
  const StatsProgress& progress;
  uint64_t total = 0;  // elements over all passes
  uint64_t base = 0;   // elements of earlier passes
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};

  Control(const StatsProgress& p, uint64_t t) : progress(p), total(t) {}
  // Caller's thread only: the callback is not required to be thread-safe.
  void report() {
    if (progress && !progress(base + done.load(std::memory_order_relaxed), total))
      stop.store(true, std::memory_order_relaxed);
  }
};

// Streams elements [begin, end) through fn(firstIndex, values, n) in chunks.
// The reporting thread calls the progress callback about every 20 ms.
template <typename Fn>
void stream(const TensorData& data, uint64_t begin, uint64_t end, Control& ctl, bool reporter,
            Fn&& fn) {
  std::vector<double> buf(kChunk);
  auto last = std::chrono::steady_clock::now();
  uint64_t i = begin;
  while (i < end && !ctl.stop.load(std::memory_order_relaxed)) {
    const size_t n = data.read(i, size_t(std::min<uint64_t>(kChunk, end - i)), buf.data());
    if (n == 0) break;
    fn(i, buf.data(), n);
    i += n;
    ctl.done.fetch_add(n, std::memory_order_relaxed);
    if (reporter && ctl.progress) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last > std::chrono::milliseconds(20)) {
        last = now;
        ctl.report();
      }
    }
  }
}

// Runs perRange(partial, begin, end, isReporter) over `threads` slices of
// [0, numel); the calling thread takes the first. Exceptions from any
// thread stop the others and are rethrown here.
template <typename Partial, typename Fn>
std::vector<Partial> parallel(const TensorData& data, int threads, Control& ctl,
                              const Partial& init, Fn&& perRange) {
  const uint64_t n = data.numel();
  std::vector<Partial> parts(static_cast<size_t>(threads), init);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  // Slices on chunk boundaries: results do not depend on where a slice starts.
  const uint64_t chunks = (n + kChunk - 1) / kChunk;
  auto bound = [&](int t) {
    return std::min<uint64_t>(n, chunks * uint64_t(t) / uint64_t(threads) * kChunk);
  };
  auto run = [&](int t) {
    try {
      perRange(parts[size_t(t)], bound(t), bound(t + 1), t == 0);
    } catch (...) {
      errors[size_t(t)] = std::current_exception();
      ctl.stop.store(true);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(run, t);
  run(0);
  for (std::thread& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return parts;
}

// Count, extrema and a (mean, M2) pair per chunk, merged with Chan et al.'s
// formula: each chunk's M2 is taken about its own mean (no cancellation),
// and the merge is exact up to rounding, so 38M float32 values keep ~15
// significant digits without per-element divisions (Welford's cost).
struct StatsAcc {
  uint64_t count = 0, finite = 0, zeros = 0, nans = 0, posInf = 0, negInf = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double mean = 0.0, m2 = 0.0;
  double sumsq = 0.0, sumsqC = 0.0;  // Kahan-compensated over chunks
  std::vector<double> scratch;

  void addFinite(const double* v, size_t m, double s) {
    if (m == 0) return;
    double mn0 = v[0], mx0 = v[0];
    const double cm = s / double(m);
    double q[4] = {0, 0, 0, 0}, sq[4] = {0, 0, 0, 0}, mn[4] = {mn0, mn0, mn0, mn0},
           mx[4] = {mx0, mx0, mx0, mx0};
    size_t i = 0;
    for (; i + 4 <= m; i += 4) {
      for (int k = 0; k < 4; ++k) {
        const double x = v[i + size_t(k)];
        const double d = x - cm;
        q[k] += d * d;
        sq[k] += x * x;
        mn[k] = x < mn[k] ? x : mn[k];
        mx[k] = x > mx[k] ? x : mx[k];
      }
    }
    for (; i < m; ++i) {
      const double x = v[i];
      const double d = x - cm;
      q[0] += d * d;
      sq[0] += x * x;
      mn[0] = x < mn[0] ? x : mn[0];
      mx[0] = x > mx[0] ? x : mx[0];
    }
    const double cq = (q[0] + q[1]) + (q[2] + q[3]);
    merge(m, cm, cq);
    min = std::min({min, mn[0], mn[1], mn[2], mn[3]});
    max = std::max({max, mx[0], mx[1], mx[2], mx[3]});
    kahan((sq[0] + sq[1]) + (sq[2] + sq[3]));
  }

  void merge(uint64_t m, double cm, double cq) {
    if (m == 0) return;
    if (finite == 0) {
      finite = m;
      mean = cm;
      m2 = cq;
      return;
    }
    const double na = double(finite), nb = double(m), nt = na + nb;
    const double delta = cm - mean;
    mean += delta * (nb / nt);
    m2 += cq + delta * delta * (na * nb / nt);
    finite += m;
  }

  void kahan(double x) {
    const double y = x - sumsqC;
    const double t = sumsq + y;
    sumsqC = (t - sumsq) - y;
    sumsq = t;
  }

  void addChunk(const double* x, size_t n) {
    count += n;
    double s[4] = {0, 0, 0, 0};
    uint64_t z = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (int k = 0; k < 4; ++k) {
        s[k] += x[i + size_t(k)];
        z += x[i + size_t(k)] == 0.0;
      }
    }
    for (; i < n; ++i) {
      s[0] += x[i];
      z += x[i] == 0.0;
    }
    zeros += z;  // NaN and Inf are never == 0
    double sum = (s[0] + s[1]) + (s[2] + s[3]);
    if (std::isfinite(sum)) {
      addFinite(x, n, sum);
      return;
    }
    // A NaN or an infinity somewhere (or a float64 sum that overflowed):
    // keep the finite values aside and count the rest.
    scratch.resize(n);
    size_t m = 0;
    sum = 0.0;
    for (i = 0; i < n; ++i) {
      const double v = x[i];
      if (std::isfinite(v)) {
        scratch[m++] = v;
        sum += v;
      } else if (std::isnan(v)) {
        ++nans;
      } else if (v > 0) {
        ++posInf;
      } else {
        ++negInf;
      }
    }
    addFinite(scratch.data(), m, sum);
  }

  void combine(const StatsAcc& o) {
    count += o.count;
    zeros += o.zeros;
    nans += o.nans;
    posInf += o.posInf;
    negInf += o.negInf;
    if (o.finite) {
      merge(o.finite, o.mean, o.m2);
      min = std::min(min, o.min);
      max = std::max(max, o.max);
    }
    kahan(o.sumsq);
    kahan(-o.sumsqC);
  }

  [[nodiscard]] TensorStats result() const {
    TensorStats r;
    r.count = count;
    r.finite = finite;
    r.zeros = zeros;
    r.nans = nans;
    r.posInf = posInf;
    r.negInf = negInf;
    if (finite > 0) {
      r.min = min;
      r.max = max;
      r.mean = mean;
    }
    if (finite > 1) r.std = std::sqrt(std::max(0.0, m2) / double(finite - 1));
    r.l2norm = std::sqrt(sumsq);
    return r;
  }
};

// torch.linspace(lo, hi, steps) element i (CPU kernel, float64): the first
// half counts up from lo, the second half down from hi.
double linspaceAt(double lo, double hi, int64_t steps, int64_t i) {
  if (steps == 1) return lo;
  const double step = (hi - lo) / double(steps - 1);
  return i < steps / 2 ? lo + step * double(i) : hi - step * double(steps - i - 1);
}

// torch.histc's bin placement (histogramdd's linear interpolation without
// a search): bin = int((x - lo) * bins / (hi - lo)), the same operations in
// the same order, `hi` into the last bin. Doubles throughout, so a value
// lands where torch.histc puts it for the float64 tensor.
struct HistogramAcc {
  std::vector<uint64_t> counts;
  void add(const double* x, size_t n, double lo, double hi) {
    const int64_t bins = int64_t(counts.size());
    const double nb = double(bins), width = hi - lo;
    for (size_t i = 0; i < n; ++i) {
      const double v = x[i];
      if (!(v >= lo && v <= hi)) continue;  // also NaN
      int64_t pos = int64_t((v - lo) * nb / width);
      if (pos >= bins) pos = bins - 1;
      ++counts[size_t(pos)];
    }
  }
};

// Sums of |x| and finite counts per heat-map cell. Walks each chunk in runs
// that stay within one cell (no division per element).
struct HeatAcc {
  int rows = 0, cols = 0;
  int64_t R = 0, C = 0;
  const std::vector<int64_t>* rowEdge = nullptr;  // rows + 1 matrix-row boundaries
  const std::vector<int64_t>* colEdge = nullptr;
  std::vector<double> sums;
  std::vector<uint64_t> counts;
  // Position of the next element: matrix row/col, cell row/col.
  int64_t r = 0, c = 0;
  int ci = 0, cj = 0;
  bool positioned = false;

  void seek(uint64_t k) {
    r = int64_t(k / uint64_t(C));
    c = int64_t(k % uint64_t(C));
    ci = int(std::upper_bound(rowEdge->begin(), rowEdge->end(), r) - rowEdge->begin()) - 1;
    cj = int(std::upper_bound(colEdge->begin(), colEdge->end(), c) - colEdge->begin()) - 1;
    positioned = true;
  }

  void add(uint64_t first, const double* x, size_t n) {
    if (!positioned) seek(first);
    const int64_t* ce = colEdge->data();
    size_t off = 0;
    while (off < n) {
      const size_t len = size_t(std::min<int64_t>(ce[cj + 1] - c, int64_t(n - off)));
      const double* p = x + off;
      double s = 0.0;
      for (size_t i = 0; i < len; ++i) s += std::fabs(p[i]);
      uint64_t k = len;
      if (!std::isfinite(s)) {
        s = 0.0;
        k = 0;
        for (size_t i = 0; i < len; ++i)
          if (std::isfinite(p[i])) {
            s += std::fabs(p[i]);
            ++k;
          }
      }
      const size_t cell = size_t(ci) * size_t(cols) + size_t(cj);
      sums[cell] += s;
      counts[cell] += k;
      off += len;
      c += int64_t(len);
      if (c == ce[cj + 1]) {
        ++cj;
        if (c == C) {
          c = 0;
          cj = 0;
          ++r;
          if (ci + 1 < rows && r >= (*rowEdge)[size_t(ci) + 1]) ++ci;
        }
      }
    }
  }
};

std::vector<int64_t> cellEdges(int64_t n, int cells) {
  std::vector<int64_t> e(size_t(cells) + 1);
  for (int i = 0; i <= cells; ++i) e[size_t(i)] = int64_t(i) * n / cells;
  return e;
}

std::optional<Histogram> histogramPass(const TensorData& data, int bins, double lo, double hi,
                                       Control& ctl, int threads) {
  Histogram h;
  if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi) || bins <= 0) return h;
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  h.lo = lo;
  h.hi = hi;
  HistogramAcc init;
  init.counts.assign(size_t(bins), 0);
  auto parts = parallel(
      data, threads, ctl, init, [&](HistogramAcc& acc, uint64_t b, uint64_t e, bool reporter) {
        stream(data, b, e, ctl, reporter,
               [&](uint64_t, const double* x, size_t n) { acc.add(x, n, lo, hi); });
      });
  if (ctl.stop) return std::nullopt;
  h.counts = std::move(parts[0].counts);
  for (size_t t = 1; t < parts.size(); ++t)
    for (size_t i = 0; i < h.counts.size(); ++i) h.counts[i] += parts[t].counts[i];
  return h;
}

}  // namespace

double Histogram::edge(int i) const {
  return linspaceAt(lo, hi, int64_t(counts.size()) + 1, i);
}

std::pair<int64_t, int64_t> matrixShape(const std::vector<int64_t>& shape) {
  if (shape.empty()) return {1, 1};
  if (shape.size() == 1) return {1, shape[0]};
  int64_t rest = 1;
  for (size_t i = 1; i < shape.size(); ++i) rest *= shape[i];
  return {shape[0], rest};
}

std::optional<TensorStats> computeStats(const TensorData& data, const StatsProgress& progress,
                                        int threads) {
  Control ctl(progress, data.numel());
  const int nt = threadCount(data.numel(), threads);
  auto parts = parallel(data, nt, ctl, StatsAcc{},
                        [&](StatsAcc& acc, uint64_t b, uint64_t e, bool reporter) {
                          stream(data, b, e, ctl, reporter,
                                 [&](uint64_t, const double* x, size_t n) { acc.addChunk(x, n); });
                        });
  if (ctl.stop) return std::nullopt;
  for (size_t t = 1; t < parts.size(); ++t) parts[0].combine(parts[t]);
  return parts[0].result();
}

std::optional<Histogram> computeHistogram(const TensorData& data, int bins, double lo, double hi,
                                          const StatsProgress& progress, int threads) {
  Control ctl(progress, data.numel());
  return histogramPass(data, bins, lo, hi, ctl, threadCount(data.numel(), threads));
}

std::optional<TensorAnalysis> analyzeTensor(const TensorData& data, const AnalysisOptions& options,
                                            const StatsProgress& progress) {
  const uint64_t n = data.numel();
  const int nt = threadCount(n, options.threads);
  const bool histogram = options.bins > 0;
  Control ctl(progress, histogram ? 2 * n : n);
  TensorAnalysis out;

  // Pass 1: statistics, and the heat map for matrices.
  const auto& shape = data.info().shape;
  const auto [R, C] = matrixShape(shape);
  const bool heat = shape.size() >= 2 && options.heatRows > 0 && options.heatCols > 0 && n > 0;
  std::vector<int64_t> rowEdge, colEdge;
  HeatAcc heatInit;
  if (heat) {
    heatInit.rows = int(std::min<int64_t>(options.heatRows, R));
    heatInit.cols = int(std::min<int64_t>(options.heatCols, C));
    heatInit.R = R;
    heatInit.C = C;
    rowEdge = cellEdges(R, heatInit.rows);
    colEdge = cellEdges(C, heatInit.cols);
    heatInit.rowEdge = &rowEdge;
    heatInit.colEdge = &colEdge;
  }
  struct Pass1 {
    StatsAcc stats;
    HeatAcc heat;
  };
  Pass1 init{StatsAcc{}, heatInit};
  auto parts =
      parallel(data, nt, ctl, init, [&](Pass1& acc, uint64_t b, uint64_t e, bool reporter) {
        if (heat) {
          acc.heat.sums.assign(size_t(acc.heat.rows) * size_t(acc.heat.cols), 0.0);
          acc.heat.counts.assign(acc.heat.sums.size(), 0);
        }
        stream(data, b, e, ctl, reporter, [&](uint64_t first, const double* x, size_t m) {
          acc.stats.addChunk(x, m);
          if (heat) acc.heat.add(first, x, m);
        });
      });
  if (ctl.stop) return std::nullopt;
  for (size_t t = 1; t < parts.size(); ++t) parts[0].stats.combine(parts[t].stats);
  out.stats = parts[0].stats.result();
  if (heat) {
    HeatMap& h = out.heatMap;
    h.sourceRows = R;
    h.sourceCols = C;
    h.rows = heatInit.rows;
    h.cols = heatInit.cols;
    h.values.assign(size_t(h.rows) * size_t(h.cols), TensorStats::kNaN);
    for (size_t i = 0; i < h.values.size(); ++i) {
      double s = 0.0;
      uint64_t k = 0;
      for (const Pass1& p : parts) {
        s += p.heat.sums[i];
        k += p.heat.counts[i];
      }
      if (k) h.values[i] = s / double(k);
    }
  }

  // Pass 2: the histogram over the finite range.
  if (histogram && out.stats.finite > 0) {
    ctl.base = n;
    ctl.done = 0;
    auto h = histogramPass(data, options.bins, out.stats.min, out.stats.max, ctl, nt);
    if (!h) return std::nullopt;
    out.histogram = std::move(*h);
  }
  if (progress && !progress(ctl.total, ctl.total)) return std::nullopt;
  return out;
}

}  // namespace ckpt
