// libFuzzer target for metrics.jsonl (core/index metrics.h): the input is
// written as a metrics.jsonl and read whole (readMetricsJsonlSeries, which
// remembers a line's layout and matches the next lines against it) and
// streamed line by line (readMetricsJsonl, no layouts). Besides the
// sanitizers it checks that both stop at the same byte, inside the input,
// and that every point the whole read keeps is one the streamed read gave
// (same metric, step and value bits): a layout matched wrongly shows as a
// point the line does not hold. Build with the `fuzz` preset, then:
//   python3 tests/python/make_jsonl_layouts.py /tmp/l.jsonl /tmp/l.json
//   mkdir -p CORPUS && head -c 60000 /tmp/l.jsonl > CORPUS/layouts
//   build/fuzz/tests/fuzz/fuzz_jsonl -max_len=65536 -timeout=5 CORPUS
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ckpt/index/metrics.h"

using namespace ckpt;

namespace {

std::string scratch(const char* name) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fuzz_jsonl.XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) std::abort();
    return std::string(d);
  }();
  return dir + "/" + name;
}

void write(const std::string& path, const uint8_t* data, size_t size) {
  ::unlink(path.c_str());  // a new file, not a truncated one (see fuzz_tfevents.cpp)
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return v != v ? 0x7ff8000000000000ull : b;  // every NaN alike
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = scratch("metrics.jsonl");
  write(path, data, size);
  uint64_t wholeEnd = 0, streamedEnd = 0;
  std::vector<std::string> wholeProblems, streamedProblems;
  const std::vector<FileSeries> whole = readMetricsJsonlSeries(path, &wholeEnd, &wholeProblems);
  const auto streamed = readMetricsJsonl(path, 0, &streamedEnd, &streamedProblems);
  if (wholeEnd > size || wholeEnd != streamedEnd) std::abort();
  if (wholeProblems.size() != streamedProblems.size()) std::abort();
  std::set<std::tuple<std::string, int64_t, uint64_t>> given;
  for (const auto& [metric, p] : streamed) given.emplace(metric, p.step, bits(p.value));
  for (const FileSeries& s : whole)
    for (size_t i = 0; i < s.points.size(); ++i)
      if (!given.count({s.metric, s.points.step(i), bits(s.points.value(i))})) std::abort();
  return 0;
}
