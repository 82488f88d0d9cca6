#include "browser/prunedialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <set>

#include "textformat.h"

namespace ckpt {
namespace {

const char* kBestKey = "prune/keepBest";
const char* kLastKey = "prune/keepLast";
const char* kEveryKey = "prune/every";

}  // namespace

PruneDialog::PruneDialog(RunEntry run, QWidget* parent) : QDialog(parent), m_run(std::move(run)) {
  setWindowTitle(tr("Prune %1").arg(fromStd(m_run.name)));
  auto* layout = new QVBoxLayout(this);
  auto* intro =
      new QLabel(tr("Checkpoints of %1 that no rule keeps go to the trash (never deleted). Every "
                    "stage's final, the newest checkpoint and files that are not step checkpoints "
                    "always stay.")
                     .arg(pathFromStd(m_run.path)));
  intro->setWordWrap(true);
  layout->addWidget(intro);

  auto* form = new QFormLayout;
  m_best = new QComboBox;
  m_best->addItem(tr("(no metric)"), QString());
  std::set<std::string> metrics;
  for (const CheckpointEntry& e : m_run.checkpoints) {
    for (const auto& [k, v] : e.scalars)
      if (k != "learning_rate" && k != "tokens_seen") metrics.insert(k);
    if (e.loss) metrics.insert("loss");
  }
  for (const std::string& m : metrics) m_best->addItem(fromStd(m), fromStd(m));
  const QSettings settings;
  const QString best = settings.value(kBestKey, QStringLiteral("val_loss")).toString();
  int bestIndex = m_best->findData(best);
  if (bestIndex < 0) bestIndex = m_best->findData(QStringLiteral("loss"));
  m_best->setCurrentIndex(std::max(bestIndex, 0));
  form->addRow(tr("Keep the &best by:"), m_best);
  m_last = new QSpinBox;
  m_last->setRange(0, 100000);
  m_last->setSpecialValueText(tr("none"));
  m_last->setValue(settings.value(kLastKey, 3).toInt());
  form->addRow(tr("Keep the &last:"), m_last);
  m_every = new QSpinBox;
  m_every->setRange(0, 100000000);
  m_every->setSpecialValueText(tr("off"));
  m_every->setSuffix(tr(" steps"));
  m_every->setValue(settings.value(kEveryKey, 0).toInt());
  form->addRow(tr("Keep &every:"), m_every);
  layout->addLayout(form);

  m_files = new QTreeWidget;
  m_files->setHeaderLabels({tr("File"), tr("Step"), tr("Size"), tr("Fate"), tr("Why it stays")});
  m_files->setRootIsDecorated(false);
  m_files->setUniformRowHeights(true);
  m_files->header()->setStretchLastSection(true);
  layout->addWidget(m_files, 1);
  m_summary = new QLabel;
  m_summary->setWordWrap(true);
  layout->addWidget(m_summary);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
  m_trash = buttons->addButton(tr("Move to Trash"), QDialogButtonBox::DestructiveRole);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(m_trash, &QPushButton::clicked, this, &PruneDialog::moveToTrash);
  layout->addWidget(buttons);

  connect(m_best, &QComboBox::currentIndexChanged, this, &PruneDialog::replan);
  connect(m_last, &QSpinBox::valueChanged, this, &PruneDialog::replan);
  connect(m_every, &QSpinBox::valueChanged, this, &PruneDialog::replan);
  resize(760, 520);
  replan();
}

void PruneDialog::replan() {
  PruneRules rules;
  rules.keepBest = m_best->currentData().toString().toStdString();
  rules.keepLast = m_last->value();
  rules.every = m_every->value();
  m_files->clear();
  m_plan = PrunePlan{};
  try {
    m_plan = planPrune(m_run, rules);
  } catch (const std::exception& e) {
    m_summary->setText(fromStd(e.what()));
    m_trash->setEnabled(false);
    m_trash->setText(tr("Move to Trash"));
    return;
  }
  // By step, as the browser lists them.
  std::vector<std::pair<const PruneFile*, bool>> rows;
  for (const PruneFile& f : m_plan.keep) rows.emplace_back(&f, true);
  for (const PruneFile& f : m_plan.remove) rows.emplace_back(&f, false);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.first->step.value_or(INT64_MAX) < b.first->step.value_or(INT64_MAX);
  });
  for (const auto& [f, kept] : rows) {
    QStringList why;
    for (const std::string& r : f->reasons) why << fromStd(r);
    auto* item = new QTreeWidgetItem(
        {fromStd(f->name), f->step ? QString::number(*f->step) : QString(), sizeText(f->size),
         kept ? tr("keep") : tr("trash"), why.join(QStringLiteral(", "))});
    item->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
    item->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
    item->setToolTip(0, fromStd(f->path));
    if (!kept) {
      QFont bold = item->font(0);
      bold.setBold(true);
      for (int c = 0; c < 4; ++c) item->setFont(c, bold);
    }
    m_files->addTopLevelItem(item);
  }
  for (int c = 0; c < 4; ++c) m_files->resizeColumnToContents(c);
  const int n = int(m_plan.remove.size());
  m_summary->setText(n == 0 ? tr("Nothing to trash: the rules keep all %1 files (%2).")
                                  .arg(m_plan.keep.size())
                                  .arg(sizeText(m_plan.keptBytes))
                            : tr("%1 of %2 files go to the trash, %3 freed; %4 stay (%5).")
                                  .arg(n)
                                  .arg(n + int(m_plan.keep.size()))
                                  .arg(sizeText(m_plan.freedBytes))
                                  .arg(m_plan.keep.size())
                                  .arg(sizeText(m_plan.keptBytes)));
  m_trash->setEnabled(n > 0);
  m_trash->setText(n > 0 ? tr("Move %n to Trash", nullptr, n) : tr("Move to Trash"));
}

void PruneDialog::moveToTrash() {
  QSettings settings;
  settings.setValue(kBestKey, m_best->currentData().toString());
  settings.setValue(kLastKey, m_last->value());
  settings.setValue(kEveryKey, m_every->value());
  std::vector<std::string> files;
  for (const PruneFile& f : m_plan.remove) files.push_back(f.path);
  try {
    m_trashed = trashFiles(m_plan.runDir, files);
  } catch (const std::exception& e) {
    // Those moved before the failure stay moved: accepted, so the window rescans.
    QMessageBox::warning(
        this, windowTitle(),
        tr("Not every file could be moved to the trash:\n%1").arg(fromStd(e.what())));
  }
  accept();
}

}  // namespace ckpt
