#include "inspector/checkpointsummary.h"

#include <QDateTime>
#include <QStringList>
#include <algorithm>
#include <exception>
#include <filesystem>
#include <map>
#include <unordered_set>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/value.h"
#include "ckpt/index/scanner.h"
#include "textformat.h"

namespace ckpt {
namespace {

QString keyText(const Value* k) {
  return k->isStr() ? fromStd(k->str()) : fromStd(shortRepr(k, 40));
}

QString optimizerSummary(const OptimizerSummary& o) {
  QString s = QObject::tr("%1 parameters with state").arg(o.withState);
  if (o.groups > 1) s += QObject::tr(", %1 groups").arg(o.groups);
  QStringList hyper;
  for (const auto& [key, value] : o.hyper) hyper << fromStd(key) + " " + fromStd(value);
  if (!hyper.isEmpty()) s += " (" + hyper.join(", ") + ")";
  if (o.params) s += QObject::tr("; %1 of %2 mapped to parameters").arg(o.mapped).arg(o.params);
  return s;
}

// The value tree for the Metadata tab. Shared nodes are shown wherever they
// occur; a node that contains itself is cut at the repeat; past kMaxMetaNodes
// nodes the rest is left out with a note (a pickle can hold millions).
constexpr size_t kMaxMetaNodes = 200000;

struct MetaBuilder {
  const CheckpointFile& file;
  size_t budget = kMaxMetaNodes;
  std::unordered_set<const Value*> onPath;

  static QString typeName(const Value* v) {
    if (v->kind == Value::Kind::Dict && v->tag == Value::kOrderedDict)
      return QStringLiteral("OrderedDict");
    return fromStd(std::string(kindName(v->kind)));
  }

  void fill(MetaNode& n, const QString& key, const Value* v, int depth) {
    n.key = key;
    if (!v) {
      n.type = "None";
      return;
    }
    n.type = typeName(v);
    if (budget == 0) {
      n.value = QObject::tr("(not shown: more than %1 values)").arg(kMaxMetaNodes);
      return;
    }
    --budget;
    using K = Value::Kind;
    switch (v->kind) {
      case K::Tensor: {
        n.tensor = int(v->index);
        if (v->index >= 0 && size_t(v->index) < file.tensors().size()) {
          const TensorInfo& t = file.tensors()[size_t(v->index)];
          n.value = fromStd(std::string(dtypeName(t.dtype))) + " " + fromStd(t.shapeString());
        }
        return;
      }
      case K::Object:
        n.value = fromStd(std::string(v->text));
        break;
      case K::List:
      case K::Tuple:
      case K::Set:
        n.value = QObject::tr("%1 items").arg(v->items.size());
        break;
      case K::Dict:
        n.value = QObject::tr("%1 keys").arg(v->entries.size());
        break;
      default:
        n.value = fromStd(shortRepr(v, 200));
        return;
    }
    if (depth > 200 || !onPath.insert(v).second) {
      n.value += QObject::tr(" (repeats an enclosing value)");
      return;
    }
    auto add = [&](const QString& k, const Value* x) {
      n.children.emplace_back();
      fill(n.children.back(), k, x, depth + 1);
    };
    switch (v->kind) {
      case K::List:
      case K::Tuple:
      case K::Set:
        for (size_t i = 0; i < v->items.size(); ++i) add(QString::number(i), v->items[i]);
        break;
      case K::Dict:
        for (const auto& [k, x] : v->entries) add(keyText(k), x);
        break;
      case K::Object:
        // Opaque Python objects: the class, then what the pickle gave it.
        if (v->callee) add(QStringLiteral("callee"), v->callee);
        if (!v->items.empty()) {
          n.children.emplace_back();
          MetaNode& a = n.children.back();
          a.key = QStringLiteral("args");
          a.type = QStringLiteral("tuple");
          a.value = QObject::tr("%1 items").arg(v->items.size());
          for (size_t i = 0; i < v->items.size(); ++i) {
            a.children.emplace_back();
            fill(a.children.back(), QString::number(i), v->items[i], depth + 2);
          }
        }
        if (v->state) add(QStringLiteral("state"), v->state);
        for (size_t i = 0; i < v->listItems.size(); ++i)
          add(QObject::tr("item %1").arg(i), v->listItems[i]);
        for (const auto& [k, x] : v->entries) add(keyText(k), x);
        break;
      default:
        break;
    }
    onPath.erase(v);
  }
};

template <typename Node>
void linkTree(Node& n) {
  for (size_t i = 0; i < n.children.size(); ++i) {
    n.children[i].parent = &n;
    n.children[i].row = int(i);
    linkTree(n.children[i]);
  }
}

// Dotted state-dict names as a hierarchy; parents count each storage once.
std::shared_ptr<const ParamNode> buildParamTree(const CheckpointFile& file,
                                                const CheckpointView& view) {
  auto root = std::make_shared<ParamNode>();
  root->name = QObject::tr("model");
  const auto& entries = view.entries();
  for (const StateEntry& e : entries) {
    ParamNode* n = root.get();
    const QStringList parts = fromStd(e.name).split('.');
    for (const QString& part : parts) {
      auto it = std::find_if(n->children.begin(), n->children.end(),
                             [&](const ParamNode& c) { return c.name == part; });
      if (it == n->children.end()) {
        n->children.emplace_back();
        n->children.back().name = part;
        n->children.back().fullName = n->fullName.isEmpty() ? part : n->fullName + '.' + part;
        it = n->children.end() - 1;
      }
      n = &*it;
    }
    n->tensor = e.tensor;
    if (e.tensor < 0) continue;
    const TensorInfo& t = file.tensors()[size_t(e.tensor)];
    n->dtype = fromStd(std::string(dtypeName(t.dtype)));
    n->shape = fromStd(t.shapeString());
    n->parameters = t.numel();
    n->bytes = t.nbytes();
    if (e.tiedTo >= 0) n->tiedTo = fromStd(entries[size_t(e.tiedTo)].name);
  }
  // Sums bottom-up; a tied leaf keeps its own numbers but adds none.
  struct Sum {
    static void run(ParamNode& n) {
      if (n.children.empty()) return;
      n.parameters = n.bytes = 0;
      for (ParamNode& c : n.children) {
        run(c);
        if (!c.tiedTo.isEmpty()) continue;
        n.parameters += c.parameters;
        n.bytes += c.bytes;
      }
    }
  };
  Sum::run(*root);
  linkTree(*root);
  return root;
}

void describe(const CheckpointFile& file, CheckpointSummary& out) {
  const CheckpointView view(file);
  auto field = [&out](const QString& label, const QString& value) {
    out.fields.append({label, value, false});
  };
  auto wideField = [&out](const QString& label, const QString& value) {
    out.fields.append({label, value, true});
  };

  QString format = fromStd(std::string(formatName(file.format())));
  if (file.bigEndian()) format += QObject::tr(", big-endian");
  field(QObject::tr("Format"), format);
  field(
      QObject::tr("Size"),
      QObject::tr("%1 (%2 bytes)").arg(sizeText(file.fileSize()), groupedNumber(file.fileSize())));
  if (view.step() && !view.stepSource().empty()) {
    // A Megatron torch_dist save: its iteration is in common.pt, not its tensors.
    field(QObject::tr("Step"),
          QObject::tr("%1 (from %2)").arg(*view.step()).arg(fromStd(view.stepSource())));
  } else if (view.step()) {
    field(QObject::tr("Step"), QString::number(*view.step()));
  } else if (const NameInfo name =
                 parseCheckpointName(std::filesystem::path(file.path()).filename().string());
             name.step) {
    // As the listing does: a hand-written loop's checkpoint_50.pt may not store its step.
    field(QObject::tr("Step"), QObject::tr("%1 (from the file name)").arg(*name.step));
  }
  // Four decimals as everywhere else (the browser, the curves); the exact value is in Metadata.
  if (view.loss()) field(QObject::tr("Loss"), lossText(*view.loss()));
  if (view.run()) field(QObject::tr("Run"), fromStd(*view.run()));
  if (view.stage()) field(QObject::tr("Stage"), fromStd(*view.stage()));
  if (file.mtime())
    field(QObject::tr("Modified"),
          QDateTime::fromSecsSinceEpoch(file.mtime()).toString("yyyy-MM-dd hh:mm:ss"));
  if (view.isFinal()) field(QObject::tr("Final"), QObject::tr("yes"));

  if (view.modelState()) {
    QString p = QObject::tr("%1 in %2 tensors")
                    .arg(groupedNumber(view.parameterCount()))
                    .arg(view.entries().size());
    if (!view.modelStateKey().empty())
      p += QObject::tr(" (under \"%1\")").arg(fromStd(view.modelStateKey()));
    wideField(QObject::tr("Parameters"), p);
    if (view.ddpPrefix() || view.compiledPrefix()) {
      // The keys carried wrapper prefixes, stripped from every name shown.
      const char* what =
          view.ddpPrefix() && view.compiledPrefix()
              ? QT_TR_NOOP(
                    "saved from a DDP-wrapped / compiled model (module. and _orig_mod. stripped)")
          : view.ddpPrefix() ? QT_TR_NOOP("saved from a DDP-wrapped model (module. stripped)")
                             : QT_TR_NOOP("saved from a compiled model (_orig_mod. stripped)");
      wideField(QObject::tr("Wrapped"), QObject::tr(what));
    }
    QStringList tied;
    for (const StateEntry& e : view.entries())
      if (e.tiedTo >= 0)
        tied << fromStd(e.name) + " = " + fromStd(view.entries()[size_t(e.tiedTo)].name);
    wideField(QObject::tr("Tied weights"), tied.isEmpty() ? QObject::tr("none") : tied.join("; "));
  } else {
    wideField(QObject::tr("Parameters"), QObject::tr("no model state found"));
  }
  wideField(QObject::tr("Optimizer"),
            view.optimizer() ? optimizerSummary(*summarizeOptimizer(view)) : QObject::tr("none"));

  if (const Value* config = view.config())
    for (const auto& [k, v] : config->entries)
      out.config.append({keyText(k), fromStd(shortRepr(v, 80))});

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
  } else if (const Value* root = file.root();
             root && root->isDict() && root != view.modelState() && root != view.optimizer()) {
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
    for (int t : {p.expAvg, p.expAvgSq, p.stepTensor, p.master})
      if (t >= 0) owner[t] = QObject::tr("of %1").arg(fromStd(p.name));
  }
  for (const StateEntry& e : view.entries())
    if (e.tiedTo >= 0 && e.tensor >= 0)
      owner[e.tensor] =
          QObject::tr("tied to %1").arg(fromStd(view.entries()[size_t(e.tiedTo)].name));

  const auto& tensors = file.tensors();
  const auto& storages = file.storages();
  out.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    TensorRow row;
    row.name = QString::fromUtf8(t.name().data(), qsizetype(t.name().size()));
    row.dtype = fromStd(std::string(dtypeName(t.dtype)));
    row.shape = fromStd(t.shapeString());
    row.elements = t.numel();
    row.bytes = t.nbytes();
    QStringList note;
    if (auto it = owner.find(int(i)); it != owner.end()) note << it->second;
    if (t.storage >= 0 && storages[size_t(t.storage)].location != "cpu")
      note << fromStd(storages[size_t(t.storage)].location);
    if (t.isMeta) note << QObject::tr("meta");
    // How Megatron's tensor-parallel slices were joined (core's words).
    if (const ShardSet* shards = file.shards(); shards && t.storage >= 0)
      if (const std::string& joined = shards->tensors()[size_t(t.storage)].note; !joined.empty())
        note << fromStd(joined);
    if (!t.error.empty()) {
      note << QObject::tr("unreadable: %1").arg(fromStd(t.error));
      row.broken = true;
    }
    row.note = note.join("; ");
    out.tensorBytes += row.bytes;
    out.tensors.push_back(std::move(row));
  }

  auto meta = std::make_shared<MetaNode>();
  MetaBuilder{file, kMaxMetaNodes, {}}.fill(*meta, QObject::tr("(root)"), file.root(), 0);
  if (const CheckpointFile* common = view.megatronCommon()) {
    // What a torch_dist save keeps beside its tensors (args, iteration, ...).
    meta->children.emplace_back();
    MetaBuilder{*common, kMaxMetaNodes, {}}.fill(meta->children.back(), QStringLiteral("common.pt"),
                                                 common->root(), 1);
  }
  linkTree(*meta);
  out.metaTree = std::move(meta);
  if (view.modelState()) out.paramTree = buildParamTree(file, view);
  for (const OptimizerParam& p : view.optimizerParams()) {
    OptimizerRow r;
    r.index = p.index;
    r.name = fromStd(p.name);
    if (p.step)
      r.step = fromStd(formatPythonFloat(*p.step));
    else if (p.stepTensor >= 0) {
      // A 0-dim tensor of 4 or 8 bytes: read here, off the GUI thread.
      try {
        r.step = fromStd(formatPythonFloat(file.tensorData(size_t(p.stepTensor)).at(0)));
      } catch (const std::exception& e) {
        r.step = QObject::tr("unreadable");
      }
    }
    if (p.expAvg >= 0) r.shape = fromStd(file.tensors()[size_t(p.expAvg)].shapeString());
    r.expAvg = p.expAvg;
    r.expAvgSq = p.expAvgSq;
    r.problem = fromStd(p.problem);
    out.optimizer.push_back(std::move(r));
  }
}

}  // namespace

namespace {

// The Summary's first line: would this file run code if Python loaded it?
// A sharded checkpoint is as safe as its worst file, which is named.
QString safetyText(const CheckpointSafety& c) {
  const auto join = [](const std::vector<std::string>& names) {
    QStringList out;
    for (const std::string& n : names) out << fromStd(n);
    return out.join(", ");
  };
  const QString dangerous = join(c.offenders(SafetyLevel::Dangerous));
  const QString suspicious = join(c.offenders(SafetyLevel::Suspicious));
  if (!c.sharded()) {
    const QString error = c.files.empty() ? fromStd(c.error) : fromStd(c.files[0].report.error);
    switch (c.verdict) {
      case Verdict::Safe:
        return QObject::tr("safe: only tensors and plain data");
      case Verdict::Suspicious:
        return QObject::tr("suspicious: pickled objects that are not plain data: %1")
            .arg(suspicious);
      case Verdict::Dangerous:
        return QObject::tr("DANGEROUS: would run code if loaded in Python (torch.load): %1")
            .arg(dangerous);
      case Verdict::Unreadable:
        return QObject::tr("unknown: the scan stopped: %1").arg(error);
    }
    return {};
  }
  // The file that carries the verdict ("__2_0.distcp and 1 more file").
  const FileSafety* worst = c.worstFile();
  QString who;
  if (worst) {
    who = fromStd(worst->file);
    if (const size_t more = c.filesWithVerdict() - 1; more > 0)
      who = QObject::tr("%1 and %2 more").arg(who).arg(more) + " " +
            (more == 1 ? QObject::tr("file") : QObject::tr("files"));
  }
  QString text;
  switch (c.verdict) {
    case Verdict::Safe:
      text = QObject::tr("safe: %1, only tensors and plain data").arg(fromStd(c.scope()));
      break;
    case Verdict::Suspicious:
      text = QObject::tr("suspicious: pickled objects that are not plain data in %1: %2")
                 .arg(who, suspicious);
      break;
    case Verdict::Dangerous:
      text = QObject::tr("DANGEROUS: %1 would run code if loaded in Python (torch.load): %2")
                 .arg(who, dangerous);
      break;
    case Verdict::Unreadable:
      text = worst ? QObject::tr("unknown: the scan of %1 stopped: %2")
                         .arg(fromStd(worst->file), fromStd(worst->report.error))
                   : QObject::tr("unknown: the scan stopped: %1").arg(fromStd(c.error));
      break;
  }
  if (c.missing > 0) text += QObject::tr(" (%1 missing, not scanned)").arg(c.missing);
  return text;
}

}  // namespace

CheckpointSummary summarizeCheckpoint(const QString& path) {
  CheckpointSummary out;
  out.path = path;
  // An opcode walk of the file's pickles (a sharded checkpoint: of every
  // file its layout names); nothing in them is run.
  const CheckpointSafety safety = scanCheckpoint(pathToStd(path));
  try {
    std::shared_ptr<const CheckpointFile> file = CheckpointFile::open(pathToStd(path));
    describe(*file, out);
    out.fields.prepend({QObject::tr("Safety"), safetyText(safety), false});
    out.file = std::move(file);
  } catch (const std::exception& e) {
    // Catch once at the boundary: the panel shows the message instead.
    CheckpointSummary failed;
    failed.path = path;
    failed.error = fromStd(e.what());
    if (failed.error.isEmpty()) failed.error = QObject::tr("unknown error");
    if (safety.verdict == Verdict::Dangerous || safety.verdict == Verdict::Suspicious)
      failed.error = QObject::tr("Safety: %1").arg(safetyText(safety)) + "\n\n" + failed.error;
    return failed;
  }
  return out;
}

void addTrainerField(CheckpointSummary& summary, const QString& line) {
  if (!summary.ok() || line.isEmpty()) return;
  // After the format: which program wrote it comes before what is in it.
  summary.fields.insert(std::min<qsizetype>(1, summary.fields.size()),
                        {QObject::tr("Trainer"), line, true});
}

}  // namespace ckpt
