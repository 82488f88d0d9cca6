#pragma once
// A metrics cache per source file, so that opening the same sweep again
// reads only what its metrics.jsonl files gained since. One cache file per
// source file, in the user's cache folder ($CKPTSCOPE_CACHE_DIR, else
// $XDG_CACHE_HOME/ckptscope/metrics, else ~/.cache/ckptscope/metrics; never
// in the experiment directory), holding the file's series as columns
// (series_points.h) and what they were read from: the path, size,
// modification time and inode, the byte reading reached, and checksums of
// the file's first and last 4 KiB before that byte.
//
// Reading a metrics.jsonl (or a wandb-history.jsonl) through the cache:
//  * same size, time and inode, read long enough after its last change:
//    the cached series, no byte of the file parsed;
//  * grown, with the checksummed bytes unchanged (a job appending lines):
//    the cached series and the lines after the byte reached, folded in
//    with addInFileOrder (what a whole read would give);
//  * anything else (shorter, rewritten, another file at the path, a
//    timestamp too close to the read to tell a later same-size rewrite
//    apart): read whole, the cache file rewritten.
// A cache file is trusted only with the right magic, version, host byte
// order, path and CRC-32C over its contents; a damaged or foreign one is
// ignored and rewritten. Disabled by CKPTSCOPE_NO_CACHE=1 (or
// setMetricsCacheEnabled(false): `ckptscope-cli metrics --no-cache`).
// No Qt, no LibTorch.

#include <cstdint>
#include <string>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt {

// What the cache did since the last reset (for tests and the benchmark).
struct MetricsCacheStats {
  uint64_t hits = 0;         // files answered from the cache alone
  uint64_t appended = 0;     // files read from the byte the cache reached
  uint64_t misses = 0;       // files read whole (no usable cache file)
  uint64_t rejected = 0;     // cache files found damaged or foreign
  uint64_t bytesParsed = 0;  // bytes of metrics.jsonl parsed, all reads together
  uint64_t writes = 0;       // cache files written
};
[[nodiscard]] MetricsCacheStats metricsCacheStats();
void resetMetricsCacheStats();

// The folder the cache lives in ("" when neither variable nor HOME is set:
// no cache).
[[nodiscard]] std::string metricsCacheDir();
// On unless CKPTSCOPE_NO_CACHE is set to something other than "" or "0",
// or turned off here.
[[nodiscard]] bool metricsCacheEnabled();
void setMetricsCacheEnabled(bool enabled);
// The cache file for a source file (its absolute path hashed).
[[nodiscard]] std::string metricsCacheFile(const std::string& sourcePath);

// readMetricsJsonlSeries through the cache: the same series, `*end` and
// problems (an appended part's bad lines are numbered from where it was
// read). Never throws: a cache that cannot be written is left unwritten.
std::vector<FileSeries> readMetricsJsonlCached(const std::string& path, uint64_t* end = nullptr,
                                               std::vector<std::string>* problems = nullptr);

// readWandbHistory through the cache, for an older W&B SDK's
// wandb-history.jsonl (appended a row a line, as metrics.jsonl is); a
// .wandb file is read whole, as readWandbHistory reads it.
std::vector<FileSeries> readWandbHistoryCached(const std::string& path, uint64_t* end = nullptr,
                                               std::vector<std::string>* problems = nullptr);

}  // namespace ckpt
