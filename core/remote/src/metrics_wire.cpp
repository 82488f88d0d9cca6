#include "ckpt/remote/metrics_wire.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "ckpt/format/json_export.h"
#include "ckpt/format/utf8.h"

namespace ckpt::remote {
namespace {

using Json = nlohmann::ordered_json;

double realFrom(const Json& j, const char* field) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  throw std::runtime_error(std::string("metrics: '") + field + "' is not a number");
}

const Json& field(const Json& j, const char* name) {
  if (!j.is_object() || !j.contains(name))
    throw std::runtime_error(std::string("metrics: a run has no '") + name + "'");
  return j[name];
}

Json numbers(const std::map<std::string, double>& m) {
  Json o = Json::object();
  for (const auto& [k, v] : m) o[k] = numberToWire(v);
  return o;
}

std::map<std::string, double> numbersFrom(const Json& j, const char* name) {
  std::map<std::string, double> m;
  for (auto it = j.begin(); it != j.end(); ++it) m[it.key()] = realFrom(it.value(), name);
  return m;
}

MetricSource sourceFrom(const std::string& name) {
  for (int i = 0; i < kMetricSourceCount; ++i)
    if (metricSourceName(MetricSource(i)) == name) return MetricSource(i);
  throw std::runtime_error("metrics: unknown source '" + name + "'");
}

CheckpointKind kindFrom(const Json& j) {
  if (j.is_null()) return CheckpointKind::Unknown;
  const std::string name = j.get<std::string>();
  for (CheckpointKind k :
       {CheckpointKind::Step, CheckpointKind::Final, CheckpointKind::Best, CheckpointKind::Latest})
    if (checkpointKindName(k) == name) return k;
  throw std::runtime_error("metrics: unknown checkpoint kind '" + name + "'");
}

}  // namespace

Json numberToWire(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return d;
}

Json pointToWire(const MetricPoint& p) {
  return Json::array({p.step, numberToWire(p.value),
                      p.wallTime ? numberToWire(*p.wallTime) : Json(nullptr),
                      p.tokens ? Json(*p.tokens) : Json(nullptr)});
}

MetricPoint pointFromWire(const Json& j) {
  if (!j.is_array() || j.size() != 4 || !j[0].is_number_integer())
    throw std::runtime_error("metrics: a point is not [step, value, wall_time, tokens]");
  MetricPoint p;
  p.step = j[0].get<int64_t>();
  p.value = realFrom(j[1], "value");
  if (!j[2].is_null()) p.wallTime = realFrom(j[2], "wall_time");
  if (!j[3].is_null()) p.tokens = j[3].get<int64_t>();
  return p;
}

namespace {

// A series' fields but its points (their text is written apart, points.cpp).
Json seriesHead(const MetricSeries& s) {
  return Json{{"metric", s.metric},
              {"source", std::string(metricSourceName(s.source))},
              {"files", s.files},
              {"restarts", s.restarts}};
}

// The run's fields after `series`, in their order on the wire.
Json runTail(const RunMetrics& r) {
  Json markers = Json::array();
  for (const CheckpointMarker& m : r.markers)
    markers.push_back(Json{
        {"step", m.step},
        {"file", m.path},
        {"kind", m.kind == CheckpointKind::Unknown ? Json(nullptr)
                                                   : Json(std::string(checkpointKindName(m.kind)))},
        {"recorded", numbers(m.recorded)}});
  Json ends = Json::object();
  for (const auto& [file, end] : r.readEnds) ends[file] = end;
  return Json{{"checkpoint_steps", r.checkpointSteps},
              {"markers", std::move(markers)},
              {"problems", r.problems},
              {"read_ends", std::move(ends)},
              {"summary", numbers(r.summary)},
              {"summary_file", r.summaryFile}};
}

}  // namespace

Json runMetricsToWire(const RunMetrics& r) {
  Json series = Json::array();
  for (const MetricSeries& s : r.series) {
    Json points = Json::array();
    for (const MetricPoint& p : s.points) points.push_back(pointToWire(p));
    Json head = seriesHead(s);
    head["points"] = std::move(points);
    series.push_back(std::move(head));
  }
  Json out{{"name", r.run}, {"path", r.path}, {"series", std::move(series)}};
  Json tail = runTail(r);
  for (auto it = tail.begin(); it != tail.end(); ++it) out[it.key()] = std::move(it.value());
  return out;
}

void appendMetricsResultText(std::string& out, const std::vector<RunMetrics>& runs, bool columns) {
  out += "{\"runs\":[";
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunMetrics& r = runs[i];
    out += i ? ",{\"name\":" : "{\"name\":";
    utf8::appendJsonString(out, r.run);
    out += ",\"path\":";
    utf8::appendJsonString(out, r.path);
    out += ",\"series\":[";
    for (size_t k = 0; k < r.series.size(); ++k) {
      if (k) out += ',';
      std::string head = dumpJson(seriesHead(r.series[k]));
      head.pop_back();  // its '}': the points follow
      out += head;
      if (columns) {
        out += ",\"columns\":";
        appendColumnsText(out, r.series[k].points);
      } else {
        out += ",\"points\":";
        appendPointsText(out, r.series[k].points);
      }
      out += '}';
    }
    out += ']';
    std::string tail = dumpJson(runTail(r));
    tail.front() = ',';  // its '{': the run's object goes on
    out += tail;
  }
  out += "]}";
}

RunMetrics runMetricsFromWire(const Json& j) {
  try {
    RunMetrics r;
    r.run = field(j, "name").get<std::string>();
    r.path = field(j, "path").get<std::string>();
    for (const Json& s : field(j, "series")) {
      MetricSeries m;
      m.metric = field(s, "metric").get<std::string>();
      m.source = sourceFrom(field(s, "source").get<std::string>());
      m.files = field(s, "files").get<std::vector<std::string>>();
      m.restarts = field(s, "restarts").get<std::vector<int64_t>>();
      for (const Json& p : field(s, "points")) m.points.push_back(pointFromWire(p));
      r.series.push_back(std::move(m));
    }
    r.checkpointSteps = field(j, "checkpoint_steps").get<std::vector<int64_t>>();
    for (const Json& m : field(j, "markers")) {
      CheckpointMarker c;
      c.step = field(m, "step").get<int64_t>();
      c.path = field(m, "file").get<std::string>();
      c.kind = kindFrom(field(m, "kind"));
      c.recorded = numbersFrom(field(m, "recorded"), "recorded");
      r.markers.push_back(std::move(c));
    }
    r.problems = field(j, "problems").get<std::vector<std::string>>();
    const Json& ends = field(j, "read_ends");
    for (auto it = ends.begin(); it != ends.end(); ++it)
      r.readEnds[it.key()] = it.value().get<uint64_t>();
    r.summary = numbersFrom(field(j, "summary"), "summary");
    r.summaryFile = field(j, "summary_file").get<std::string>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("metrics: a field has the wrong type: ") + e.what());
  }
}

}  // namespace ckpt::remote
