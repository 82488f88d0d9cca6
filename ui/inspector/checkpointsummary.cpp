#include "inspector/checkpointsummary.h"

#include <QDateTime>
#include <QStringList>
#include <exception>
#include <filesystem>
#include <map>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/value.h"
#include "ckpt/index/scanner.h"
#include "textformat.h"

namespace ckpt {
namespace {

QString keyText(const Value* k) { return k->isStr() ? fromStd(k->str()) : fromStd(shortRepr(k, 40)); }

QString optimizerSummary(const CheckpointView& view) {
  const Value* groups = view.optimizer()->get("param_groups");
  const Value* state = view.optimizer()->get("state");
  const size_t withState = state && state->isDict() ? state->entries.size() : 0;
  QString s = QObject::tr("%1 parameters with state").arg(withState);
  if (groups && groups->kind == Value::Kind::List && !groups->items.empty()) {
    if (groups->items.size() > 1) s += QObject::tr(", %1 groups").arg(groups->items.size());
    QStringList hyper;
    for (const char* key : {"lr", "betas", "eps", "weight_decay"})
      if (const Value* v = groups->items.front()->get(key))
        hyper << QString::fromLatin1(key) + " " + fromStd(shortRepr(v, 30));
    if (!hyper.isEmpty()) s += " (" + hyper.join(", ") + ")";
  }
  size_t mapped = 0;
  for (const OptimizerParam& p : view.optimizerParams())
    if (!p.name.empty() && p.problem.empty()) ++mapped;
  if (!view.optimizerParams().empty())
    s += QObject::tr("; %1 of %2 mapped to parameters").arg(mapped).arg(view.optimizerParams().size());
  return s;
}

void describe(const CheckpointFile& file, CheckpointSummary& out) {
  const CheckpointView view(file);
  auto field = [&out](const QString& label, const QString& value) { out.fields.append({label, value, false}); };
  auto wideField = [&out](const QString& label, const QString& value) { out.fields.append({label, value, true}); };

  QString format = fromStd(std::string(formatName(file.format())));
  if (file.bigEndian()) format += QObject::tr(", big-endian");
  field(QObject::tr("Format"), format);
  field(QObject::tr("Size"), QObject::tr("%1 (%2 bytes)").arg(sizeText(file.fileSize()), groupedNumber(file.fileSize())));
  if (view.step()) {
    field(QObject::tr("Step"), QString::number(*view.step()));
  } else if (const NameInfo name = parseCheckpointName(std::filesystem::path(file.path()).filename().string());
             name.step) {
    // As the listing does: a hand-written loop's checkpoint_50.pt may not store its step.
    field(QObject::tr("Step"), QObject::tr("%1 (from the file name)").arg(*name.step));
  }
  if (view.loss()) field(QObject::tr("Loss"), fromStd(formatPythonFloat(*view.loss())));
  if (view.run()) field(QObject::tr("Run"), fromStd(*view.run()));
  if (view.stage()) field(QObject::tr("Stage"), fromStd(*view.stage()));
  if (file.mtime())
    field(QObject::tr("Modified"), QDateTime::fromSecsSinceEpoch(file.mtime()).toString("yyyy-MM-dd hh:mm:ss"));
  if (view.isFinal()) field(QObject::tr("Final"), QObject::tr("yes"));

  if (view.modelState()) {
    QString p = QObject::tr("%1 in %2 tensors").arg(groupedNumber(view.parameterCount())).arg(view.entries().size());
    if (!view.modelStateKey().empty()) p += QObject::tr(" (under \"%1\")").arg(fromStd(view.modelStateKey()));
    if (view.compiledPrefix()) p += QObject::tr("; keys carry _orig_mod., stripped");
    wideField(QObject::tr("Parameters"), p);
    QStringList tied;
    for (const StateEntry& e : view.entries())
      if (e.tiedTo >= 0) tied << fromStd(e.name) + " = " + fromStd(view.entries()[size_t(e.tiedTo)].name);
    wideField(QObject::tr("Tied weights"), tied.isEmpty() ? QObject::tr("none") : tied.join("; "));
  } else {
    wideField(QObject::tr("Parameters"), QObject::tr("no model state found"));
  }
  wideField(QObject::tr("Optimizer"), view.optimizer() ? optimizerSummary(view) : QObject::tr("none"));

  if (const Value* config = view.config())
    for (const auto& [k, v] : config->entries) out.config.append({keyText(k), fromStd(shortRepr(v, 80))});

  // Every metadata key: the `metadata` dict, or else the top level's plain values.
  QStringList keys;
  auto addMeta = [&](const Value* k, const Value* v) {
    keys << keyText(k);
    if (v == view.config()) return;
    const QString text = fromStd(shortRepr(v, 100));
    out.metadata.append({keyText(k), text, text.size() > 30});
  };
  if (const Value* meta = view.metadata()) {
    for (const auto& [k, v] : meta->entries) addMeta(k, v);
  } else if (const Value* root = file.root(); root && root->isDict() && root != view.modelState()) {
    for (const auto& [k, v] : root->entries)
      if (v != view.modelState() && v != view.optimizer()) addMeta(k, v);
  }
  wideField(QObject::tr("Metadata keys"), keys.isEmpty() ? QObject::tr("none") : keys.join(", "));
  for (const std::string& n : view.notes()) out.notes << fromStd(n);

  // Notes for the tensor table: which parameter an optimizer tensor belongs
  // to, which tensors share bytes.
  std::map<int, QString> owner;
  for (const OptimizerParam& p : view.optimizerParams()) {
    if (p.name.empty()) continue;
    for (int t : {p.expAvg, p.expAvgSq, p.stepTensor})
      if (t >= 0) owner[t] = QObject::tr("of %1").arg(fromStd(p.name));
  }
  for (const StateEntry& e : view.entries())
    if (e.tiedTo >= 0 && e.tensor >= 0)
      owner[e.tensor] = QObject::tr("tied to %1").arg(fromStd(view.entries()[size_t(e.tiedTo)].name));

  const auto& tensors = file.tensors();
  const auto& storages = file.storages();
  out.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    TensorRow row;
    row.name = fromStd(joinPath(t.path));
    row.dtype = fromStd(std::string(dtypeName(t.dtype)));
    row.shape = fromStd(t.shapeString());
    row.elements = t.numel();
    row.bytes = t.nbytes();
    QStringList note;
    if (auto it = owner.find(int(i)); it != owner.end()) note << it->second;
    if (t.storage >= 0 && storages[size_t(t.storage)].location != "cpu")
      note << fromStd(storages[size_t(t.storage)].location);
    if (t.isMeta) note << QObject::tr("meta");
    if (!t.error.empty()) {
      note << QObject::tr("unreadable: %1").arg(fromStd(t.error));
      row.broken = true;
    }
    row.note = note.join("; ");
    out.tensorBytes += row.bytes;
    out.tensors.push_back(std::move(row));
  }
}

}  // namespace

CheckpointSummary summarizeCheckpoint(const QString& path) {
  CheckpointSummary out;
  out.path = path;
  try {
    const auto file = CheckpointFile::open(pathToStd(path));
    describe(*file, out);
  } catch (const std::exception& e) {
    // Catch once at the boundary: the panel shows the message instead.
    CheckpointSummary failed;
    failed.path = path;
    failed.error = fromStd(e.what());
    if (failed.error.isEmpty()) failed.error = QObject::tr("unknown error");
    return failed;
  }
  return out;
}

}  // namespace ckpt
