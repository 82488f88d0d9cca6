#include "ckpt/remote/hparams_wire.h"

#include "ckpt/remote/metrics_wire.h"
#include "wire_reader.h"

namespace ckpt::remote {

Json hparamsToWire(const std::vector<RunHparams>& runs) {
  Json out = Json::array();
  for (const RunHparams& r : runs) {
    Json values = Json::object();
    for (const auto& [key, v] : r.hparams) {
      Json value = Json::object();
      if (v.isNumber) value["number"] = numberToWire(v.number);
      value["text"] = v.text;
      values[key] = std::move(value);
    }
    out.push_back(Json{{"run", r.run},
                       {"path", r.path},
                       {"hparams", std::move(values)},
                       {"problems", r.problems}});
  }
  return Json{{"runs", std::move(out)}};
}

std::vector<RunHparams> hparamsFromWire(const Json& answer) {
  const Reader top = Reader::object(answer, "the answer", "hparams");
  const Json& runs = top.array("runs", /*required=*/true);
  std::vector<RunHparams> out;
  out.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string where = "runs[" + std::to_string(i) + "]";
    const Reader r = Reader::object(runs[i], where, "hparams");
    RunHparams h;
    h.run = r.text("run");
    h.path = r.text("path", /*required=*/true);
    h.problems = r.texts("problems");
    if (r.has("hparams")) {
      const Json& values = r.at("hparams");
      if (!values.is_object())
        throw std::runtime_error("hparams: " + where + ".hparams is not an object");
      for (auto it = values.begin(); it != values.end(); ++it) {
        const Reader v = Reader::object(it.value(), where + ".hparams." + it.key(), "hparams");
        HparamValue value;
        value.text = v.text("text", /*required=*/true);
        if (const std::optional<double> n = v.real("number")) {
          value.isNumber = true;
          value.number = *n;
        }
        h.hparams[it.key()] = std::move(value);
      }
    }
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace ckpt::remote
