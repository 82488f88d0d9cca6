#include "ckpt/remote/plots_wire.h"

#include <limits>

#include "wire_reader.h"

namespace ckpt::remote {

std::optional<Histogram> histogramFromWire(const Json& answer) {
  if (!answer.is_object() || !answer.contains("histogram")) return std::nullopt;
  const Reader r = Reader::object(answer["histogram"], "histogram", "stats");
  Histogram h;
  const auto lo = r.real("lo"), hi = r.real("hi");
  if (!lo) r.fail("lo", "is missing");
  if (!hi) r.fail("hi", "is missing");
  h.lo = *lo;
  h.hi = *hi;
  for (const Json& c : r.array("counts", true)) {
    if (!c.is_number_unsigned()) r.fail("counts", "holds something that is not a count");
    h.counts.push_back(c.get<uint64_t>());
  }
  return h;
}

std::optional<HeatMap> heatMapFromWire(const Json& answer) {
  if (!answer.is_object() || !answer.contains("heat_map")) return std::nullopt;
  const Reader r = Reader::object(answer["heat_map"], "heat_map", "stats");
  HeatMap h;
  h.sourceRows = r.integer<int64_t>("source_rows");
  h.sourceCols = r.integer<int64_t>("source_cols");
  h.rows = r.integer<int>("rows");
  h.cols = r.integer<int>("cols");
  if (h.rows < 0 || h.cols < 0 || h.rows > 4096 || h.cols > 4096) r.fail("rows", "is out of range");
  const Json& values = r.array("values", true);
  if (values.size() != size_t(h.rows) * size_t(h.cols))
    r.fail("values", "does not hold rows x cols values");
  h.values.reserve(values.size());
  for (const Json& v : values) {
    if (v.is_number())
      h.values.push_back(v.get<double>());
    else if (v == "nan")
      h.values.push_back(std::numeric_limits<double>::quiet_NaN());
    else if (v == "inf")
      h.values.push_back(std::numeric_limits<double>::infinity());
    else if (v == "-inf")
      h.values.push_back(-std::numeric_limits<double>::infinity());
    else
      r.fail("values", "holds something that is not a number");
  }
  return h;
}

}  // namespace ckpt::remote
