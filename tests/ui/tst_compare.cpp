// The Compare view and its entry points in the window. Expectations are the
// float64 numbers torch computed for the same pairs (make_diff_fixtures.py,
// diff_reference.py): never numbers typed in here.
#include <qcustomplot.h>
#include <QAbstractItemModelTester>
#include <QBrush>
#include <QColor>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTranslator>
#include <QTreeView>
#include <cmath>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "compare/compareview.h"
#include "compare/diffmodel.h"
#include "compare/driftview.h"
#include "mainwindow.h"

using namespace ckpt;
using Column = DiffModel::Column;

namespace {

constexpr int kTimeoutMs = 60'000;

// A JSON number, or {"$float": "nan"|"inf"|"-inf"} as the fixtures write non-finite values.
double number(const QJsonValue& v) {
  if (v.isObject()) {
    const QString f = v.toObject().value("$float").toString();
    if (f == "nan") return std::nan("");
    return f.startsWith('-') ? -INFINITY : INFINITY;
  }
  return v.toDouble();
}

bool same(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= 1e-9 * std::max(1.0, std::fabs(want));
}

// A translation into "German" for DiffModel's words: what an installed .qm
// would do, without one (English stays the source text).
class FakeGerman : public QTranslator {
 public:
  QString translate(const char* context, const char* source, const char* /*disambiguation*/,
                    int /*n*/) const override {
    if (QLatin1String(context) != QLatin1String("ckpt::DiffModel")) return {};
    static const QMap<QString, QString> words{{"added", "hinzugefügt"}, {"removed", "entfernt"},
                                              {"shape", "Form"},        {"dtype", "Datentyp"},
                                              {"error", "Fehler"},      {"same", "gleich"},
                                              {"changed", "geändert"},  {"Status", "Zustand"}};
    return words.value(QString::fromUtf8(source));
  }
  [[nodiscard]] bool isEmpty() const override { return false; }
};

bool compareAndWait(CompareView& view, const QString& a, const QString& b) {
  QSignalSpy done(&view, &CompareView::finished);
  view.compare(a, b);
  return done.count() == 1 || done.wait(kTimeoutMs);
}

}  // namespace

class TestCompare : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void tableMatchesTorch_data();
  void tableMatchesTorch();
  void layersMatchTorch();
  void filterAndSort();
  void statusWordsAreTranslated();
  void unreadableFileIsAnError();
  void windowComparesSelection();
  void driftThroughRun();
  void driftThroughStages();
  void driftThroughStagesSkipsBranches();

 private:
  [[nodiscard]] QJsonObject pair(const QString& name) const;
  [[nodiscard]] QString file(const QString& rel) const { return m_dir + "/" + rel; }

  QString m_dir;
  QJsonArray m_pairs;
};

void TestCompare::initTestCase() {
  m_dir = QStringLiteral(CKPT_FIXTURE_DIR) + "/diff";
  QFile f(m_dir + "/expected.json");
  QVERIFY2(f.open(QIODevice::ReadOnly), "no diff fixtures: run ctest (make_diff_fixtures)");
  m_pairs = QJsonDocument::fromJson(f.readAll()).object().value("pairs").toArray();
  QVERIFY(m_pairs.size() >= 3);
}

QJsonObject TestCompare::pair(const QString& name) const {
  for (const QJsonValue& p : m_pairs)
    if (p.toObject().value("name").toString() == name) return p.toObject();
  return {};
}

void TestCompare::tableMatchesTorch_data() {
  QTest::addColumn<QString>("name");
  for (const QJsonValue& p : m_pairs) {
    const QString name = p.toObject().value("name").toString();
    QTest::newRow(qPrintable(name)) << name;
  }
}

void TestCompare::tableMatchesTorch() {
  QFETCH(QString, name);
  const QJsonObject p = pair(name);
  const QJsonObject want = p.value("expected").toObject();
  CompareView view;
  QAbstractItemModelTester tester(view.model(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  QAbstractItemModelTester proxyTester(view.proxy(),
                                       QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(compareAndWait(view, file(p.value("a").toString()), file(p.value("b").toString())));
  DiffModel* model = view.model();

  // Rows by name and status.
  QMap<QString, int> tensorRows;
  QStringList added, removed, shape;
  for (int r = 0; r < model->rowCount(); ++r) {
    const QString n = model->index(r, int(Column::Name)).data().toString();
    const QString status = model->index(r, 0).data(int(DiffModel::Role::Status)).toString();
    if (status == "added")
      added << n;
    else if (status == "removed")
      removed << n;
    else if (status == "shape")
      shape << n;
    else
      tensorRows[n] = r;
  }
  auto names = [](const QJsonValue& v, const char* key = nullptr) {
    QStringList out;
    for (const QJsonValue& e : v.toArray())
      out << (key ? e.toObject().value(key).toString() : e.toString());
    return out;
  };
  QCOMPARE(added, names(want.value("added")));
  QCOMPARE(removed, names(want.value("removed")));
  QCOMPARE(shape, names(want.value("changed_shape"), "name"));

  const QJsonObject tensors = want.value("tensors").toObject();
  QCOMPARE(tensorRows.size(), tensors.size());
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    QVERIFY2(tensorRows.contains(it.key()), qPrintable("missing row " + it.key()));
    const int r = tensorRows[it.key()];
    const QJsonObject t = it.value().toObject();
    const struct {
      Column column;
      const char* key;
    } metrics[] = {{Column::RelL2, "rel_l2"},
                   {Column::Cosine, "cosine"},
                   {Column::MaxAbs, "max_abs"},
                   {Column::MeanAbs, "mean_abs"}};
    for (const auto& m : metrics) {
      const double got =
          model->index(r, int(m.column)).data(int(DiffModel::Role::Value)).toDouble();
      const double expected = number(t.value(m.key));
      QVERIFY2(same(got, expected), qPrintable(QString("%1 %2: %3, torch %4")
                                                   .arg(it.key(), m.key)
                                                   .arg(got, 0, 'g', 17)
                                                   .arg(expected, 0, 'g', 17)));
    }
  }

  // Metadata: every key side by side, the ones that differ highlighted.
  const QJsonArray meta = want.value("metadata").toArray();
  QVERIFY(view.metadataTable()->rowCount() >= int(meta.size()));
  QStringList wantKeys, gotKeys, allKeys;
  for (const QJsonValue& m : meta) wantKeys << m.toObject().value("key").toString();
  for (int r = 0; r < view.metadataTable()->rowCount(); ++r) {
    allKeys << view.metadataTable()->item(r, 0)->text();
    if (view.metadataTable()->item(r, 0)->data(Qt::UserRole).toBool())
      gotKeys << allKeys.back();
    else
      QCOMPARE(view.metadataTable()->item(r, 1)->text(), view.metadataTable()->item(r, 2)->text());
  }
  if (name == "perturbed") QVERIFY(allKeys.contains("step") && allKeys.contains("config.d_model"));
  wantKeys.sort();
  gotKeys.sort();
  QCOMPARE(gotKeys, wantKeys);
}

void TestCompare::layersMatchTorch() {
  const QJsonObject p = pair("perturbed");
  const QJsonObject want = p.value("expected").toObject();
  CompareView view;
  view.resize(900, 700);
  QVERIFY(compareAndWait(view, file(p.value("a").toString()), file(p.value("b").toString())));

  // Bars: one per block, -1 (outside the blocks) first.
  const QJsonObject blocks = want.value("blocks").toObject();
  auto* bars = qobject_cast<QCPBars*>(view.blockPlot()->plottable(0));
  QVERIFY(bars);
  QCOMPARE(bars->data()->size(), int(blocks.size()));
  QList<int> order;
  for (const QString& k : blocks.keys()) order << k.toInt();
  std::sort(order.begin(), order.end());
  for (int i = 0; i < order.size(); ++i)
    QVERIFY2(same(bars->data()->at(i)->value, blocks.value(QString::number(order[i])).toDouble()),
             qPrintable(QString("block %1").arg(order[i])));

  // Heat map: every block x module cell, found through the axes' labels.
  const QJsonObject modules = want.value("modules").toObject();
  QCPColorMap* map = view.heatMap();
  QVERIFY(map);
  auto columns = qSharedPointerDynamicCast<QCPAxisTickerText>(map->keyAxis()->ticker());
  auto rows = qSharedPointerDynamicCast<QCPAxisTickerText>(map->valueAxis()->ticker());
  QVERIFY(columns && rows);
  int cells = 0;
  for (auto c = columns->ticks().begin(); c != columns->ticks().end(); ++c) {
    for (auto r = rows->ticks().begin(); r != rows->ticks().end(); ++r) {
      const QString block = r.value() == "emb/head" ? "-1" : r.value();
      const QString key = block + ":" + c.value();
      const double got = map->data()->cell(int(c.key()), int(r.key()));
      if (!modules.contains(key)) {
        QVERIFY2(std::isnan(got), qPrintable(key + " should be empty"));
        continue;
      }
      ++cells;
      QVERIFY2(same(got, modules.value(key).toDouble()), qPrintable(key));
    }
  }
  QCOMPARE(cells, int(modules.size()));
  if (qEnvironmentVariableIsSet("CKPT_KEEP_SCREENSHOTS")) {
    view.tabs()->setCurrentIndex(1);
    view.grab().save(qEnvironmentVariable("CKPT_KEEP_SCREENSHOTS") + "/compare-layers.png");
  }
}

void TestCompare::filterAndSort() {
  const QJsonObject p = pair("structure");
  CompareView view;
  QVERIFY(compareAndWait(view, file(p.value("a").toString()), file(p.value("b").toString())));
  QSortFilterProxyModel* proxy = view.proxy();
  // Structure changes first, then the largest relative change down.
  const int structural =
      int(p.value("expected").toObject().value("added").toArray().size() +
          p.value("expected").toObject().value("removed").toArray().size() +
          p.value("expected").toObject().value("changed_shape").toArray().size());
  QVERIFY(structural > 0);
  double previous = INFINITY;
  for (int r = 0; r < proxy->rowCount(); ++r) {
    const QString status = proxy->index(r, 0).data(int(DiffModel::Role::Status)).toString();
    const bool isStructure = status == "added" || status == "removed" || status == "shape";
    QCOMPARE(isStructure, r < structural);
    if (isStructure) continue;
    const double v =
        proxy->index(r, int(Column::RelL2)).data(int(DiffModel::Role::Value)).toDouble();
    QVERIFY2(v <= previous, qPrintable(QString("row %1 not sorted").arg(r)));
    previous = v;
  }
  view.setFilter("ATTN");  // case-insensitive substring of the name
  QVERIFY(proxy->rowCount() > 0 && proxy->rowCount() < view.model()->rowCount());
  for (int r = 0; r < proxy->rowCount(); ++r)
    QVERIFY(proxy->index(r, int(Column::Name)).data().toString().contains("attn"));
}

// The Status column's words go through tr(): translated, they are shown in
// the table (and sort as shown), while Role::Status, which code compares,
// stays English, so the colours and the structure-first order still hold.
void TestCompare::statusWordsAreTranslated() {
  const QJsonObject p = pair("structure");
  const QJsonObject want = p.value("expected").toObject();
  FakeGerman german;
  QVERIFY(QCoreApplication::installTranslator(&german));
  CompareView view;
  QVERIFY(compareAndWait(view, file(p.value("a").toString()), file(p.value("b").toString())));
  DiffModel* model = view.model();
  QCOMPARE(model->headerData(int(Column::Status), Qt::Horizontal).toString(),
           QStringLiteral("Zustand"));
  const QMap<QString, QString> shown{{"added", "hinzugefügt"}, {"removed", "entfernt"},
                                     {"shape", "Form"},        {"dtype", "Datentyp"},
                                     {"error", "Fehler"},      {"same", "gleich"},
                                     {"changed", "geändert"}};
  QMap<QString, int> counts;
  for (int r = 0; r < model->rowCount(); ++r) {
    const QString key = model->index(r, 0).data(int(DiffModel::Role::Status)).toString();
    QVERIFY2(shown.contains(key), qPrintable(key));
    ++counts[key];
    QCOMPARE(model->index(r, int(Column::Status)).data().toString(), shown.value(key));
    if (key == "removed")
      QCOMPARE(model->index(r, int(Column::Name)).data(Qt::ForegroundRole).value<QBrush>().color(),
               QColor(0xc0, 0x30, 0x30));
  }
  QCOMPARE(counts.value("added"), int(want.value("added").toArray().size()));
  QCOMPARE(counts.value("removed"), int(want.value("removed").toArray().size()));
  QCOMPARE(counts.value("shape"), int(want.value("changed_shape").toArray().size()));
  QVERIFY(counts.value("added") > 0 && counts.value("removed") > 0);
  QVERIFY(QCoreApplication::removeTranslator(&german));
  // Untranslated again: the English words, as before.
  for (int r = 0; r < model->rowCount(); ++r)
    QCOMPARE(model->index(r, int(Column::Status)).data().toString(),
             model->index(r, 0).data(int(DiffModel::Role::Status)).toString());
}

void TestCompare::unreadableFileIsAnError() {
  CompareView view;
  QSignalSpy done(&view, &CompareView::finished);
  const QString missing = m_dir + "/does-not-exist.pt";
  view.compare(file(pair("perturbed").value("a").toString()), missing);
  QVERIFY(done.wait(kTimeoutMs));
  QCOMPARE(done.front().front().toBool(), false);
  QVERIFY2(view.statusText().contains("Cannot compare") &&
               view.statusText().contains("does-not-exist.pt"),
           qPrintable(view.statusText()));
  QCOMPARE(view.model()->rowCount(), 0);
}

void TestCompare::windowComparesSelection() {
  // A run of two checkpoints: selecting both compares them, in the run's order.
  const QJsonObject p = pair("perturbed");
  QTemporaryDir dir;
  QVERIFY(dir.isValid() && QDir(dir.path()).mkpath("run"));
  const QString a = dir.path() + "/run/run_step100.pt", b = dir.path() + "/run/run_step200.pt";
  QVERIFY(QFile::copy(file(p.value("a").toString()), a));
  QVERIFY(QFile::copy(file(p.value("b").toString()), b));
  MainWindow w;
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths({dir.path()});
  QVERIFY(loaded.wait(kTimeoutMs));
  QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
  const QModelIndex ia = proxy->mapFromSource(w.checkpointModel()->indexOfPath(a));
  const QModelIndex ib = proxy->mapFromSource(w.checkpointModel()->indexOfPath(b));
  QVERIFY(ia.isValid() && ib.isValid());
  auto* selection = w.checkpointView()->selectionModel();
  selection->select(ib, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  selection->select(ia, QItemSelectionModel::Select | QItemSelectionModel::Rows);
  QCOMPARE(w.selectedCheckpoints(),
           (QStringList{a, b}));  // the browser's order, not the click order

  QSignalSpy done(w.compareView(), &CompareView::finished);
  QVERIFY(w.compareSelected());
  QVERIFY(done.wait(kTimeoutMs));
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.compareView()));
  QCOMPARE(w.compareView()->pathA(), a);
  QCOMPARE(w.compareView()->pathB(), b);
  QCOMPARE(w.compareView()->model()->rowCount(),
           int(p.value("expected").toObject().value("tensors").toObject().size()));

  // One selected: compared with the checkpoint before it in its run.
  selection->select(ib, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  QVERIFY(w.compareSelected());
  QVERIFY(done.wait(kTimeoutMs));
  QCOMPARE(w.compareView()->pathA(), a);
  QCOMPARE(w.compareView()->pathB(), b);
  // The first of its run has nothing before it.
  selection->select(ia, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  QVERIFY(!w.compareSelected());
}

void TestCompare::driftThroughRun() {
  // steps 100 -> 200 -> 300: a, a again (same/b.pt holds a's values), b.
  const QJsonObject p = pair("perturbed");
  QVERIFY(!pair("same").isEmpty());
  QTemporaryDir dir;
  QVERIFY(dir.isValid() && QDir(dir.path()).mkpath("run"));
  QVERIFY(QFile::copy(file(p.value("a").toString()), dir.path() + "/run/run_step100.pt"));
  QVERIFY(
      QFile::copy(file(pair("same").value("b").toString()), dir.path() + "/run/run_step200.pt"));
  QVERIFY(QFile::copy(file(p.value("b").toString()), dir.path() + "/run/run_step300.pt"));
  MainWindow w;
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths({dir.path()});
  QVERIFY(loaded.wait(kTimeoutMs));
  // The checkpoints carry their own steps (100 and 200 in metadata) and the
  // chain follows the browser's order; select the run's row.
  const QModelIndex run = w.browserPanel()->proxy()->mapFromSource(
      w.checkpointModel()->indexOfRun(dir.path() + "/run"));
  QVERIFY(run.isValid());
  w.checkpointView()->setCurrentIndex(run);
  QSignalSpy done(w.driftView(), &DriftView::finished);
  QVERIFY(w.showDrift());
  QVERIFY(done.wait(kTimeoutMs));
  QCOMPARE(done.front().front().toBool(), true);
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.driftView()));
  const std::vector<DriftView::Step>& steps = w.driftView()->steps();

  // Which file came first is the browser's (sorted by metadata step): find
  // the pair that is a -> b and check it against torch's per-block numbers.
  const QJsonObject blocks = p.value("expected").toObject().value("blocks").toObject();
  int matched = 0;
  for (const DriftView::Step& s : steps) {
    QVERIFY2(s.error.isEmpty(), qPrintable(s.error));
    if (s.total == 0) {
      for (double v : s.perBlock) QCOMPARE(v, 0.0);
      continue;
    }
    QCOMPARE(s.blocks.size(), size_t(blocks.size()));
    for (size_t k = 0; k < s.blocks.size(); ++k)
      QVERIFY2(same(s.perBlock[k], blocks.value(QString::number(s.blocks[k])).toDouble()),
               qPrintable(QString("block %1").arg(s.blocks[k])));
    ++matched;
  }
  QCOMPARE(int(steps.size()), 2);
  QCOMPARE(matched, 1);
  QCOMPARE(w.driftView()->table()->rowCount(), 2);
  // The heat map has a cell per block and step.
  QCPColorMap* map = w.driftView()->heatMap();
  QVERIFY(map);
  QCOMPARE(map->data()->keySize(), 2);
  QCOMPARE(map->data()->valueSize(), int(blocks.size()));
  if (qEnvironmentVariableIsSet("CKPT_KEEP_SCREENSHOTS")) {
    w.resize(1280, 800);
    w.grab().save(qEnvironmentVariable("CKPT_KEEP_SCREENSHOTS") + "/drift.png");
  }
}

void TestCompare::driftThroughStages() {
  // runs/fam-pretrain, fam-sft, fam-dpo of the reader fixtures: one family.
  MainWindow w;
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths({QStringLiteral(CKPT_FIXTURE_DIR) + "/runs"});
  QVERIFY(loaded.wait(kTimeoutMs));
  CheckpointListModel* model = w.checkpointModel();
  QModelIndex family;
  for (int r = 0; r < model->rowCount(); ++r)
    if (!model->familyName(model->index(r, 0)).isEmpty()) family = model->index(r, 0);
  QVERIFY(family.isValid());
  w.checkpointView()->setCurrentIndex(w.browserPanel()->proxy()->mapFromSource(family));
  QSignalSpy done(w.driftView(), &DriftView::finished);
  QVERIFY(w.showDrift());
  QVERIFY(done.wait(kTimeoutMs));
  const std::vector<DriftView::Step>& steps = w.driftView()->steps();
  QCOMPARE(int(steps.size()), 2);
  QCOMPARE(steps[0].label, QStringLiteral("sft"));
  QCOMPARE(steps[1].label, QStringLiteral("dpo"));
  QVERIFY(steps[0].from.endsWith("fam-pretrain_final.pt") &&
          steps[0].to.endsWith("fam-sft_final.pt"));
  QVERIFY(steps[1].to.endsWith("fam-dpo_final.pt"));
  for (const DriftView::Step& s : steps) QVERIFY2(s.error.isEmpty(), qPrintable(s.error));
}

// A branch run (a resume from a middle step, fam-pretrain@1) sits in the
// family's tree but is not a stage: Checkpoint > Drift Through Run or
// Stages still goes pretrain -> sft -> dpo.
void TestCompare::driftThroughStagesSkipsBranches() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString runs = QStringLiteral(CKPT_FIXTURE_DIR) + "/runs";
  for (const QString run : {"fam-pretrain", "fam-sft", "fam-dpo"}) {
    QVERIFY(QDir(dir.path()).mkpath(run));
    QVERIFY(QFile::copy(runs + "/" + run + "/" + run + "_final.pt",
                        dir.path() + "/" + run + "/" + run + "_final.pt"));
  }
  QVERIFY(QDir(dir.path()).mkpath("fam-pretrain@1"));
  QVERIFY(QFile::copy(runs + "/fam-sft/fam-sft_final.pt",
                      dir.path() + "/fam-pretrain@1/fam-pretrain_step1.pt"));
  MainWindow w;
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths({dir.path()});
  QVERIFY(loaded.wait(kTimeoutMs));
  CheckpointListModel* model = w.checkpointModel();
  QModelIndex family;
  for (int r = 0; r < model->rowCount(); ++r)
    if (!model->familyName(model->index(r, 0)).isEmpty()) family = model->index(r, 0);
  QVERIFY(family.isValid());
  QCOMPARE(model->rowCount(family), 4);  // the branch is shown in the family
  QCOMPARE(family.siblingAtColumn(int(CheckpointListModel::Column::Kind)).data().toString(),
           QStringLiteral("3 stages, 1 branch"));
  QTreeView* view = w.checkpointView();
  const QModelIndex shown = w.browserPanel()->proxy()->mapFromSource(family);
  view->scrollTo(shown);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(shown).center());
  QSignalSpy done(w.driftView(), &DriftView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
  QVERIFY(done.wait(kTimeoutMs));
  const std::vector<DriftView::Step>& steps = w.driftView()->steps();
  QCOMPARE(int(steps.size()), 2);
  QCOMPARE(steps[0].label, QStringLiteral("sft"));
  QVERIFY(steps[0].from.endsWith("fam-pretrain_final.pt") &&
          steps[0].to.endsWith("fam-sft_final.pt"));
  QCOMPARE(steps[1].label, QStringLiteral("dpo"));
}

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
