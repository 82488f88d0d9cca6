// Other trainers' runs in the window, as a person uses it.
// - Folders that hold only TensorBoard event files
//   (tests/python/make_tfevents_fixtures.py) are runs without a checkpoint:
//   "metrics only", their tooltip and Summary name TensorBoard and the event
//   files, and a click on one then on the Curves tab shows its curves point
//   for point as the independent Python reader (tfevents_reader.py) reads
//   the files.
// - The run of every trainer the index knows names that trainer in its
//   tooltip and its Summary, and a click on its first checkpoint shows a
//   Summary whose "Trainer" line names it too; the runs are those the
//   fixture scripts say they wrote (their expected.json, their docstrings).
// - A Hugging Face Trainer checkpoint's Trainer line says which file each
//   thing came from, against the folder make_hf_trainer.py wrote and the
//   Trainer's own file names (transformers' trainer.py: OPTIMIZER_NAME,
//   SCHEDULER_NAME, TRAINER_STATE_NAME, TRAINING_ARGS_NAME, CONFIG_NAME).
// - A click on a Megatron torch_dist save shows its model (count, the
//   parameter tree), its optimizer state mapped to the parameters and the
//   step from common.pt, against what make_megatron_titan.py wrote.
// - A click on a Megatron save of 2 x 2 model-parallel ranks shows its
//   parameters whole (the count, each leaf's size, the tensor table's
//   shapes and how each was joined) against the whole model the fixture
//   cut the slices from.
#include <qcustomplot.h>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <cmath>
#include <functional>
#include <map>

#include "../core/copy_tree.h"
#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "inspector/inspectorwidget.h"
#include "inspector/optimizermodel.h"
#include "inspector/parametermodel.h"
#include "inspector/summarywidget.h"
#include "inspector/tensortablemodel.h"
#include "mainwindow.h"
#include "window_driver.h"

using namespace ckpt;
using ckpt::test::copyTree;

namespace {

constexpr int kTimeoutMs = 60'000;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

bool openAndWait(MainWindow& w, const QStringList& paths) {
  return ckpt::test::openAndWait(w, paths, kTimeoutMs);
}

using ckpt::test::topNames;

QModelIndex rowNamed(const QAbstractItemModel* m, const QString& name) {
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, 0).data().toString() == name) return m->index(r, 0);
  return {};
}

QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// What tfevents_reader.py finds under `root`: {run: {tag: {"points": ...}}}.
QJsonObject pythonRuns(const QString& root) {
  QProcess p;
  p.start(QStringLiteral(CKPT_TORCH_PYTHON),
          {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/tfevents_reader.py"), root});
  if (!p.waitForFinished(kTimeoutMs) || p.exitCode() != 0) return {};
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object()["runs"].toObject();
}

// A click where the view draws `index`.
void clickRow(QTreeView* view, const QModelIndex& index) {
  view->scrollTo(index);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(index).center());
}

// A click on the tab titled `title` of `tabs`.
void clickTabOf(QTabWidget* tabs, const QString& title) {
  QVERIFY(tabs);
  QTabBar* bar = tabs->tabBar();
  for (int i = 0; i < bar->count(); ++i)
    if (bar->tabText(i).remove('&') == title) {
      QTest::mouseClick(bar, Qt::LeftButton, {}, bar->tabRect(i).center());
      return;
    }
  QFAIL(qPrintable("no tab " + title));
}

void clickTab(MainWindow& w, const QString& title) {
  clickTabOf(w.findChild<QTabWidget*>(), title);
}

// The line of a checkpoint Summary's text that holds the "Trainer" field's
// value, "<trainer>: <thing> from <files>; ..." (the value follows its label).
QString trainerLineOf(const QString& text, const QString& title) {
  for (const QString& line : text.split('\n'))
    if (line.contains(title + ": ")) return line.mid(line.indexOf(title + ": "));
  return {};
}

// "weights from a; optimizer from b, c" -> {weights: [a], optimizer: [b, c]}.
std::map<QString, QStringList> clauses(const QString& line, const QString& title) {
  std::map<QString, QStringList> out;
  const QString rest = line.mid(title.size() + 2);
  for (const QString& clause : rest.split("; ", Qt::SkipEmptyParts)) {
    const qsizetype at = clause.indexOf(" from ");
    if (at < 0) continue;
    out[clause.left(at)] = clause.mid(at + 6).split(", ");
  }
  return out;
}

// {thing: files} as "thing: a, b; ...", files sorted, to compare and print.
QString mapText(std::map<QString, QStringList> m) {
  QStringList out;
  for (auto& [thing, files] : m) {
    files.sort();
    out << thing + ": " + files.join(", ");
  }
  return out.join("; ");
}

}  // namespace

class TestTrainerBrowser : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(kFixtures + "/tfevents/tb_damage.json"),
             "no fixtures: run ctest (make_tfevents_fixtures)");
    QVERIFY(QFile::exists(kFixtures + "/hf_trainer/hf/out/checkpoint-500/trainer_state.json"));
    QCoreApplication::setOrganizationName("CkptScopeTest");
    QCoreApplication::setApplicationName("tst_trainer_browser");
  }

  void eventFoldersAreRunsWithCurves() {
    const QString root = kFixtures + "/tfevents/tb";
    const QJsonObject want = pythonRuns(root);
    QVERIFY(want.contains("job"));

    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openAndWait(w, {root}));
    QSortFilterProxyModel* proxy = w.browserPanel()->proxy();

    // Every folder the reader reads as a run is listed, with no checkpoint,
    // as TensorBoard's, curves from as many files as the folder holds.
    QStringList names = want.keys();
    std::sort(names.begin(), names.end());
    QCOMPARE(topNames(proxy), names);
    for (const QString& name : names) {
      const QModelIndex run = rowNamed(proxy, name);
      QCOMPARE(proxy->rowCount(run), 0);
      QCOMPARE(run.siblingAtColumn(int(CheckpointListModel::Column::Kind)).data().toString(),
               QStringLiteral("metrics only"));
      const QString tip = run.data(Qt::ToolTipRole).toString();
      QVERIFY2(tip.contains("Written by: TensorBoard"), qPrintable(tip));
      const qsizetype files =
          QDir(root + "/" + name).entryList({"events.out.tfevents.*"}, QDir::Files).size();
      QVERIFY(files > 0);
      QVERIFY2(tip.contains(QString("No checkpoint yet; curves from %1 file%2")
                                .arg(files)
                                .arg(files == 1 ? "" : "s")),
               qPrintable(tip));
    }

    // A click on "job": its Summary names the trainer and the event files
    // its curves come from, and says it has no checkpoint yet.
    QTreeView* view = w.checkpointView();
    const QModelIndex job = rowNamed(proxy, "job");
    QSignalSpy summary(&w, &MainWindow::summaryShown);
    clickRow(view, job);
    QCOMPARE(view->currentIndex(), job);
    QTRY_VERIFY(summary.count() >= 1);
    const QString text = w.inspector()->text();
    QVERIFY2(text.contains("Trainer") && text.contains("TensorBoard"), qPrintable(text));
    QVERIFY2(text.contains("No checkpoint yet"), qPrintable(text));
    const QStringList events =
        QDir(root + "/job").entryList({"events.out.tfevents.*"}, QDir::Files);
    QCOMPARE(events.size(), 2);
    for (const QString& e : events) QVERIFY2(text.contains(e), qPrintable(text));

    // The Curves tab: job's tags point for point as the reader reads them.
    CurvesView* curves = w.curvesView();
    if (curves->isLoading()) {
      QSignalSpy ready(curves, &CurvesView::curvesReady);
      QVERIFY(ready.wait(kTimeoutMs));
    }
    clickTab(w, "Curves");
    QTRY_VERIFY(curves->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(!curves->isLoading() && !curves->metrics().isEmpty(), kTimeoutMs);
    const QJsonObject tags = want["job"].toObject();
    QVERIFY(!tags.isEmpty());
    for (const QString& tag : tags.keys()) {
      QVERIFY2(ckpt::test::pickMetric(curves, tag),
               qPrintable(tag + " among " + curves->metrics().join(',')));
      const QString d = ckpt::test::differsFromPoints(curves->rawGraph("job"),
                                                      tags[tag].toObject()["points"].toArray());
      QVERIFY2(d.isEmpty(), qPrintable(tag + ": " + d));
    }
  }

  // One row per layout the index knows: the folder a fixture script wrote,
  // the trainer's own name, the runs the script says it wrote there.
  void everyTrainerIsNamed_data() {
    QTest::addColumn<QString>("folder");
    QTest::addColumn<QString>("title");
    QTest::addColumn<QStringList>("runs");
    // The file the trainer keeps a run's hyperparameters in, relative to
    // the run (its docs, the script's docstring); "" for none of its own.
    QTest::addColumn<QString>("hparams");

    QStringList tb = pythonRuns(kFixtures + "/tfevents/tb").keys();
    QTest::newRow("TensorBoard") << "tfevents/tb"
                                 << "TensorBoard" << tb << QString("");
    QTest::newRow("Hugging Face Trainer")
        << "hf_trainer/hf"
        << "Hugging Face Trainer" << QStringList{"out"} << QString("config.json");
    // make_trainer_layouts.py: lightning_logs/version_0 and _1, my_exp/version_2 and _10.
    QTest::newRow("Lightning") << "trainer_layouts/lt"
                               << "PyTorch Lightning"
                               << QStringList{"lightning_logs/version_0",
                                              "lightning_logs/version_1", "my_exp/version_2",
                                              "my_exp/version_10"}
                               << QString("hparams.yaml");
    // Its three runs of experiment 1 as MLflow's UI names them: run_name,
    // else the mlflow.runName tag, else the run id (.trash/ is not listed).
    QTest::newRow("MLflow") << "trainer_layouts/ml/mlruns"
                            << "MLflow"
                            << QStringList{"lr3e-4-seed2", "tagged-run",
                                           "2a1b2c3d4e5f60718293a4b5c6d7e8f9"}
                            << QString("params");
    QTest::newRow("nanoGPT")
        << "nanogpt"
        << "nanoGPT"
        << QStringList{readJson(kFixtures + "/nanogpt/expected.json")["run"].toString()}
        << QString("");
    const QJsonObject mt = readJson(kFixtures + "/megatron_titan/expected.json");
    QTest::newRow("Megatron-LM") << "megatron_titan/mg"
                                 << "Megatron-LM" << mt["megatron"].toObject().keys()
                                 << QString("");
    QTest::newRow("torchtitan") << "megatron_titan/titan"
                                << "torchtitan"
                                << QStringList{mt["torchtitan"].toObject()["run"].toString()}
                                << QString("");
    QStringList wandb;
    for (const QJsonValue& r : readJson(kFixtures + "/wandb/expected.json")["runs"].toObject())
      wandb << r.toObject()["name"].toString();
    QTest::newRow("W&B") << "wandb/proj"
                         << "W&B" << wandb << QString("files/config.yaml");
    // make_accelerate.py: save_state folders, named by the script and automatically.
    QTest::newRow("Accelerate") << "accelerate/acc"
                                << "Hugging Face Accelerate" << QStringList{"auto", "manual"}
                                << QString("");
    // deepspeed_fixtures.py: ds_run/ with its tag folders and `latest`.
    QTest::newRow("DeepSpeed") << "sharded/ds_run"
                               << "DeepSpeed" << QStringList{"ds_run"} << QString("");
  }

  void everyTrainerIsNamed() {
    QFETCH(QString, folder);
    QFETCH(QString, title);
    QFETCH(QStringList, runs);
    QFETCH(QString, hparams);
    QVERIFY2(!runs.isEmpty() && !runs.contains(QString()), qPrintable(folder));

    MainWindow w;
    w.resize(1000, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // A DeepSpeed run folder opened itself is one checkpoint (its `latest`
    // tag): its parent is opened, as a person opens an experiments folder.
    QTemporaryDir parent;
    QString open = kFixtures + "/" + folder;
    if (title == "DeepSpeed") {
      QVERIFY(copyTree(open, parent.path() + "/" + QFileInfo(open).fileName()));
      open = parent.path();
    }
    QVERIFY(openAndWait(w, {open}));
    QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
    QStringList shown = topNames(proxy);
    std::sort(shown.begin(), shown.end());
    std::sort(runs.begin(), runs.end());
    QCOMPARE(shown, runs);

    QTreeView* view = w.checkpointView();
    view->expandAll();
    bool sawCheckpoint = false;
    int withHparams = 0;
    for (const QString& name : runs) {
      const QModelIndex run = rowNamed(proxy, name);
      const QString tip = run.data(Qt::ToolTipRole).toString();
      QVERIFY2(tip.contains("Written by: " + title), qPrintable(name + ": " + tip));
      // A run without a checkpoint is listed for its curves.
      if (proxy->rowCount(run) == 0) {
        QCOMPARE(run.siblingAtColumn(int(CheckpointListModel::Column::Kind)).data().toString(),
                 QStringLiteral("metrics only"));
        QVERIFY2(tip.contains("No checkpoint yet; curves from"), qPrintable(tip));
      }

      // Its Summary: the run's folder, "Trainer" and the trainer's name.
      clickRow(view, run);
      QCOMPARE(view->currentIndex(), run);
      const QString path = run.data(int(CheckpointListModel::Role::Path)).toString();
      QTRY_VERIFY2(w.inspector()->text().contains(path), qPrintable(w.inspector()->text()));
      QVERIFY2(w.inspector()->text().contains("Trainer\n" + title + "\n"),
               qPrintable(w.inspector()->text()));
      // Where its hyperparameters come from, when the trainer wrote them.
      if (!hparams.isEmpty() && QFileInfo::exists(path + "/" + hparams) && ++withHparams)
        QVERIFY2(w.inspector()->text().contains("hyperparameters from\n" + hparams),
                 qPrintable(w.inspector()->text()));
      // An MLflow run's meta.yaml and tags/ (make_trainer_layouts.py: status 3,
      // start 1700000100000 ms, end 90 s later, the tag mlflow.user "trainer").
      if (title == "MLflow") {
        const QString text = w.inspector()->text();
        const QString started = QDateTime::fromMSecsSinceEpoch(1700000100000LL)
                                    .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
        QVERIFY2(text.contains("Status\nFINISHED\n") &&
                     text.contains("Started\n" + started + "\n") &&
                     text.contains("(ran 1 min 30 s)") && text.contains("mlflow.user = trainer"),
                 qPrintable(text));
      }

      // Its first checkpoint's Summary: the Trainer line begins with the
      // trainer, then where its weights came from.
      if (proxy->rowCount(run) == 0) continue;
      sawCheckpoint = true;
      const QModelIndex first = proxy->index(0, 0, run);
      clickRow(view, first);
      QCOMPARE(view->currentIndex(), first);
      QTRY_VERIFY_WITH_TIMEOUT(!trainerLineOf(w.inspector()->text(), title).isEmpty(), kTimeoutMs);
      const QString line = trainerLineOf(w.inspector()->text(), title);
      QVERIFY2(line.startsWith(title + ": weights from "), qPrintable(line));
    }
    // Every layout but the event-file and MLflow ones has checkpoints.
    QCOMPARE(sawCheckpoint, title != "TensorBoard" && title != "MLflow");
    QCOMPARE(withHparams > 0, !hparams.isEmpty());
  }

  void megatronTorchDistSaveIsInspected() {
    const QJsonObject want = readJson(kFixtures + "/megatron_titan/expected.json")["megatron_dist"]
                                 .toObject()["gpt"]
                                 .toObject();
    const QJsonObject model = want["model"].toObject();
    QVERIFY(!model.isEmpty());
    quint64 count = 0;
    std::map<QString, quint64> numel;
    for (const QString& name : model.keys()) {
      quint64 n = 1;
      for (const QJsonValue d : model[name].toArray()) n *= quint64(d.toInteger());
      numel[name] = n;
      count += n;
    }
    // 2088 -> "2,088", as the Summary writes counts.
    const auto grouped = [](quint64 n) {
      QString s = QString::number(n);
      for (qsizetype i = s.size() - 3; i > 0; i -= 3) s.insert(i, ',');
      return s;
    };
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openAndWait(w, {kFixtures + "/megatron_titan/mg_dist"}));
    QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
    const QModelIndex run = rowNamed(proxy, "gpt");
    QVERIFY(run.isValid());
    QTreeView* view = w.checkpointView();
    view->expandAll();
    QModelIndex row;
    for (int r = 0; r < proxy->rowCount(run); ++r)
      if (proxy->index(r, 0, run).data().toString().contains("iter_0000200"))
        row = proxy->index(r, 0, run);
    QVERIFY(row.isValid());
    clickRow(view, row);
    // Until this save's Summary replaces the one shown before (the first row's).
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->text().contains("/gpt/iter_0000200\n") &&
                                 w.inspector()->text().contains("Step\n"),
                             kTimeoutMs);
    const QString text = w.inspector()->text();
    QVERIFY2(text.contains("Step\n200 (from common.pt)\n"), qPrintable(text));
    QVERIFY2(
        text.contains(
            QStringLiteral("Parameters\n%1 in %2 tensors\n").arg(grouped(count)).arg(model.size())),
        qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("Optimizer\n%1 parameters with state, 2 groups (lr %2")
                               .arg(model.size())
                               .arg(want["lr"].toDouble())),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("; %1 of %1 mapped to parameters").arg(model.size())),
             qPrintable(text));

    // The Parameters tab, clicked: the tree of the model's names, each leaf
    // its numel, each inner node the sum below it.
    QTabWidget* tabs = w.inspector()->findChild<QTabWidget*>();
    QVERIFY(tabs);
    auto clickInspectorTab = [&](const QString& title) {
      for (int i = 0; i < tabs->count(); ++i)
        if (tabs->tabText(i).remove('&') == title)
          QTest::mouseClick(tabs->tabBar(), Qt::LeftButton, {},
                            tabs->tabBar()->tabRect(i).center());
      return tabs->tabText(tabs->currentIndex()).remove('&') == title;
    };
    QVERIFY(clickInspectorTab("Parameters"));
    QTreeView* params = w.inspector()->parameterView();
    QTRY_VERIFY(params->isVisible());
    std::map<QString, quint64> leaves;
    std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
      const QAbstractItemModel* m = params->model();
      for (int r = 0; r < m->rowCount(parent); ++r) {
        const QModelIndex i = m->index(r, 0, parent);
        const QString name = i.data(int(ParameterModel::Role::FullName)).toString();
        const quint64 shown = m->index(r, int(ParameterModel::Column::Parameters), parent)
                                  .data(int(ParameterModel::Role::SortKey))
                                  .toULongLong();
        if (m->rowCount(i) == 0) {
          leaves[name] = shown;
          continue;
        }
        quint64 below = 0;
        for (const auto& [k, n] : numel)
          if (name.isEmpty() || k.startsWith(name + '.')) below += n;
        QCOMPARE(shown, below);
        walk(i);
      }
    };
    walk({});
    QCOMPARE(leaves, numel);

    // The Optimizer tab, clicked: one row per parameter, by its name.
    QVERIFY(clickInspectorTab("Optimizer"));
    QTableView* opt = w.inspector()->optimizerView();
    QTRY_VERIFY(opt->isVisible());
    QStringList names;
    for (int r = 0; r < opt->model()->rowCount(); ++r)
      names << opt->model()->index(r, int(OptimizerModel::Column::Name)).data().toString();
    names.sort();
    QStringList wantNames = model.keys();
    wantNames.sort();
    QCOMPARE(names, wantNames);
  }

  void megatronTensorParallelSaveIsJoined() {
    const QJsonObject good = readJson(kFixtures + "/megatron_titan/expected.json")["megatron_join"]
                                 .toObject()["good"]
                                 .toObject();
    const QJsonObject whole = good["whole"].toObject();
    const QString optimizerStep = QString::number(good["optimizer_step"].toInteger());
    QVERIFY(good["optimizer_step"].toInteger() > 0);
    QVERIFY(!whole.isEmpty());
    quint64 count = 0;
    std::map<QString, quint64> numel;
    std::map<QString, QString> shapes;
    for (const QString& name : whole.keys()) {
      quint64 n = 1;
      QStringList dims;
      for (const QJsonValue d : whole[name].toObject()["shape"].toArray()) {
        n *= quint64(d.toInteger());
        dims << QString::number(d.toInteger());
      }
      numel[name] = n;
      shapes[name] = "[" + dims.join(", ") + "]";
      count += n;
    }
    const auto grouped = [](quint64 n) {
      QString s = QString::number(n);
      for (qsizetype i = s.size() - 3; i > 0; i -= 3) s.insert(i, ',');
      return s;
    };
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openAndWait(w, {kFixtures + "/megatron_titan/mg_join"}));
    QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
    const QModelIndex run = rowNamed(proxy, "gpt");
    QVERIFY(run.isValid());
    QTreeView* view = w.checkpointView();
    view->expandAll();
    QCOMPARE(proxy->rowCount(run), 1);
    clickRow(view, proxy->index(0, 0, run));
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->text().contains("/gpt/iter_0000300\n") &&
                                 w.inspector()->text().contains("Parameters\n"),
                             kTimeoutMs);
    const QString text = w.inspector()->text();
    QVERIFY2(text.contains(QStringLiteral("Parameters\n%1 in %2 tensors (under \"model\")\n")
                               .arg(grouped(count))
                               .arg(whole.size())),
             qPrintable(text));
    QVERIFY2(text.contains("Step\n300\n"), qPrintable(text));
    // Every rank file scanned, under Megatron's profile.
    QVERIFY2(text.contains("Safety\nsafe: 4 rank files, only tensors and plain data\n"),
             qPrintable(text));

    // The Summary's tensor table: each tensor's whole shape, and how it was joined.
    QTableView* table = w.inspector()->findChild<SummaryWidget*>()->tensorView();
    QTRY_VERIFY(table->isVisible());
    const QAbstractItemModel* tm = table->model();
    int checked = 0, moments = 0;
    for (int r = 0; r < tm->rowCount(); ++r) {
      const QString name = tm->index(r, int(TensorTableModel::Column::Name)).data().toString();
      const QString shape = tm->index(r, int(TensorTableModel::Column::Shape)).data().toString();
      const QString note = tm->index(r, int(TensorTableModel::Column::Note)).data().toString();
      if (name.startsWith("rng_state.")) {  // each rank's own
        QVERIFY2(note.contains("'s own (one per rank, not joined)"), qPrintable(note));
        continue;
      }
      if (name.startsWith("optimizer.state.")) {  // the ranks' moments, joined as their parameter
        QVERIFY2(note.contains("tensor-parallel ranks"), qPrintable(name + ": " + note));
        ++moments;
        continue;
      }
      const QString key = name.startsWith("model.") ? name.mid(6) : name;
      QVERIFY2(shapes.count(key), qPrintable(name));
      QCOMPARE(shape, shapes[key]);
      if (key.endsWith("linear_proj.weight") || key.endsWith("linear_fc2.weight"))
        QVERIFY2(note.contains("joined along dim 1 from 2 tensor-parallel ranks"),
                 qPrintable(note));
      else if (key.endsWith("linear_fc1.weight"))
        QVERIFY2(note.contains("SwiGLU"), qPrintable(note));
      else if (key.endsWith("layernorm.weight"))
        QVERIFY2(note.contains("the copies equal"), qPrintable(note));
      ++checked;
    }
    QCOMPARE(checked, whole.size());
    QCOMPARE(moments, 3 * whole.size());  // exp_avg, exp_avg_sq, fp32_param
    // The Summary: every parameter's state mapped to it.
    QVERIFY2(text.contains(QStringLiteral("; %1 of %1 mapped to parameters").arg(whole.size())),
             qPrintable(text));

    // The Parameters tab, clicked: every leaf the whole tensor's size.
    QTabWidget* tabs = w.inspector()->findChild<QTabWidget*>();
    clickTabOf(tabs, "Parameters");
    QTreeView* params = w.inspector()->parameterView();
    QTRY_VERIFY(params->isVisible());
    std::map<QString, quint64> leaves;
    std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
      const QAbstractItemModel* m = params->model();
      for (int r = 0; r < m->rowCount(parent); ++r) {
        const QModelIndex i = m->index(r, 0, parent);
        if (m->rowCount(i) > 0) {
          walk(i);
          continue;
        }
        leaves[i.data(int(ParameterModel::Role::FullName)).toString()] =
            m->index(r, int(ParameterModel::Column::Parameters), parent)
                .data(int(ParameterModel::Role::SortKey))
                .toULongLong();
      }
    };
    walk({});
    QCOMPARE(leaves, numel);

    // The Optimizer tab, clicked: one row per parameter of the joined
    // model, by its name, with its moment's whole shape and the step its
    // param group keeps (apex's FusedAdam keeps none per parameter).
    clickTabOf(tabs, "Optimizer");
    QTableView* opt = w.inspector()->optimizerView();
    QTRY_VERIFY(opt->isVisible());
    std::map<QString, QString> optShapes;
    for (int r = 0; r < opt->model()->rowCount(); ++r) {
      const QString name =
          opt->model()->index(r, int(OptimizerModel::Column::Name)).data().toString();
      optShapes[name] =
          opt->model()->index(r, int(OptimizerModel::Column::Shape)).data().toString();
      QCOMPARE(opt->model()->index(r, int(OptimizerModel::Column::Step)).data().toString(),
               optimizerStep);
    }
    QCOMPARE(optShapes, shapes);
  }

  void trainerCheckpointSaysWhereEachThingCameFrom() {
    const QString out = kFixtures + "/hf_trainer/hf/out";
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // Opened by a relative path, as `ckptscope out` from a shell: the files
    // are still named relative to the run's folder.
    struct InFolder {  // the working directory for this test only, as a shell's
      QString before = QDir::currentPath();
      ~InFolder() { QDir::setCurrent(before); }
    } inFolder;
    QVERIFY(QDir::setCurrent(kFixtures + "/hf_trainer/hf"));
    QVERIFY(openAndWait(w, {"out"}));
    QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
    const QModelIndex run = proxy->index(0, 0);
    QVERIFY(run.isValid());
    QTreeView* view = w.checkpointView();
    view->expandAll();

    // The Trainer's file names (transformers/trainer.py) and what each holds.
    const std::map<QString, QString> thingOf{{"model.safetensors", "weights"},
                                             {"pytorch_model.bin", "weights"},
                                             {"optimizer.pt", "optimizer"},
                                             {"scheduler.pt", "scheduler"},
                                             {"rng_state.pth", "rng"},
                                             {"trainer_state.json", "trainer state"},
                                             {"training_args.bin", "hyperparameters"},
                                             {"config.json", "hyperparameters"}};
    for (const QString& folder :
         {QStringLiteral("checkpoint-500"), QStringLiteral("checkpoint-1000")}) {
      // What make_hf_trainer.py wrote into the folder, by thing.
      std::map<QString, QStringList> want;
      for (const QString& f : QDir(out + "/" + folder).entryList(QDir::Files, QDir::Name)) {
        QVERIFY2(thingOf.count(f), qPrintable(folder + "/" + f));
        want[thingOf.at(f)] << folder + "/" + f;
      }
      QModelIndex row;
      for (int r = 0; r < proxy->rowCount(run); ++r)
        if (proxy->index(r, 0, run).data().toString() == folder) row = proxy->index(r, 0, run);
      QVERIFY2(row.isValid(), qPrintable(folder));
      clickRow(view, row);
      const QString title = QStringLiteral("Hugging Face Trainer");
      // Until this folder's Summary replaces the one before.
      QTRY_VERIFY_WITH_TIMEOUT(
          trainerLineOf(w.inspector()->text(), title).contains(" from " + folder + "/"),
          kTimeoutMs);
      std::map<QString, QStringList> got =
          clauses(trainerLineOf(w.inspector()->text(), title), title);
      // The run's curves: trainer_state.json files the Trainer wrote.
      QVERIFY2(got.count("metrics"), qPrintable(trainerLineOf(w.inspector()->text(), title)));
      for (const QString& f : got["metrics"]) {
        QVERIFY2(f.endsWith("trainer_state.json") || f.contains("events.out.tfevents"),
                 qPrintable(f));
        QVERIFY2(QFile::exists(out + "/" + f), qPrintable(f));
      }
      got.erase("metrics");
      QCOMPARE(mapText(got), mapText(want));
    }
  }
};

QTEST_MAIN(TestTrainerBrowser)
#include "tst_trainer_browser.moc"
