#include "ckpt/remote/describe_wire.h"

#include "ckpt/remote/metrics_wire.h"
#include "wire_reader.h"

namespace ckpt::remote {
namespace {

constexpr const char* kWhat = "describe";

Json pairs(const std::vector<std::pair<std::string, std::string>>& p) {
  Json a = Json::array();
  for (const auto& [k, v] : p) a.push_back(Json::array({k, v}));
  return a;
}

std::vector<std::pair<std::string, std::string>> pairsFrom(const Reader& r, const char* name) {
  std::vector<std::pair<std::string, std::string>> out;
  const Json& a = r.array(name);
  for (const Json& p : a) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string())
      r.fail(name, "holds something that is not a [key, text] pair");
    out.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  }
  return out;
}

Json valueToWire(const DescribedValue& v) {
  Json j = Json::object();
  if (v.keyKind == DescribedValue::Key::Root) j["root"] = true;
  if (v.keyKind == DescribedValue::Key::ListItem)
    j["item"] = v.item;
  else
    j["key"] = v.key;
  j["type"] = v.type;
  if (!v.text.empty()) j["text"] = v.text;
  if (v.count >= 0) j["count"] = v.count;
  if (v.tensor >= 0) j["tensor"] = v.tensor;
  if (v.repeats) j["repeats"] = true;
  if (v.truncated) j["truncated"] = true;
  if (!v.children.empty()) {
    Json c = Json::array();
    for (const DescribedValue& x : v.children) c.push_back(valueToWire(x));
    j["children"] = std::move(c);
  }
  return j;
}

// The tree is as deep as the file's (cut at 200 levels by describeCheckpoint);
// a deeper answer is refused rather than followed.
DescribedValue valueFromWire(const Json& j, const std::string& where, int depth) {
  if (depth > 1000) throw std::runtime_error(std::string(kWhat) + ": " + where + " is too deep");
  const Reader r = Reader::object(j, where, kWhat);
  DescribedValue v;
  if (r.flag("root")) v.keyKind = DescribedValue::Key::Root;
  if (r.has("item")) {
    v.keyKind = DescribedValue::Key::ListItem;
    v.item = r.integer<int64_t>("item");
  } else if (v.keyKind != DescribedValue::Key::Root) {
    v.key = r.text("key", true);
  } else {
    v.key = r.text("key");
  }
  v.type = r.text("type", true);
  v.text = r.text("text");
  v.count = r.integer<int64_t>("count", -1);
  v.tensor = r.integer<int>("tensor", -1);
  v.repeats = r.flag("repeats");
  v.truncated = r.flag("truncated");
  const Json& children = r.array("children");
  v.children.reserve(children.size());
  for (size_t i = 0; i < children.size(); ++i)
    v.children.push_back(
        valueFromWire(children[i], where + ".children[" + std::to_string(i) + "]", depth + 1));
  return v;
}

Json orNull(const std::optional<std::string>& s) {
  return s ? Json(*s) : Json(nullptr);
}

const char* ownerName(DescribedTensor::Owner o) {
  return o == DescribedTensor::Owner::OptimizerOf ? "optimizer_of"
         : o == DescribedTensor::Owner::TiedTo    ? "tied_to"
                                                  : "";
}

}  // namespace

Json describeToWire(const CheckpointDescription& d) {
  const DescribedSafety& s = d.safety;
  Json safety{{"verdict", std::string(verdictName(s.verdict))},
              {"sharded", s.sharded},
              {"dangerous", s.dangerous},
              {"suspicious", s.suspicious},
              {"error", s.error},
              {"worst_file", s.worstFile},
              {"files_with_verdict", s.filesWithVerdict},
              {"scope", s.scope},
              {"missing", s.missing}};
  Json entries = Json::array();
  for (const DescribedEntry& e : d.entries)
    entries.push_back(Json{{"name", e.name},
                           {"tensor", e.tensor},
                           {"dtype", e.dtype},
                           {"shape", e.shape},
                           {"numel", e.numel},
                           {"nbytes", e.nbytes},
                           {"tied_to", e.tiedTo}});
  Json optimizer = Json::array();
  for (const DescribedOptimizerRow& o : d.optimizer)
    optimizer.push_back(Json{{"index", o.index},
                             {"name", o.name},
                             {"step", o.step},
                             {"step_unreadable", o.stepUnreadable},
                             {"shape", o.shape},
                             {"exp_avg", o.expAvg},
                             {"exp_avg_sq", o.expAvgSq},
                             {"problem", o.problem}});
  Json tensors = Json::array();
  for (const DescribedTensor& t : d.tensors) {
    Json j{{"name", t.name},   {"dtype", t.dtype},       {"shape", t.shape},
           {"sizes", t.sizes}, {"elements", t.elements}, {"bytes", t.bytes}};
    if (t.ownerKind != DescribedTensor::Owner::None) {
      j["owner_kind"] = ownerName(t.ownerKind);
      j["owner"] = t.owner;
    }
    if (!t.location.empty()) j["location"] = t.location;
    if (t.meta) j["meta"] = true;
    if (!t.joined.empty()) j["joined"] = t.joined;
    if (!t.error.empty()) j["error"] = t.error;
    tensors.push_back(std::move(j));
  }
  return Json{{"path", d.path},
              {"format", d.format},
              {"big_endian", d.bigEndian},
              {"file_size", d.fileSize},
              {"mtime", d.mtime},
              {"safety", std::move(safety)},
              {"sharded", d.sharded},
              {"step", d.step ? Json(*d.step) : Json(nullptr)},
              {"step_source", d.stepSource},
              {"step_from_name", d.stepFromName ? Json(*d.stepFromName) : Json(nullptr)},
              {"loss", d.loss ? numberToWire(*d.loss) : Json(nullptr)},
              {"run", orNull(d.run)},
              {"stage", orNull(d.stage)},
              {"final", d.final},
              {"model_state", d.hasModelState},
              {"parameter_count", d.parameterCount},
              {"model_state_key", d.modelStateKey},
              {"ddp_prefix", d.ddpPrefix},
              {"compiled_prefix", d.compiledPrefix},
              {"entries", std::move(entries)},
              {"optimizer", d.hasOptimizer},
              {"optimizer_with_state", d.optimizerWithState},
              {"optimizer_groups", d.optimizerGroups},
              {"optimizer_hyper", pairs(d.optimizerHyper)},
              {"optimizer_rows", std::move(optimizer)},
              {"config", pairs(d.config)},
              {"metadata", pairs(d.metadata)},
              {"metadata_keys", d.metadataKeys},
              {"notes", d.notes},
              {"tensors", std::move(tensors)},
              {"tree", valueToWire(d.tree)}};
}

CheckpointDescription describeFromWire(const Json& j) {
  const Reader r = Reader::object(j, "description", kWhat);
  CheckpointDescription d;
  d.path = r.text("path", true);
  d.format = r.text("format", true);
  d.bigEndian = r.flag("big_endian");
  d.fileSize = r.integer<uint64_t>("file_size");
  d.mtime = r.integer<int64_t>("mtime");
  {
    const Reader s = Reader::object(r.at("safety"), r.where("safety"), kWhat);
    const std::string verdict = s.text("verdict", true);
    bool known = false;
    for (Verdict v : {Verdict::Safe, Verdict::Suspicious, Verdict::Dangerous, Verdict::Unreadable})
      if (verdict == verdictName(v)) {
        d.safety.verdict = v;
        known = true;
      }
    if (!known) s.fail("verdict", "names no verdict");
    d.safety.sharded = s.flag("sharded");
    d.safety.dangerous = s.texts("dangerous");
    d.safety.suspicious = s.texts("suspicious");
    d.safety.error = s.text("error");
    d.safety.worstFile = s.text("worst_file");
    d.safety.filesWithVerdict = s.integer<uint64_t>("files_with_verdict");
    d.safety.scope = s.text("scope");
    d.safety.missing = s.integer<uint64_t>("missing");
  }
  d.sharded = r.flag("sharded");
  if (r.has("step")) d.step = r.integer<int64_t>("step");
  d.stepSource = r.text("step_source");
  if (r.has("step_from_name")) d.stepFromName = r.integer<int64_t>("step_from_name");
  d.loss = r.real("loss");
  if (r.has("run")) d.run = r.text("run");
  if (r.has("stage")) d.stage = r.text("stage");
  d.final = r.flag("final");
  d.hasModelState = r.flag("model_state");
  d.parameterCount = r.integer<uint64_t>("parameter_count");
  d.modelStateKey = r.text("model_state_key");
  d.ddpPrefix = r.flag("ddp_prefix");
  d.compiledPrefix = r.flag("compiled_prefix");
  const Json& entries = r.array("entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = r.where("entries") + "[" + std::to_string(i) + "]";
    const Reader e = Reader::object(entries[i], where, kWhat);
    DescribedEntry x;
    x.name = e.text("name", true);
    x.tensor = e.integer<int>("tensor", -1);
    x.dtype = e.text("dtype");
    x.shape = e.text("shape");
    x.numel = e.integer<uint64_t>("numel");
    x.nbytes = e.integer<uint64_t>("nbytes");
    x.tiedTo = e.text("tied_to");
    d.entries.push_back(std::move(x));
  }
  d.hasOptimizer = r.flag("optimizer");
  d.optimizerWithState = r.integer<uint64_t>("optimizer_with_state");
  d.optimizerGroups = r.integer<uint64_t>("optimizer_groups");
  d.optimizerHyper = pairsFrom(r, "optimizer_hyper");
  const Json& rows = r.array("optimizer_rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string where = r.where("optimizer_rows") + "[" + std::to_string(i) + "]";
    const Reader o = Reader::object(rows[i], where, kWhat);
    DescribedOptimizerRow x;
    x.index = o.integer<int64_t>("index");
    x.name = o.text("name");
    x.step = o.text("step");
    x.stepUnreadable = o.flag("step_unreadable");
    x.shape = o.text("shape");
    x.expAvg = o.integer<int>("exp_avg", -1);
    x.expAvgSq = o.integer<int>("exp_avg_sq", -1);
    x.problem = o.text("problem");
    d.optimizer.push_back(std::move(x));
  }
  d.config = pairsFrom(r, "config");
  d.metadata = pairsFrom(r, "metadata");
  d.metadataKeys = r.texts("metadata_keys");
  d.notes = r.texts("notes");
  const Json& tensors = r.array("tensors");
  d.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string where = r.where("tensors") + "[" + std::to_string(i) + "]";
    const Reader t = Reader::object(tensors[i], where, kWhat);
    DescribedTensor x;
    x.name = t.text("name", true);
    x.dtype = t.text("dtype");
    x.shape = t.text("shape");
    for (const Json& n : t.array("sizes")) {
      if (!n.is_number_integer() || n.get<int64_t>() < 0)
        t.fail("sizes", "holds something that is not a size");
      x.sizes.push_back(n.get<int64_t>());
    }
    x.elements = t.integer<uint64_t>("elements");
    x.bytes = t.integer<uint64_t>("bytes");
    const std::string owner = t.text("owner_kind");
    if (owner == ownerName(DescribedTensor::Owner::OptimizerOf))
      x.ownerKind = DescribedTensor::Owner::OptimizerOf;
    else if (owner == ownerName(DescribedTensor::Owner::TiedTo))
      x.ownerKind = DescribedTensor::Owner::TiedTo;
    else if (!owner.empty())
      t.fail("owner_kind", "names no kind of owner");
    x.owner = t.text("owner");
    x.location = t.text("location");
    x.meta = t.flag("meta");
    x.joined = t.text("joined");
    x.error = t.text("error");
    d.tensors.push_back(std::move(x));
  }
  d.tree = valueFromWire(r.at("tree"), r.where("tree"), 0);
  return d;
}

WireStats statsFromWire(const Json& j) {
  const Reader r = Reader::object(j, "stats", "stats");
  WireStats s;
  s.count = r.integer<uint64_t>("count");
  s.finite = r.integer<uint64_t>("finite");
  s.zeros = r.integer<uint64_t>("zeros");
  s.nans = r.integer<uint64_t>("nans");
  s.posInf = r.integer<uint64_t>("pos_inf");
  s.negInf = r.integer<uint64_t>("neg_inf");
  const auto real = [&r](const char* name) {
    const auto v = r.real(name);
    if (!v) r.fail(name, "is missing");
    return *v;
  };
  s.min = real("min");
  s.max = real("max");
  s.mean = real("mean");
  s.std = real("std");
  s.l2norm = real("l2norm");
  return s;
}

std::vector<double> sliceFromWire(const Json& j, size_t most) {
  const Reader r = Reader::object(j, "slice", "slice");
  const Json& values = r.array("values", true);
  if (values.size() > most) r.fail("values", "holds more values than were asked for");
  std::vector<double> out;
  out.reserve(values.size());
  for (const Json& v : values) {
    if (v.is_number()) {
      out.push_back(v.get<double>());
      continue;
    }
    const std::string* t = v.is_string() ? &v.get_ref<const std::string&>() : nullptr;
    if (t && *t == "nan")
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    else if (t && (*t == "inf" || *t == "-inf"))
      out.push_back((*t)[0] == '-' ? -std::numeric_limits<double>::infinity()
                                   : std::numeric_limits<double>::infinity());
    else
      r.fail("values", ("[" + std::to_string(out.size()) + "] is not a number").c_str());
  }
  return out;
}

}  // namespace ckpt::remote
