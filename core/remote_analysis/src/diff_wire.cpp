#include "ckpt/remote/diff_wire.h"

#include <string>

#include "ckpt/remote/metrics_wire.h"
#include "wire_reader.h"

namespace ckpt::remote {
namespace {

constexpr const char* kWhat = "diff";

Json dtypeToWire(DType t) {
  return std::string(dtypeName(t));
}

DType dtypeFromWire(const Reader& r, const char* name) {
  const std::string text = r.text(name, true);
  for (int i = 0; i <= int(DType::UInt64); ++i)
    if (dtypeName(DType(i)) == text) return DType(i);
  r.fail(name, "is not a dtype");
}

LayerModule moduleFromWire(const Reader& r, const char* name) {
  const std::string text = r.text(name, true);
  for (int i = 0; i < kLayerModuleCount; ++i)
    if (layerModuleName(LayerModule(i)) == text) return LayerModule(i);
  r.fail(name, "is not a layer module");
}

double realFrom(const Reader& r, const char* name) {
  const auto v = r.real(name);
  if (!v) r.fail(name, "is missing");
  return *v;
}

std::vector<int64_t> shapeFrom(const Reader& r, const char* name) {
  std::vector<int64_t> out;
  for (const Json& d : r.array(name, true)) {
    if (!d.is_number_integer()) r.fail(name, "holds something that is not an integer");
    out.push_back(d.get<int64_t>());
  }
  return out;
}

Json tensorToWire(const TensorDiff& t) {
  return Json{{"name", t.name},
              {"tensor_a", t.tensorA},
              {"tensor_b", t.tensorB},
              {"dtype_a", dtypeToWire(t.dtypeA)},
              {"dtype_b", dtypeToWire(t.dtypeB)},
              {"shape", t.shape},
              {"block", t.layer.block},
              {"module", std::string(layerModuleName(t.layer.module))},
              {"numel", t.numel},
              {"finite_pairs", t.finitePairs},
              {"nan_a", t.nanA},
              {"inf_a", t.infA},
              {"nan_b", t.nanB},
              {"inf_b", t.infB},
              {"norm_a", numberToWire(t.normA)},
              {"norm_b", numberToWire(t.normB)},
              {"norm_diff", numberToWire(t.normDiff)},
              {"dot", numberToWire(t.dot)},
              {"rel_l2", numberToWire(t.relL2)},
              {"cosine", numberToWire(t.cosine)},
              {"max_abs", numberToWire(t.maxAbs)},
              {"mean_abs", numberToWire(t.meanAbs)},
              {"tied_to", t.tiedTo},
              {"error", t.error},
              {"computed", t.computed}};
}

TensorDiff tensorFromWire(const Json& j, const std::string& where) {
  const Reader r = Reader::object(j, where, kWhat);
  TensorDiff t;
  t.name = r.text("name", true);
  t.tensorA = r.integer<int>("tensor_a", -1);
  t.tensorB = r.integer<int>("tensor_b", -1);
  t.dtypeA = dtypeFromWire(r, "dtype_a");
  t.dtypeB = dtypeFromWire(r, "dtype_b");
  t.shape = shapeFrom(r, "shape");
  t.layer.block = r.integer<int>("block", -1);
  t.layer.module = moduleFromWire(r, "module");
  t.numel = r.integer<uint64_t>("numel");
  t.finitePairs = r.integer<uint64_t>("finite_pairs");
  t.nanA = r.integer<uint64_t>("nan_a");
  t.infA = r.integer<uint64_t>("inf_a");
  t.nanB = r.integer<uint64_t>("nan_b");
  t.infB = r.integer<uint64_t>("inf_b");
  t.normA = realFrom(r, "norm_a");
  t.normB = realFrom(r, "norm_b");
  t.normDiff = realFrom(r, "norm_diff");
  t.dot = realFrom(r, "dot");
  t.relL2 = realFrom(r, "rel_l2");
  t.cosine = realFrom(r, "cosine");
  t.maxAbs = realFrom(r, "max_abs");
  t.meanAbs = realFrom(r, "mean_abs");
  t.tiedTo = r.text("tied_to");
  t.error = r.text("error");
  t.computed = r.flag("computed");
  return t;
}

Json aggregateToWire(const LayerAggregate& g) {
  return Json{{"block", g.block},
              {"module", std::string(layerModuleName(g.module))},
              {"sum_diff_sq", numberToWire(g.sumDiffSq)},
              {"sum_a_sq", numberToWire(g.sumASq)},
              {"numel", g.numel},
              {"finite_pairs", g.finitePairs},
              {"tensors", g.tensors}};
}

LayerAggregate aggregateFromWire(const Json& j, const std::string& where) {
  const Reader r = Reader::object(j, where, kWhat);
  LayerAggregate g;
  g.block = r.integer<int>("block", -1);
  g.module = moduleFromWire(r, "module");
  g.sumDiffSq = realFrom(r, "sum_diff_sq");
  g.sumASq = realFrom(r, "sum_a_sq");
  g.numel = r.integer<uint64_t>("numel");
  g.finitePairs = r.integer<uint64_t>("finite_pairs");
  g.tensors = r.integer<int>("tensors");
  return g;
}

Json metadataToWire(const std::vector<MetadataChange>& changes) {
  Json a = Json::array();
  for (const MetadataChange& m : changes)
    a.push_back(Json{{"key", m.key},
                     {"in_a", m.inA},
                     {"in_b", m.inB},
                     {"a_text", m.aText},
                     {"b_text", m.bText},
                     {"a_json", m.aJson},
                     {"b_json", m.bJson},
                     {"same", m.same}});
  return a;
}

std::vector<MetadataChange> metadataFromWire(const Reader& top, const char* name) {
  std::vector<MetadataChange> out;
  const Json& a = top.array(name, true);
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string where = top.where(name) + "[" + std::to_string(i) + "]";
    const Reader r = Reader::object(a[i], where, kWhat);
    MetadataChange m;
    m.key = r.text("key", true);
    m.inA = r.flag("in_a");
    m.inB = r.flag("in_b");
    m.aText = r.text("a_text");
    m.bText = r.text("b_text");
    m.aJson = r.has("a_json") ? r.at("a_json") : Json();
    m.bJson = r.has("b_json") ? r.at("b_json") : Json();
    m.same = r.flag("same");
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

Json diffToWire(const CheckpointDiff& d, const std::vector<MetadataChange>& everyKey) {
  Json shapes = Json::array();
  for (const ShapeChange& c : d.changedShape)
    shapes.push_back(Json{{"name", c.name},
                          {"shape_a", c.shapeA},
                          {"shape_b", c.shapeB},
                          {"dtype_a", dtypeToWire(c.dtypeA)},
                          {"dtype_b", dtypeToWire(c.dtypeB)}});
  Json tensors = Json::array();
  for (const TensorDiff& t : d.tensors) tensors.push_back(tensorToWire(t));
  Json blocks = Json::array(), modules = Json::array();
  for (const LayerAggregate& g : d.blocks) blocks.push_back(aggregateToWire(g));
  for (const LayerAggregate& g : d.modules) modules.push_back(aggregateToWire(g));
  return Json{{"path_a", d.pathA},
              {"path_b", d.pathB},
              {"state_key_a", d.stateKeyA},
              {"state_key_b", d.stateKeyB},
              {"compiled_prefix_a", d.compiledPrefixA},
              {"compiled_prefix_b", d.compiledPrefixB},
              {"ddp_prefix_a", d.ddpPrefixA},
              {"ddp_prefix_b", d.ddpPrefixB},
              {"added", d.added},
              {"removed", d.removed},
              {"changed_shape", std::move(shapes)},
              {"tensors", std::move(tensors)},
              {"metadata", metadataToWire(d.metadata)},
              {"blocks", std::move(blocks)},
              {"modules", std::move(modules)},
              {"notes", d.notes},
              {"top", d.top},
              {"bytes_compared", d.bytesCompared},
              {"cancelled", d.cancelled},
              {"every_key", metadataToWire(everyKey)}};
}

WireDiff diffFromWire(const Json& j) {
  const Reader r = Reader::object(j, "diff", kWhat);
  WireDiff out;
  CheckpointDiff& d = out.diff;
  d.pathA = r.text("path_a", true);
  d.pathB = r.text("path_b", true);
  d.stateKeyA = r.text("state_key_a");
  d.stateKeyB = r.text("state_key_b");
  d.compiledPrefixA = r.flag("compiled_prefix_a");
  d.compiledPrefixB = r.flag("compiled_prefix_b");
  d.ddpPrefixA = r.flag("ddp_prefix_a");
  d.ddpPrefixB = r.flag("ddp_prefix_b");
  d.added = r.texts("added");
  d.removed = r.texts("removed");
  const Json& shapes = r.array("changed_shape", true);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string where = r.where("changed_shape") + "[" + std::to_string(i) + "]";
    const Reader s = Reader::object(shapes[i], where, kWhat);
    ShapeChange c;
    c.name = s.text("name", true);
    c.shapeA = shapeFrom(s, "shape_a");
    c.shapeB = shapeFrom(s, "shape_b");
    c.dtypeA = dtypeFromWire(s, "dtype_a");
    c.dtypeB = dtypeFromWire(s, "dtype_b");
    d.changedShape.push_back(std::move(c));
  }
  const Json& tensors = r.array("tensors", true);
  d.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    d.tensors.push_back(
        tensorFromWire(tensors[i], r.where("tensors") + "[" + std::to_string(i) + "]"));
  d.metadata = metadataFromWire(r, "metadata");
  for (const char* name : {"blocks", "modules"}) {
    const Json& a = r.array(name, true);
    std::vector<LayerAggregate>& into = std::string(name) == "blocks" ? d.blocks : d.modules;
    for (size_t i = 0; i < a.size(); ++i)
      into.push_back(aggregateFromWire(a[i], r.where(name) + "[" + std::to_string(i) + "]"));
  }
  d.notes = r.texts("notes");
  for (const Json& i : r.array("top")) {
    if (!i.is_number_unsigned() || i.get<size_t>() >= d.tensors.size())
      r.fail("top", "holds something that is not an index into tensors");
    d.top.push_back(i.get<size_t>());
  }
  d.bytesCompared = r.integer<uint64_t>("bytes_compared");
  d.cancelled = r.flag("cancelled");
  out.everyKey = metadataFromWire(r, "every_key");
  return out;
}

}  // namespace ckpt::remote
