#include "inspector/checkpointsummary.h"

#include <QDateTime>
#include <QFileInfo>
#include <QStringList>
#include <algorithm>
#include <exception>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/index/checkpoint_description.h"
#include "ckpt/index/hf_optimizer.h"
#include "ckpt/remote/shards_wire.h"
#include "textformat.h"

namespace ckpt {
namespace {

QString optimizerSummary(const CheckpointDescription& d) {
  QString s = QObject::tr("%1 parameters with state").arg(d.optimizerWithState);
  if (d.optimizerGroups > 0) {
    if (d.optimizerGroups > 1) s += QObject::tr(", %1 groups").arg(d.optimizerGroups);
    QStringList hyper;
    for (const auto& [key, value] : d.optimizerHyper) hyper << fromStd(key) + " " + fromStd(value);
    if (!hyper.isEmpty()) s += " (" + hyper.join(", ") + ")";
  }
  size_t mapped = 0;
  for (const DescribedOptimizerRow& p : d.optimizer)
    if (!p.name.empty() && p.problem.empty()) ++mapped;
  if (!d.optimizer.empty())
    s += QObject::tr("; %1 of %2 mapped to parameters").arg(mapped).arg(d.optimizer.size());
  return s;
}

template <typename Node>
void linkTree(Node& n) {
  for (size_t i = 0; i < n.children.size(); ++i) {
    n.children[i].parent = &n;
    n.children[i].row = int(i);
    linkTree(n.children[i]);
  }
}

// The Metadata tab's words for a described value.
void fillMeta(MetaNode& n, const DescribedValue& v) {
  switch (v.keyKind) {
    case DescribedValue::Key::Root:
      n.key = v.key.empty() ? QObject::tr("(root)") : fromStd(v.key);
      break;
    case DescribedValue::Key::ListItem:
      n.key = QObject::tr("item %1").arg(v.item);
      break;
    case DescribedValue::Key::Text:
      n.key = fromStd(v.key);
      break;
  }
  n.type = fromStd(v.type);
  n.tensor = v.tensor;
  if (v.truncated) {
    n.value = QObject::tr("(not shown: more than %1 values)").arg(kMaxDescribedValues);
    return;
  }
  if (v.count >= 0)
    n.value = v.type == "dict" || v.type == "OrderedDict" ? QObject::tr("%1 keys").arg(v.count)
                                                          : QObject::tr("%1 items").arg(v.count);
  else
    n.value = fromStd(v.text);
  if (v.repeats) n.value += QObject::tr(" (repeats an enclosing value)");
  n.children.resize(v.children.size());
  for (size_t i = 0; i < v.children.size(); ++i) fillMeta(n.children[i], v.children[i]);
}

// Dotted state-dict names as a hierarchy; parents count each storage once.
std::shared_ptr<const ParamNode> buildParamTree(const std::vector<DescribedEntry>& entries) {
  auto root = std::make_shared<ParamNode>();
  root->name = QObject::tr("model");
  for (const DescribedEntry& e : entries) {
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
    n->dtype = fromStd(e.dtype);
    n->shape = fromStd(e.shape);
    n->parameters = e.numel;
    n->bytes = e.nbytes;
    n->tiedTo = fromStd(e.tiedTo);
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

// The Summary's first line: would this file run code if Python loaded it?
// A sharded checkpoint is as safe as its worst file, which is named.
QString safetyText(const DescribedSafety& c) {
  const auto join = [](const std::vector<std::string>& names) {
    QStringList out;
    for (const std::string& n : names) out << fromStd(n);
    return out.join(", ");
  };
  const QString dangerous = join(c.dangerous);
  const QString suspicious = join(c.suspicious);
  if (!c.sharded) {
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
        return QObject::tr("unknown: the scan stopped: %1").arg(fromStd(c.error));
    }
    return {};
  }
  // The file that carries the verdict ("__2_0.distcp and 1 more file").
  QString who = fromStd(c.worstFile);
  if (!who.isEmpty())
    if (const uint64_t more = c.filesWithVerdict > 0 ? c.filesWithVerdict - 1 : 0; more > 0)
      who = QObject::tr("%1 and %2 more").arg(who).arg(more) + " " +
            (more == 1 ? QObject::tr("file") : QObject::tr("files"));
  QString text;
  switch (c.verdict) {
    case Verdict::Safe:
      text = QObject::tr("safe: %1, only tensors and plain data").arg(fromStd(c.scope));
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
      text = !c.worstFile.empty()
                 ? QObject::tr("unknown: the scan of %1 stopped: %2")
                       .arg(fromStd(c.worstFile), fromStd(c.error))
                 : QObject::tr("unknown: the scan stopped: %1").arg(fromStd(c.error));
      break;
  }
  if (c.missing > 0) text += QObject::tr(" (%1 missing, not scanned)").arg(c.missing);
  return text;
}

}  // namespace

CheckpointSummary summaryFromDescription(const CheckpointDescription& d) {
  CheckpointSummary out;
  out.path = fromStd(d.path);
  auto field = [&out](const QString& label, const QString& value) {
    out.fields.append({label, value, false});
  };
  auto wideField = [&out](const QString& label, const QString& value) {
    out.fields.append({label, value, true});
  };
  field(QObject::tr("Safety"), safetyText(d.safety));
  QString format = fromStd(d.format);
  if (d.bigEndian) format += QObject::tr(", big-endian");
  field(QObject::tr("Format"), format);
  field(QObject::tr("Size"),
        QObject::tr("%1 (%2 bytes)").arg(sizeText(d.fileSize), groupedNumber(d.fileSize)));
  if (d.step && !d.stepSource.empty())
    // A Megatron torch_dist save: its iteration is in common.pt, not its tensors.
    field(QObject::tr("Step"), QObject::tr("%1 (from %2)").arg(*d.step).arg(fromStd(d.stepSource)));
  else if (d.step)
    field(QObject::tr("Step"), QString::number(*d.step));
  else if (d.stepFromName)
    field(QObject::tr("Step"), QObject::tr("%1 (from the file name)").arg(*d.stepFromName));
  // Four decimals as everywhere else (the browser, the curves); the exact value is in Metadata.
  if (d.loss) field(QObject::tr("Loss"), lossText(*d.loss));
  if (d.run) field(QObject::tr("Run"), fromStd(*d.run));
  if (d.stage) field(QObject::tr("Stage"), fromStd(*d.stage));
  if (d.mtime)
    field(QObject::tr("Modified"),
          QDateTime::fromSecsSinceEpoch(d.mtime).toString("yyyy-MM-dd hh:mm:ss"));
  if (d.final) field(QObject::tr("Final"), QObject::tr("yes"));

  if (d.hasModelState) {
    QString p =
        QObject::tr("%1 in %2 tensors").arg(groupedNumber(d.parameterCount)).arg(d.entries.size());
    if (!d.modelStateKey.empty()) p += QObject::tr(" (under \"%1\")").arg(fromStd(d.modelStateKey));
    wideField(QObject::tr("Parameters"), p);
    if (d.ddpPrefix || d.compiledPrefix) {
      // The keys carried wrapper prefixes, stripped from every name shown.
      const char* what =
          d.ddpPrefix && d.compiledPrefix
              ? QT_TR_NOOP(
                    "saved from a DDP-wrapped / compiled model (module. and _orig_mod. stripped)")
          : d.ddpPrefix ? QT_TR_NOOP("saved from a DDP-wrapped model (module. stripped)")
                        : QT_TR_NOOP("saved from a compiled model (_orig_mod. stripped)");
      wideField(QObject::tr("Wrapped"), QObject::tr(what));
    }
    QStringList tied;
    for (const DescribedEntry& e : d.entries)
      if (!e.tiedTo.empty()) tied << fromStd(e.name) + " = " + fromStd(e.tiedTo);
    wideField(QObject::tr("Tied weights"), tied.isEmpty() ? QObject::tr("none") : tied.join("; "));
  } else {
    wideField(QObject::tr("Parameters"), QObject::tr("no model state found"));
  }
  wideField(QObject::tr("Optimizer"), d.hasOptimizer ? optimizerSummary(d) : QObject::tr("none"));

  for (const auto& [k, v] : d.config) out.config.append({fromStd(k), fromStd(v)});
  for (const auto& [k, v] : d.metadata) {
    const QString text = fromStd(v);
    out.metadata.append({fromStd(k), text, text.size() > 30});
  }
  QStringList keys;
  for (const std::string& k : d.metadataKeys) keys << fromStd(k);
  wideField(QObject::tr("Metadata keys"), keys.isEmpty() ? QObject::tr("none") : keys.join(", "));
  for (const std::string& n : d.notes) out.notes << fromStd(n);

  out.tensors.reserve(d.tensors.size());
  for (const DescribedTensor& t : d.tensors) {
    TensorRow row;
    row.name = QString::fromUtf8(t.name.data(), qsizetype(t.name.size()));
    row.dtype = fromStd(t.dtype);
    row.shape = fromStd(t.shape);
    row.elements = t.elements;
    row.bytes = t.bytes;
    QStringList note;
    if (t.ownerKind == DescribedTensor::Owner::OptimizerOf)
      note << QObject::tr("of %1").arg(fromStd(t.owner));
    else if (t.ownerKind == DescribedTensor::Owner::TiedTo)
      note << QObject::tr("tied to %1").arg(fromStd(t.owner));
    if (!t.location.empty()) note << fromStd(t.location);
    if (t.meta) note << QObject::tr("meta");
    // How Megatron's tensor-parallel slices were joined (core's words).
    if (!t.joined.empty()) note << fromStd(t.joined);
    if (!t.error.empty()) {
      note << QObject::tr("unreadable: %1").arg(fromStd(t.error));
      row.broken = true;
    }
    row.note = note.join("; ");
    out.tensorBytes += row.bytes;
    out.tensors.push_back(std::move(row));
  }

  auto meta = std::make_shared<MetaNode>();
  fillMeta(*meta, d.tree);
  linkTree(*meta);
  out.metaTree = std::move(meta);
  if (d.hasModelState) out.paramTree = buildParamTree(d.entries);
  for (const DescribedOptimizerRow& p : d.optimizer) {
    OptimizerRow r;
    r.index = p.index;
    r.name = fromStd(p.name);
    r.step = p.stepUnreadable ? QObject::tr("unreadable") : fromStd(p.step);
    r.shape = fromStd(p.shape);
    r.expAvg = p.expAvg;
    r.expAvgSq = p.expAvgSq;
    r.problem = fromStd(p.problem);
    out.optimizer.push_back(std::move(r));
  }
  out.sharded = d.sharded;
  return out;
}

CheckpointSummary summarizeCheckpoint(const QString& path, const QString& optimizerPath) {
  // An opcode walk of the file's pickles (a sharded checkpoint: of every
  // file its layout names); nothing in them is run.
  const CheckpointSafety safety = scanCheckpoint(pathToStd(path));
  try {
    std::shared_ptr<const CheckpointFile> file = CheckpointFile::open(pathToStd(path));
    CheckpointDescription d = describeCheckpoint(*file, safety);
    std::shared_ptr<const CheckpointFile> optimizerFile;
    const QString optimizerName = QFileInfo(optimizerPath).fileName();
    if (!d.hasOptimizer && !optimizerPath.isEmpty()) {
      try {
        optimizerFile = CheckpointFile::open(pathToStd(optimizerPath));
        CheckpointDescription o =
            describeCheckpoint(*optimizerFile, scanCheckpoint(pathToStd(optimizerPath)));
        d.hasOptimizer = o.hasOptimizer;
        d.optimizerWithState = o.optimizerWithState;
        d.optimizerGroups = o.optimizerGroups;
        d.optimizerHyper = std::move(o.optimizerHyper);
        d.optimizer = std::move(o.optimizer);
        // Its parameters named from the weights' state dict where the
        // Trainer's param groups allow it (hf_optimizer.h).
        const CheckpointView weights(*file), opt(*optimizerFile);
        const TrainerOptimizerNames named = trainerOptimizerNames(weights, opt);
        for (DescribedOptimizerRow& r : d.optimizer)
          if (r.index >= 0 && size_t(r.index) < named.names.size())
            r.name = named.names[size_t(r.index)];
        // Not the view's "without its model" notes: named.note says it here.
        const auto& numbered = opt.notes();
        for (const std::string& n : o.notes)
          if (std::find(numbered.begin(), numbered.end(), n) == numbered.end())
            d.notes.push_back(pathToStd(optimizerName) + ": " + n);
        if (d.hasOptimizer) d.notes.push_back(pathToStd(optimizerName) + ": " + named.note);
        if (!d.hasOptimizer) optimizerFile.reset();
      } catch (const std::exception& e) {
        // Said, not shown as "none": the file is there and cannot be read.
        d.notes.push_back(pathToStd(optimizerName) + ": cannot be read: " + e.what());
        optimizerFile.reset();
      }
    }
    CheckpointSummary out = summaryFromDescription(d);
    if (optimizerFile) {
      for (SummaryField& f : out.fields)
        if (f.label == QObject::tr("Optimizer"))
          f.value += QObject::tr(" (from %1)").arg(optimizerName);
      out.optimizerFile = std::move(optimizerFile);
    }
    out.path = path;
    if (const ShardSet* shards = file->shards())
      out.shards = std::make_shared<const ShardListing>(listShards(*shards));
    out.file = std::move(file);
    return out;
  } catch (const std::exception& e) {
    // Catch once at the boundary: the panel shows the message instead.
    return failedSummary(path, fromStd(e.what()), describeSafety(safety));
  }
}

CheckpointSummary failedSummary(const QString& path, const QString& error,
                                const DescribedSafety& safety) {
  CheckpointSummary failed;
  failed.path = path;
  failed.error = error.isEmpty() ? QObject::tr("unknown error") : error;
  if (safety.verdict == Verdict::Dangerous || safety.verdict == Verdict::Suspicious)
    failed.error = QObject::tr("Safety: %1").arg(safetyText(safety)) + "\n\n" + failed.error;
  return failed;
}

void addTrainerField(CheckpointSummary& summary, const QString& line) {
  if (!summary.ok() || line.isEmpty()) return;
  // After the format: which program wrote it comes before what is in it.
  summary.fields.insert(std::min<qsizetype>(1, summary.fields.size()),
                        {QObject::tr("Trainer"), line, true});
}

}  // namespace ckpt
