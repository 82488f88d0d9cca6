// The diff as one JSON document (ckptscope-cli diff --json, UI export).
#include <cmath>

#include "ckpt/analysis/diff.h"

namespace ckpt {
namespace {

using Json = nlohmann::ordered_json;

Json number(double d) {
  return std::isfinite(d) ? Json(d) : Json(nullptr);
}

Json shapeJson(const std::vector<int64_t>& shape) {
  Json j = Json::array();
  for (int64_t d : shape) j.push_back(d);
  return j;
}

Json tensorJson(const TensorDiff& t) {
  Json j = Json::object();
  j["name"] = t.name;
  j["rel_l2"] = number(t.relL2);
  j["cosine"] = number(t.cosine);
  j["max_abs"] = number(t.maxAbs);
  j["mean_abs"] = number(t.meanAbs);
  j["norm_a"] = number(t.normA);
  j["norm_b"] = number(t.normB);
  j["norm_diff"] = number(t.normDiff);
  j["numel"] = t.numel;
  j["shape"] = shapeJson(t.shape);
  j["dtype_a"] = std::string(dtypeName(t.dtypeA));
  j["dtype_b"] = std::string(dtypeName(t.dtypeB));
  j["block"] = t.layer.block;
  j["module"] = std::string(layerModuleName(t.layer.module));
  j["nan_a"] = t.nanA;
  j["inf_a"] = t.infA;
  j["nan_b"] = t.nanB;
  j["inf_b"] = t.infB;
  if (!t.tiedTo.empty()) j["tied_to"] = t.tiedTo;
  if (!t.error.empty()) j["error"] = t.error;
  if (!t.computed && t.error.empty()) j["computed"] = false;
  return j;
}

Json aggregateJson(const LayerAggregate& g, bool withModule) {
  Json j = Json::object();
  j["block"] = g.block;
  if (withModule) j["module"] = std::string(layerModuleName(g.module));
  j["rel_l2"] = number(g.relL2());
  j["numel"] = g.numel;
  j["tensors"] = g.tensors;
  return j;
}

}  // namespace

nlohmann::ordered_json diffToJson(const CheckpointDiff& diff, size_t top) {
  Json doc = Json::object();
  doc["a"] = diff.pathA;
  doc["b"] = diff.pathB;
  doc["added"] = diff.added;
  doc["removed"] = diff.removed;
  Json shapes = Json::array();
  for (const ShapeChange& c : diff.changedShape)
    shapes.push_back(Json{{"name", c.name},
                          {"a", shapeJson(c.shapeA)},
                          {"b", shapeJson(c.shapeB)},
                          {"dtype_a", std::string(dtypeName(c.dtypeA))},
                          {"dtype_b", std::string(dtypeName(c.dtypeB))}});
  doc["changed_shape"] = std::move(shapes);
  Json dtypes = Json::array();
  for (const TensorDiff& t : diff.tensors)
    if (t.dtypeA != t.dtypeB)
      dtypes.push_back(Json{{"name", t.name},
                            {"a", std::string(dtypeName(t.dtypeA))},
                            {"b", std::string(dtypeName(t.dtypeB))}});
  doc["changed_dtype"] = std::move(dtypes);
  Json tensors = Json::array();
  if (top > 0) {
    for (size_t i : diff.topByRelL2(top)) tensors.push_back(tensorJson(diff.tensors[i]));
  } else {
    for (const TensorDiff& t : diff.tensors) tensors.push_back(tensorJson(t));
  }
  doc["tensors"] = std::move(tensors);
  Json meta = Json::array();
  for (const MetadataChange& c : diff.metadata) {
    Json j = Json::object();
    j["key"] = c.key;
    j["a"] = c.inA ? c.aJson : Json(nullptr);
    j["b"] = c.inB ? c.bJson : Json(nullptr);
    if (c.inA != c.inB) j["only"] = c.inA ? "a" : "b";
    meta.push_back(std::move(j));
  }
  doc["metadata"] = std::move(meta);
  Json blocks = Json::array(), modules = Json::array();
  for (const LayerAggregate& g : diff.blocks) blocks.push_back(aggregateJson(g, false));
  for (const LayerAggregate& g : diff.modules) modules.push_back(aggregateJson(g, true));
  doc["layers"] = Json{{"blocks", std::move(blocks)}, {"modules", std::move(modules)}};
  doc["notes"] = diff.notes;
  doc["bytes_compared"] = diff.bytesCompared;
  doc["cancelled"] = diff.cancelled;
  return doc;
}

}  // namespace ckpt
