#pragma once
// Statistics, histograms and heat maps of one tensor, streamed from its
// mapped bytes in chunks (TensorData::read), never materialised whole.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "ckpt/format/tensor_data.h"

namespace ckpt {

// Called now and then from the thread that called the function below with
// the elements processed so far and the total (passes included); returns
// false to stop, which makes the function return std::nullopt ("cancelled",
// kept apart from "failed", which throws).
using StatsProgress = std::function<bool(uint64_t done, uint64_t total)>;

// Every element is counted; min, max, mean, std and the L2 norm are over the
// finite elements only (torch's own reductions would turn NaN for a tensor
// holding one NaN, which tells a user nothing). Values are converted to
// double first (bool -> 0/1, complex -> real part, quantized -> the stored
// integers), so bf16 / fp16 statistics carry no half-precision rounding.
struct TensorStats {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  uint64_t count = 0;   // elements
  uint64_t finite = 0;  // elements the statistics below cover
  uint64_t zeros = 0;   // == 0 (both signs)
  uint64_t nans = 0;
  uint64_t posInf = 0;
  uint64_t negInf = 0;
  double min = kNaN;  // NaN when there is no finite element
  double max = kNaN;
  double mean = kNaN;
  // Sample standard deviation (divides by N - 1): torch.std's default
  // (unbiased=True). NaN with fewer than two finite elements, as in torch.
  double std = kNaN;
  double l2norm = 0.0;  // sqrt(sum x^2)
};

// Equal-width bins over [lo, hi], laid out as torch.histc lays them out:
// edges as torch.linspace(lo, hi, bins + 1) computes them, a value equal to
// an edge goes to the bin on its right, `hi` itself to the last bin, values
// outside and non-finite values are not counted. lo == hi widens the range
// to [lo - 1, hi + 1] as torch.histc does.
struct Histogram {
  double lo = 0.0;
  double hi = 0.0;
  std::vector<uint64_t> counts;

  [[nodiscard]] int bins() const { return int(counts.size()); }
  // Edge i of bins() + 1 (torch.linspace's arithmetic).
  [[nodiscard]] double edge(int i) const;
};

// A matrix view of a tensor (see matrixShape) downsampled to at most
// rows x cols cells. Each cell holds the mean ABSOLUTE value of the finite
// elements it covers (NaN when it covers none): weight matrices are centred
// on zero, so a signed mean averages every cell to noise, while mean |x|
// shows what a user looks for (rows with large norms, outlier channels).
struct HeatMap {
  int64_t sourceRows = 0;  // the matrix view's shape
  int64_t sourceCols = 0;
  int rows = 0;                // cells; cell (i, j) covers matrix rows [i*R/rows, (i+1)*R/rows)
  int cols = 0;                // and columns [j*C/cols, (j+1)*C/cols)
  std::vector<double> values;  // rows x cols, row-major

  [[nodiscard]] double at(int row, int col) const {
    return values[size_t(row) * size_t(cols) + size_t(col)];
  }
};

// The 2-D view a heat map and a value table use: [d0, d1*d2*...] for 2 or
// more dimensions, [1, n] for a vector, [1, 1] for a scalar.
[[nodiscard]] std::pair<int64_t, int64_t> matrixShape(const std::vector<int64_t>& shape);

struct AnalysisOptions {
  int bins = 100;    // 0: no histogram
  int heatRows = 0;  // 0: no heat map; tensors with fewer than 2 dimensions get none
  int heatCols = 0;
  int threads = 0;  // 0: up to 4 by the hardware; small tensors always use 1
};

struct TensorAnalysis {
  TensorStats stats;
  Histogram histogram;  // over [stats.min, stats.max]; empty counts without finite elements
  HeatMap heatMap;      // rows == 0 when not asked for or not a matrix
};

// One pass: the statistics.
[[nodiscard]] std::optional<TensorStats> computeStats(const TensorData& data,
                                                      const StatsProgress& progress = {},
                                                      int threads = 0);
// One pass: a histogram of `bins` bins over [lo, hi].
[[nodiscard]] std::optional<Histogram> computeHistogram(const TensorData& data, int bins, double lo,
                                                        double hi,
                                                        const StatsProgress& progress = {},
                                                        int threads = 0);
// Two passes (the histogram needs the range): statistics and heat map
// first, then the histogram. What the inspector runs per selected tensor.
[[nodiscard]] std::optional<TensorAnalysis> analyzeTensor(const TensorData& data,
                                                          const AnalysisOptions& options,
                                                          const StatsProgress& progress = {});

}  // namespace ckpt
