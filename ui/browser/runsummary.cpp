#include "browser/runsummary.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <algorithm>

#include "ckpt/index/trainers.h"
#include "textformat.h"

namespace ckpt {

namespace {

QString tr(const char* text) {
  return QCoreApplication::translate("ckpt::BrowseGroup", text);
}

// A hundred event files or MLflow metric files would bury the Summary.
constexpr qsizetype kFilesShown = 6;

QString relativeToRun(const BrowseGroup& run, const std::string& file) {
  // Both absolute: a directory opened as a relative path gives the run's
  // path and its files' paths in different forms.
  // A folder (an MLflow run's metrics/ and params/) says so: "metrics from metrics/".
  const QFileInfo info(pathFromStd(file));
  const QString slash = info.isDir() ? QStringLiteral("/") : QString();
  return (run.path.isEmpty() ? info.fileName()
                             : QDir(QFileInfo(run.path).absoluteFilePath())
                                   .relativeFilePath(info.absoluteFilePath())) +
         slash;
}

void add(std::vector<ThingSource>& out, const QString& thing, const QString& file) {
  for (ThingSource& s : out)
    if (s.thing == thing) {
      if (!s.files.contains(file)) s.files << file;
      return;
    }
  out.push_back({thing, {file}});
}

// What a checkpoint part's role (hf_trainer.h's hfPartRole, megatron.cpp's
// "rank mp_rank_01" / "optimizer mp_rank_01") holds, as a person says it.
QString thingOfRole(const std::string& role) {
  if (role == "config" || role == "training_args") return tr("hyperparameters");
  if (role == "trainer_state") return tr("trainer state");
  if (role.rfind("rank ", 0) == 0) return tr("weights");  // model_optim_rng.pt of another rank
  if (role.rfind("optimizer", 0) == 0) return tr("optimizer");
  return fromStd(role);
}

// The trainer's name, or that its files name none (our own .pt files
// without a metrics.jsonl, a checkpoint of no known layout).
QString trainerTitleText(const std::string& id) {
  return id.empty() ? tr("not named by its files") : fromStd(std::string(trainerTitle(id)));
}

// The first files, then how many more.
QStringList shownFiles(const QStringList& files) {
  if (files.size() <= kFilesShown) return files;
  return files.mid(0, kFilesShown - 1) << tr("and %1 more").arg(files.size() - (kFilesShown - 1));
}

}  // namespace

QString trainerText(const std::string& trainer) {
  return trainer.empty() ? QString() : trainerTitleText(trainer);
}

std::vector<ThingSource> thingSources(const BrowseGroup& run, const CheckpointEntry* checkpoint) {
  std::vector<ThingSource> out;
  const QString hyper = tr("hyperparameters");
  if (checkpoint) {
    add(out, tr("weights"), relativeToRun(run, checkpoint->path));
    for (const CheckpointPart& p : checkpoint->parts)
      add(out, thingOfRole(p.role), relativeToRun(run, p.path));
  } else if (!run.checkpoints.empty()) {
    // The newest (or final) checkpoint's config files describe the run.
    for (const CheckpointPart& p : run.checkpoints.back().parts)
      if (thingOfRole(p.role) == hyper) add(out, hyper, relativeToRun(run, p.path));
  }
  for (const std::string& f : run.metricFiles) add(out, tr("metrics"), relativeToRun(run, f));
  // The run's hyperparameter files (RUN.json, hparams.yaml, ...), unless the
  // checkpoint's own config files already say them (a Trainer's
  // checkpoint-<step>/config.json and training_args.bin).
  const bool ownConfig =
      std::any_of(out.begin(), out.end(), [&](const ThingSource& s) { return s.thing == hyper; });
  if (!ownConfig)
    for (const std::string& f : run.hparamFiles) add(out, hyper, relativeToRun(run, f));
  // Hyperparameters last, wherever the checkpoint's parts put them.
  std::stable_partition(out.begin(), out.end(),
                        [&](const ThingSource& s) { return s.thing != hyper; });
  return out;
}

QString trainerLine(const BrowseGroup& run, const CheckpointEntry* checkpoint) {
  const std::string& id =
      checkpoint && !checkpoint->trainer.empty() ? checkpoint->trainer : run.trainer;
  const std::vector<ThingSource> sources = thingSources(run, checkpoint);
  // A lone file: its weights are the file the Summary is about.
  if (id.empty() && sources.size() <= size_t(checkpoint ? 1 : 0)) return {};
  QStringList from;
  for (const ThingSource& s : sources)
    from << tr("%1 from %2").arg(s.thing, shownFiles(s.files).join(QStringLiteral(", ")));
  const QString title = trainerTitleText(id);
  return from.isEmpty() ? title : title + QStringLiteral(": ") + from.join(QStringLiteral("; "));
}

QString groupSummaryHtml(const BrowseGroup& group) {
  if (!group.error.isEmpty())
    return QString("<p style='color:#a00000'><b>%1</b></p><p>%2</p>")
        .arg(tr("Cannot scan this directory").toHtmlEscaped(), group.error.toHtmlEscaped());
  QString html = QString("<p>%1</p>")
                     .arg(tr("%1 in %2")
                              .arg(countText(group.checkpoints.size(), "checkpoint", "checkpoints"),
                                   group.path.isEmpty() ? tr("files opened directly") : group.path)
                              .toHtmlEscaped());
  // The Trainer line, a row per thing so that long file lists stay legible.
  const std::vector<ThingSource> sources = thingSources(group, nullptr);
  if (!group.trainer.empty() || !sources.empty()) {
    QString rows =
        QString("<tr><td><b>%1</b></td><td>%2</td></tr>")
            .arg(tr("Trainer").toHtmlEscaped(), trainerTitleText(group.trainer).toHtmlEscaped());
    for (const ThingSource& s : sources) {
      QStringList files;
      for (const QString& f : shownFiles(s.files)) files << f.toHtmlEscaped();
      rows += QString("<tr><td>%1</td><td>%2</td></tr>")
                  .arg(tr("%1 from").arg(s.thing).toHtmlEscaped(), files.join("<br>"));
    }
    // What the trainer's files say of the run (an MLflow run's status, times, tags).
    for (const auto& [label, text] : group.facts) {
      QStringList lines = text.split('\n', Qt::SkipEmptyParts);
      for (QString& l : lines) l = l.toHtmlEscaped();
      rows += QString("<tr><td>%1</td><td>%2</td></tr>")
                  .arg(label.toHtmlEscaped(), shownFiles(lines).join("<br>"));
    }
    html += QString("<table cellspacing='0' cellpadding='3'>%1</table>").arg(rows);
  }
  if (group.checkpoints.empty() && !group.metricFiles.empty()) {
    html += QString("<p>%1</p>")
                .arg(tr("No checkpoint yet: its curves are in the Curves tab.").toHtmlEscaped());
    return html;
  }
  QString rows;
  for (const CheckpointEntry& c : group.checkpoints)
    rows += QString(
                "<tr><td>%1</td><td align='right'>%2</td><td>%3</td><td align='right'>%4</td><td "
                "align='right'>%5</td></tr>")
                .arg(QFileInfo(pathFromStd(c.file)).fileName().toHtmlEscaped(),
                     c.step ? QString::number(*c.step) : QString(),
                     c.error.empty() ? fromStd(std::string(checkpointKindName(c.kind)))
                                     : tr("unreadable"),
                     c.loss ? lossText(*c.loss) : QString(), sizeText(c.size));
  html +=
      QString(
          "<p></p><table cellspacing='0' cellpadding='3'><tr><th align='left'>%1</th><th>%2</th>"
          "<th align='left'>%3</th><th>%4</th><th>%5</th></tr>%6</table>")
          .arg(tr("File"), tr("Step"), tr("Kind"), tr("Loss"), tr("Size"), rows);
  return html;
}

}  // namespace ckpt
