// The Train panel end to end, offscreen, with the real LibTorch plugin: a
// tiny run started from the form, Stop mid-run and Resume (bit-exact
// against a run never stopped), a fine-tune's stage directory and lineage,
// config errors named in the form, runtime errors as messages, the plugin
// loader's messages, remembered values, and an app that does not link
// LibTorch. The form's own checks of a config are in tst_trainform.cpp.
#include <QtTest>

#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QCryptographicHash>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTimer>
#include <filesystem>
#include <fstream>
#include <map>

#include "../core/json_compare.h"
#include "../core/run_outputs.h"
#include "../core/run_process.h"
#include "browser/checkpointlistmodel.h"
#include "ckpt/config/config_schema.h"
#include "ckpt/config/run_config.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/scanner.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "training/configform.h"
#include "training/livecurves.h"
#include "training/runview.h"
#include "training/trainbackendloader.h"
#include "training/trainpanel.h"
#include "trainpanel_driver.h"

using namespace ckpt;
using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

using ckpt::test::Finished;
using ckpt::test::kRunTimeoutMs;
using ckpt::test::metricsLines;
using ckpt::test::waitForRun;
using ckpt::test::weightBytes;

}  // namespace

class TestTrainPanel : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  QString m_data;

  QString dir(const QString& name) const { return m_tmp.filePath(name); }

  // tst_trainer's tiny config, typed into the form.
  void fillTiny(TrainPanel& panel, const QString& out, int steps) const {
    ckpt::test::fillTiny(panel, m_data, out, steps);
  }

  // The window on the folder `exp` (made here), showing the Train tab with
  // its plugin loaded.
  static bool openOnTrainTab(MainWindow& w, const QString& exp) {
    if (!QDir().mkpath(exp)) return false;
    w.resize(1280, 860);
    w.show();
    QSignalSpy loaded(&w, &MainWindow::loaded);
    w.openPaths({exp});
    if (!loaded.wait(60000)) return false;
    w.showTrain();
    QSignalSpy backend(w.trainPanel(), &TrainPanel::backendLoaded);
    return w.trainPanel()->backendReady() || backend.wait(60000);
  }

  bool runNew(TrainPanel& panel, const QString& out, int steps, Finished* r, QString* failure) {
    fillTiny(panel, out, steps);
    if (!panel.validationError().isEmpty()) {
      *failure = panel.validationError();
      return false;
    }
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    if (!panel.isRunning()) {
      *failure = QStringLiteral("Start did not start: ") + panel.statusText();
      return false;
    }
    return waitForRun(panel, r, failure);
  }

 private slots:
  void initTestCase() {
    ckpt::test::startTrainTest("tst_trainpanel");
    QVERIFY(m_tmp.isValid());
    m_data = dir("corpus.txt");
    ckpt::test::writeTinyCorpus(m_data);
  }

  void appDoesNotLinkLibTorch() {
    const auto r = ckpt::test::runProcess(QStringLiteral("ldd"), {QStringLiteral(CKPT_GUI_EXE)});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(!r.out.contains("libtorch") && !r.out.contains("libc10"), r.out.constData());
    // The plugin does: it is where LibTorch comes in.
    const auto p =
        ckpt::test::runProcess(QStringLiteral("ldd"), {QStringLiteral(CKPT_TRAIN_BACKEND_PATH)});
    QVERIFY2(p.out.contains("libtorch"), p.out.constData());
  }

  void loaderMessages() {
    const TrainBackendLoad missing = loadTrainBackendFrom(dir("no-such-plugin.so"));
    QVERIFY(!missing.backend);
    QVERIFY2(missing.error.contains("does not exist"), qPrintable(missing.error));
    // A shared library that is not ours.
    const QString notOurs = dir("not-a-plugin.so");
    QVERIFY(QFile::copy(QStringLiteral("/lib/x86_64-linux-gnu/libz.so.1"), notOurs));
    const TrainBackendLoad wrong = loadTrainBackendFrom(notOurs);
    QVERIFY(!wrong.backend);
    QVERIFY2(wrong.error.contains("not a CkptScope training plugin"), qPrintable(wrong.error));
    QVERIFY(trainBackendBuilt());
  }

  void backendLoadsOnFirstShow() {
    TrainPanel panel;
    QSignalSpy loaded(&panel, &TrainPanel::backendLoaded);
    panel.resize(1280, 860);
    panel.show();
    QVERIFY(loaded.wait(60000));
    QVERIFY(panel.backendReady());
    QVERIFY2(trainBackend().backend, qPrintable(trainBackend().error));
    const QString summary = panel.deviceSummary();
    QVERIFY2(summary.startsWith("LibTorch ") && summary.contains("CUDA"), qPrintable(summary));
    QVERIFY2(panel.deviceBox()->itemText(0).startsWith("auto: "),
             qPrintable(panel.deviceBox()->itemText(0)));
  }

  void newRunFromTheForm() {
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    QSignalSpy started(&panel, &TrainPanel::runStarted);
    QSignalSpy written(&panel, &TrainPanel::checkpointWritten);
    const QString out = dir("run1");
    Finished r;
    QString failure;
    QVERIFY2(runNew(panel, out, 6, &r, &failure), qPrintable(failure));
    QCOMPARE(started.size(), 1);
    QCOMPARE(started.front().front().toString(), out);
    QVERIFY(!r.stopped);
    QCOMPARE(r.outputDir, out);
    QCOMPARE(r.lastCheckpoint, out + "/tiny_final.pt");
    QStringList files;
    for (const auto& args : written) files << QFileInfo(args.front().toString()).fileName();
    QVERIFY2(files.contains("tiny_step2.pt") && files.contains("tiny_step4.pt") &&
                 files.contains("tiny_final.pt"),
             qPrintable(files.join(' ')));
    for (const char* f : {"tiny_step2.pt", "tiny_step4.pt", "tiny_final.pt", "best_checkpoint.pt"})
      QVERIFY2(QFileInfo::exists(out + "/" + f), f);
    // Readable by our reader...
    const auto file = CheckpointFile::open((out + "/tiny_final.pt").toStdString());
    const CheckpointView view(*file);
    QCOMPARE(view.step(), std::optional<int64_t>(6));
    QCOMPARE(view.run(), std::optional<std::string>("tiny"));
    // ...and by torch.load.
    const auto py = ckpt::test::runProcess(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {"-c",
         "import sys, torch; c = torch.load(sys.argv[1], map_location='cpu'); "
         "assert c['step'] == 6, c['step']; print(len(c['model_state']))",
         out + "/tiny_final.pt"});
    QVERIFY2(py.exitCode == 0, py.err.constData());
    // What the panel showed matches what the run wrote.
    const auto lines = metricsLines(out.toStdString());
    QCOMPARE(lines.size(), size_t(6));
    QCPGraph* loss = panel.curves()->lossGraph();
    QCOMPARE(loss->dataCount(), 6);
    for (int i = 0; i < 6; ++i) {
      QCOMPARE(loss->data()->at(i)->key, double(i + 1));
      QCOMPARE(loss->data()->at(i)->value, lines[size_t(i)]["loss"].get<double>());
    }
    QCOMPARE(panel.curves()->valLossGraph()->dataCount(), 3);  // eval_every 2
    QCOMPARE(panel.curves()->lrGraph()->dataCount(), 6);
    QCOMPARE(panel.progressBar()->value(), 6);
    QCOMPARE(panel.progressBar()->maximum(), 6);
    QVERIFY2(panel.statusText().startsWith("Finished 6 steps"), qPrintable(panel.statusText()));
    QVERIFY2(panel.logText().contains("step=6 loss="), qPrintable(panel.logText()));
    QCOMPARE(QString::fromStdString(panel.jobInfo().device), QStringLiteral("cpu"));
    QVERIFY(!panel.isRunning());
    // The same form again would start a second history in that directory:
    // refused before Start, naming the ways on.
    QVERIFY(!panel.startButton()->isEnabled());
    QVERIFY2(panel.validationError().contains(out) && panel.validationError().contains("resume"),
             qPrintable(panel.validationError()));
    QVERIFY(panel.grab().save(QStringLiteral(CKPT_BINARY_DIR "/trainpanel-finished.png")));
  }

  void stopThenResumeIsExact() {
    const int steps = 60;
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    Finished straight;
    QString failure;
    QVERIFY2(runNew(panel, dir("straight"), steps, &straight, &failure), qPrintable(failure));
    QVERIFY(!straight.stopped);

    // The same run, stopped from the panel once it is under way.
    fillTiny(panel, dir("stopped"), steps);
    QSignalSpy done(&panel, &TrainPanel::runFinished);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY(panel.isRunning());
    // One run at a time: Start is off while it goes, and says why.
    QVERIFY(!panel.startButton()->isEnabled());
    QVERIFY2(panel.startButton()->toolTip().startsWith("A run is training here: Stop it"),
             qPrintable(panel.startButton()->toolTip()));
    QTRY_VERIFY_WITH_TIMEOUT(panel.progressBar()->value() >= 3, kRunTimeoutMs);
    QVERIFY(panel.stopButton()->isEnabled());
    QTest::mouseClick(panel.stopButton(), Qt::LeftButton);
    QVERIFY(!panel.startButton()->isEnabled());
    QVERIFY2(panel.startButton()->toolTip().startsWith("The run here is stopping"),
             qPrintable(panel.startButton()->toolTip()));
    QVERIFY(panel.grab().save(QStringLiteral(CKPT_BINARY_DIR "/trainpanel-stopping.png")));
    QTRY_VERIFY_WITH_TIMEOUT(!done.isEmpty(), kRunTimeoutMs);
    QVERIFY2(done.front().at(2).toBool(), "the run finished before Stop reached it");
    const QString stopCkpt = done.front().at(1).toString();
    const int stoppedAt = QFileInfo(stopCkpt).completeBaseName().section("step", 1).toInt();
    QVERIFY2(stoppedAt >= 3 && stoppedAt < steps, qPrintable(stopCkpt));
    QVERIFY(QFileInfo::exists(stopCkpt));
    QVERIFY(!QFileInfo::exists(dir("stopped/tiny_final.pt")));
    QVERIFY2(
        panel.statusText().contains("Stopped at step") && panel.statusText().contains(stopCkpt),
        qPrintable(panel.statusText()));
    QCOMPARE(panel.resumeCheckpointEdit()->text(), stopCkpt);
    // Stopped: nothing holds Start (the New run page's folder is taken now,
    // which its validation says).
    QCOMPARE(panel.startButton()->toolTip(), QString());

    // Resume: one call, as a click on the checkpoint would do.
    QVERIFY(panel.startResume(stopCkpt));
    Finished resumed;
    QVERIFY2(waitForRun(panel, &resumed, &failure), qPrintable(failure));
    QVERIFY(!resumed.stopped);
    QCOMPARE(resumed.outputDir, dir("stopped"));
    QCOMPARE(panel.jobInfo().startStep, int64_t(stoppedAt));
    QCOMPARE(resumed.lastCheckpoint, dir("stopped/tiny_final.pt"));
    // Bit-exact: the same losses at every step and the same final weights.
    const auto a = metricsLines(dir("straight").toStdString()),
               b = metricsLines(dir("stopped").toStdString());
    QCOMPARE(b.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i)
      QCOMPARE(b[i]["loss"].get<double>(), a[i]["loss"].get<double>());
    QVERIFY(weightBytes(straight.lastCheckpoint.toStdString()) ==
            weightBytes(resumed.lastCheckpoint.toStdString()));
    // The resumed run's curve starts with its history (read on the thread
    // pool): one curve, every step once.
    QTRY_VERIFY(!panel.runView()->isLoadingHistory());
    QCPGraph* loss = panel.curves()->lossGraph();
    QCOMPARE(loss->dataCount(), steps);
    for (int i = 0; i < steps; ++i) {
      QCOMPARE(loss->data()->at(i)->key, double(i + 1));
      QCOMPARE(loss->data()->at(i)->value, a[size_t(i)]["loss"].get<double>());
    }
    QVERIFY(panel.grab().save(QStringLiteral(CKPT_BINARY_DIR "/trainpanel-resumed.png")));
    qInfo("stopped at step %d of %d, resumed to the end: bit-identical", stoppedAt, steps);
  }

  // Resume "in place" from a middle checkpoint asks first, naming every file
  // it would move; Cancel moves nothing, "Move and Resume" moves exactly
  // those to .trash/ (unchanged) and continues the run in its directory.
  void resumeInPlaceAsksNamingTheFiles() {
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    Finished first;
    QString failure;
    const QString out = dir("inplace");
    QVERIFY2(runNew(panel, out, 6, &first, &failure), qPrintable(failure));
    const QString middle = out + "/tiny_step2.pt";
    // What in place must move: every checkpoint of a later step (the files say so).
    QStringList later;
    std::map<QString, QByteArray> before;
    for (const QFileInfo& f : QDir(out).entryInfoList(QDir::Files)) {
      QFile file(f.filePath());
      QVERIFY(file.open(QIODevice::ReadOnly));
      before[f.fileName()] = QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256);
      if (f.suffix() != "pt" || f.fileName() == "tiny_step2.pt") continue;
      const auto c = CheckpointFile::open(f.filePath().toStdString());
      const std::optional<int64_t> step = CheckpointView(*c).step();
      if (step && *step > 2) later << f.fileName();
    }
    QVERIFY2(later.contains("tiny_step4.pt") && later.contains("tiny_final.pt"),
             qPrintable(later.join(' ')));

    panel.prepareResume(middle);
    QCOMPARE(panel.mode(), TrainPanel::Mode::Resume);
    QCheckBox* inPlace = panel.resumeInPlaceBox();
    QTRY_VERIFY(inPlace->isEnabled());
    QTest::mouseClick(inPlace, Qt::LeftButton, {}, QPoint(6, inPlace->height() / 2));
    QVERIFY(inPlace->isChecked());
    QVERIFY2(panel.resumePlanText().contains(".trash"), qPrintable(panel.resumePlanText()));

    // The confirmation, read as shown, then answered with `button`.
    auto answer = [](const QString& button, QString* text) {
      auto* timer = new QTimer(qApp);
      timer->setInterval(50);
      QObject::connect(timer, &QTimer::timeout, timer, [timer, button, text] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box || !box->isVisible()) return;
        timer->stop();
        timer->deleteLater();
        *text = box->text() + "\n" + box->informativeText();
        for (QAbstractButton* b : box->buttons())
          if (b->text().remove('&') == button) QTest::mouseClick(b, Qt::LeftButton);
      });
      timer->start();
    };
    QString shown;
    answer("Cancel", &shown);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY(!panel.isRunning());
    for (const QString& f : later)
      QVERIFY2(shown.contains(f), qPrintable(f + " not named in: " + shown));
    QVERIFY2(!shown.contains("tiny_step2.pt,"), qPrintable(shown));
    QVERIFY2(panel.statusText().contains("nothing was moved"), qPrintable(panel.statusText()));
    for (const auto& [name, hash] : before) {
      QFile file(out + "/" + name);
      QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(name));
      QCOMPARE(QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256), hash);
    }
    QVERIFY(!QFileInfo::exists(out + "/.trash"));

    // Move and Resume: the later files in .trash/, byte for byte, and the run continues.
    answer("Move and Resume", &shown);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY2(panel.isRunning(), qPrintable(panel.statusText()));
    Finished resumed;
    QVERIFY2(waitForRun(panel, &resumed, &failure), qPrintable(failure));
    QCOMPARE(resumed.outputDir, out);
    QCOMPARE(panel.jobInfo().startStep, int64_t(2));
    const QStringList stamps = QDir(out + "/.trash").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(stamps.size(), 1);
    const QString trash = out + "/.trash/" + stamps.front();
    for (const QString& f : later) {
      QFile moved(trash + "/" + f);
      QVERIFY2(moved.open(QIODevice::ReadOnly), qPrintable(f + " is not in " + trash));
      QCOMPARE(QCryptographicHash::hash(moved.readAll(), QCryptographicHash::Sha256), before[f]);
    }
    QVERIFY(QFileInfo::exists(out + "/tiny_final.pt"));
  }

  // The chart of a resumed job starts with the run's history as the Curves
  // tab draws it. The run's metrics.jsonl has a restart: a job restarted
  // from step 2 logged steps 3 and 4 again, with other values. Resuming its
  // step-4 checkpoint from the browser continues as the branch tiny@4 (step
  // 6 exists): its chart is steps 1-2 of the first job, 3-4 of the
  // restarted one (the last segment, addInFileOrder), then the job's own
  // 5-6; loss, val loss and lr point for point what the Curves tab draws
  // for tiny@4. (The app before this read only the branch's own
  // metrics.jsonl, keeping the first job's steps: the chart began at 5.)
  void resumedChartIsWhatCurvesDraws() {
    const QString exp = dir("restarted");
    MainWindow w;
    QVERIFY(openOnTrainTab(w, exp));
    TrainPanel& panel = *w.trainPanel();
    const QString parent = exp + "/tiny";
    Finished first;
    QString failure;
    QVERIFY2(runNew(panel, parent, 6, &first, &failure), qPrintable(failure));
    const std::vector<json> firstJob = metricsLines(parent.toStdString());
    QCOMPARE(firstJob.size(), size_t(6));
    QVERIFY(firstJob[1].contains("val_loss") && firstJob[3].contains("val_loss"));
    {
      std::ofstream out((parent + "/metrics.jsonl").toStdString(), std::ios::app);
      for (int step : {3, 4}) {
        json line = firstJob[size_t(step - 1)];
        line["loss"] = 10.0 + step;
        line["lr"] = 1e-4 * step;
        if (line.contains("val_loss")) line["val_loss"] = 20.0 + step;
        out << line.dump() << '\n';
      }
    }

    // The person selects tiny_step4.pt, Resume, Start.
    const QString step4 = parent + "/tiny_step4.pt";
    QTRY_VERIFY_WITH_TIMEOUT(w.selectPath(step4), 30000);
    QVERIFY(w.resumeSelected());
    QCOMPARE(panel.mode(), TrainPanel::Mode::Resume);
    QCOMPARE(panel.resumeCheckpointEdit()->text(), step4);
    QVERIFY2(panel.resumePlanText().contains("tiny@4"), qPrintable(panel.resumePlanText()));
    QVERIFY2(panel.startButton()->isEnabled(), qPrintable(panel.validationError()));
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    Finished branch;
    QVERIFY2(waitForRun(panel, &branch, &failure), qPrintable(failure));
    QCOMPARE(branch.outputDir, exp + "/tiny@4");
    QCOMPARE(panel.jobInfo().startStep, int64_t(4));
    const std::vector<json> ownSteps = metricsLines(branch.outputDir.toStdString());
    QCOMPARE(ownSteps.size(), size_t(2));

    // Hand-made truth: per metric, (step, value) as the chart must show it.
    using Points = std::vector<std::pair<double, double>>;
    const Points loss{{1, firstJob[0]["loss"].get<double>()},
                      {2, firstJob[1]["loss"].get<double>()},
                      {3, 13.0},
                      {4, 14.0},
                      {5, ownSteps[0]["loss"].get<double>()},
                      {6, ownSteps[1]["loss"].get<double>()}};
    const Points lr{{1, firstJob[0]["lr"].get<double>()},
                    {2, firstJob[1]["lr"].get<double>()},
                    {3, 1e-4 * 3},
                    {4, 1e-4 * 4},
                    {5, ownSteps[0]["lr"].get<double>()},
                    {6, ownSteps[1]["lr"].get<double>()}};
    const Points valLoss{{2, firstJob[1]["val_loss"].get<double>()},
                         {4, 24.0},
                         {6, ownSteps[1]["val_loss"].get<double>()}};
    auto points = [](const QCPGraph* g) {
      Points out;
      for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
        out.emplace_back(it->key, it->value);
      return out;
    };
    auto text = [](const Points& ps) {
      QStringList out;
      for (const auto& [k, v] : ps) out << QStringLiteral("%1:%2").arg(k).arg(v, 0, 'g', 17);
      return out.join(' ');
    };
    LiveCurves* chart = panel.curves();
    QTRY_VERIFY2_WITH_TIMEOUT(chart->lossGraph()->dataCount() == int(loss.size()),
                              qPrintable(text(points(chart->lossGraph()))), 30000);
    QVERIFY(!panel.runView()->isLoadingHistory());
    QCOMPARE(text(points(chart->lossGraph())), text(loss));
    QCOMPARE(text(points(chart->lrGraph())), text(lr));
    QCOMPARE(text(points(chart->valLossGraph())), text(valLoss));
    // core/index reads the branch the same way (its lineage, the restart).
    const RunMetrics core =
        collectRunMetrics(scanRunDirectory(exp.toStdString(), branch.outputDir.toStdString()));
    QVERIFY(core.find("loss") && core.find("loss")->points.size() == loss.size());
    for (size_t i = 0; i < loss.size(); ++i)
      QCOMPARE(core.find("loss")->points[i].value, loss[i].second);

    // The Curves tab (after F5, so that it surely lists tiny@4): the same points.
    QSignalSpy reloaded(&w, &MainWindow::loaded);
    w.reload();
    QVERIFY(reloaded.wait(60000));
    w.setView(MainWindow::View::Curves);
    CurvesView* curves = w.curvesView();
    auto curveRun = [&]() -> QString {
      for (const CurveRun& r : curves->runs())
        if (QDir::cleanPath(r.path) == QDir::cleanPath(branch.outputDir)) return r.name;
      return {};
    };
    for (const auto& [metric, truth] :
         {std::pair{"loss", loss}, std::pair{"lr", lr}, std::pair{"val_loss", valLoss}}) {
      QTRY_VERIFY_WITH_TIMEOUT(!curves->isLoading() && !curveRun().isEmpty(), 30000);
      curves->setMetric(QString::fromLatin1(metric));
      QTRY_VERIFY2_WITH_TIMEOUT(curves->rawGraph(curveRun()) &&
                                    curves->rawGraph(curveRun())->dataCount() == int(truth.size()),
                                qPrintable(QStringLiteral("%1 of run '%2': %3")
                                               .arg(QString::fromLatin1(metric), curveRun(),
                                                    curves->rawGraph(curveRun())
                                                        ? text(points(curves->rawGraph(curveRun())))
                                                        : QStringLiteral("no graph"))),
                                30000);
      QCOMPARE(text(points(curves->rawGraph(curveRun()))), text(truth));
      // Its own line: a branch is not a seed of its parent's setting (the
      // two were grouped into one mean line, the branch's hidden).
      QCOMPARE(curves->groupBy(), QStringLiteral("none"));
      QVERIFY(curves->smoothedGraph(curveRun())->visible());
    }
    w.showTrain();
    QVERIFY(w.grab().save(QStringLiteral(CKPT_BINARY_DIR "/trainpanel-resumed-branch.png")));
  }

  // The history is read on the thread pool: loadHistory() returns before
  // the file is read, and of two requests the newer one is plotted alone.
  void historyIsReadOffTheGuiThreadNewestWins() {
    // A long run whose job restarted at step 150,000 and went on to 200,000.
    const QString big = dir("history/big"), small = dir("history/small");
    QVERIFY(QDir().mkpath(big) && QDir().mkpath(small));
    {
      std::ofstream out((big + "/metrics.jsonl").toStdString());
      for (int s = 1; s <= 180000; ++s)
        out << "{\"step\":" << s << ",\"loss\":" << 1000000 + s << ",\"lr\":0.001}\n";
      for (int s = 150000; s <= 200000; ++s)
        out << "{\"step\":" << s << ",\"loss\":" << 2000000 + s << ",\"lr\":0.002}\n";
      std::ofstream two((small + "/metrics.jsonl").toStdString());
      two << "{\"step\":1,\"loss\":5.0,\"lr\":0.1}\n{\"step\":2,\"loss\":4.0,\"lr\":0.1}\n";
    }
    RunView view;
    view.resize(900, 600);
    view.show();
    view.setStepRange(190000, 210000);
    QSignalSpy loaded(&view, &RunView::historyLoaded);
    view.loadHistory(small, 2);
    view.loadHistory(big, 190000);  // the newer request: small's answer is dropped
    QVERIFY(view.isLoadingHistory());
    QCOMPARE(view.curves()->lossGraph()->dataCount(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(loaded.size(), 1, 60000);
    QCOMPARE(loaded.front().front().toLongLong(), 190000LL);
    QTest::qWait(200);
    QCOMPARE(loaded.size(), 1);
    const QCPGraph* loss = view.curves()->lossGraph();
    QCOMPARE(loss->dataCount(), 190000);
    // The first job up to 149,999, the restarted one from 150,000: what
    // collectRunMetrics gives (the Curves tab's rule).
    QCOMPARE(loss->data()->at(0)->key, 1.0);
    QCOMPARE(loss->data()->at(149998)->value, 1000000.0 + 149999);
    QCOMPARE(loss->data()->at(149999)->key, 150000.0);
    QCOMPARE(loss->data()->at(149999)->value, 2000000.0 + 150000);
    QCOMPARE(loss->data()->at(189999)->key, 190000.0);
    QCOMPARE(view.curves()->lrGraph()->data()->at(149999)->value, 0.002);
    RunEntry run;
    run.path = big.toStdString();
    const RunMetrics metrics = collectRunMetrics(run);
    const MetricSeries* core = metrics.find("loss");
    QVERIFY(core);
    for (int i : {0, 1000, 149998, 149999, 189999})
      QCOMPARE(loss->data()->at(i)->value, core->points[size_t(i)].value);
    // The chart's step axis now starts at 0 (the history), and clear() drops
    // a request still running.
    QCOMPARE(view.curves()->lossPlot()->xAxis->range().lower, 0.0);
    view.loadHistory(big, 190000);
    view.clear();
    QVERIFY(!view.isLoadingHistory());
    QTest::qWait(1500);
    QCOMPARE(loaded.size(), 1);
    QCOMPARE(view.curves()->lossGraph()->dataCount(), 0);
  }

  void finetuneStartsANewStage() {
    TrainPanel panel;
    panel.show();
    const QString parent = dir("run1/tiny_final.pt");
    QVERIFY(QFileInfo::exists(parent));
    panel.finetuneDataEdit()->setText(m_data);
    panel.finetuneMaxStepsBox()->setValue(2);
    panel.threadsBox()->setValue(2);
    panel.deviceBox()->setCurrentIndex(panel.deviceBox()->findData(QStringLiteral("cpu")));
    QCOMPARE(panel.finetuneStageEdit()->text(), QStringLiteral("sft"));
    QCOMPARE(panel.finetuneLrEdit()->text(), QStringLiteral("1e-05"));
    QVERIFY2(panel.startFinetune(parent), qPrintable(panel.statusText() + panel.validationError()));
    Finished r;
    QString failure;
    QVERIFY2(waitForRun(panel, &r, &failure), qPrintable(failure));
    const QString stageDir = dir("tiny-sft");  // next to the parent's run directory
    QCOMPARE(r.outputDir, stageDir);
    QCOMPARE(r.lastCheckpoint, stageDir + "/tiny-sft_final.pt");
    const json config = json::parse(panel.jobInfo().configJson);
    QCOMPARE(config["training"]["learning_rate"].get<double>(), 1e-5);
    QCOMPARE(config["training"]["lr_schedule"].get<std::string>(), std::string("cosine"));
    const auto f = CheckpointFile::open(r.lastCheckpoint.toStdString());
    const CheckpointView view(*f);
    QCOMPARE(view.step(), std::optional<int64_t>(2));
    QCOMPARE(view.stage(), std::optional<std::string>("sft"));
    QCOMPARE(view.run(), std::optional<std::string>("tiny-sft"));
    const Value* lineage = view.lookup("parent");
    QVERIFY(lineage && lineage->isStr());
    QCOMPARE(lineage->str(), fs::absolute(parent.toStdString()).lexically_normal().string());
    panel.resize(1280, 860);
    QVERIFY(panel.grab().save(QStringLiteral(CKPT_BINARY_DIR "/trainpanel-finetune.png")));
  }

  void windowListsTheRunAndFinetunesFromTheBrowser() {
    // The window: a run started in the Train tab shows up in the browser as
    // it writes checkpoints; its last one is selected when done; Fine-tune
    // on it makes a second stage, shown with the first as one family.
    const QString exp = dir("experiments");
    MainWindow w;
    QVERIFY(openOnTrainTab(w, exp));
    TrainPanel& panel = *w.trainPanel();
    Finished r;
    QString failure;
    QVERIFY2(runNew(panel, exp + "/tiny", 6, &r, &failure), qPrintable(failure));
    CheckpointListModel* model = w.checkpointModel();
    QTRY_VERIFY_WITH_TIMEOUT(model->indexOfPath(r.lastCheckpoint).isValid(), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(QFileInfo(w.checkpointView()
                                            ->currentIndex()
                                            .data(int(CheckpointListModel::Role::Path))
                                            .toString())
                                  .fileName(),
                              QFileInfo(r.lastCheckpoint).fileName(), 30000);
    QCOMPARE(w.selectedCheckpoints(), QStringList{r.lastCheckpoint});

    panel.finetuneDataEdit()->setText(m_data);
    panel.finetuneMaxStepsBox()->setValue(2);
    // Fine-tune... only opens the page, filled in; the person clicks Start.
    QVERIFY2(w.finetuneSelected(), qPrintable(panel.statusText()));
    QVERIFY(!panel.isRunning());
    QCOMPARE(panel.finetuneCheckpointEdit()->text(), r.lastCheckpoint);
    QVERIFY2(panel.startButton()->isEnabled(), qPrintable(panel.validationError()));
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    Finished ft;
    QVERIFY2(waitForRun(panel, &ft, &failure), qPrintable(failure));
    QCOMPARE(ft.outputDir, exp + "/tiny-sft");
    QTRY_VERIFY_WITH_TIMEOUT(model->indexOfPath(ft.lastCheckpoint).isValid(), 30000);
    const QModelIndex stage = model->indexOfRun(ft.outputDir);
    QVERIFY(stage.isValid());
    QCOMPARE(stage.parent().data().toString(), QStringLiteral("tiny"));  // the family
    QCOMPARE(model->rowCount(stage.parent()), 2);
  }

  void finetuneWithoutDataAsksForIt() {
    QSettings().remove("training");
    TrainPanel panel;
    panel.dataPathEdit()->clear();
    panel.finetuneDataEdit()->clear();
    QVERIFY(!panel.startFinetune(dir("run1/tiny_final.pt")));
    QVERIFY(!panel.isRunning());
    QCOMPARE(panel.mode(), TrainPanel::Mode::Finetune);
    QCOMPARE(panel.finetuneCheckpointEdit()->text(), dir("run1/tiny_final.pt"));
    QVERIFY2(panel.validationError().startsWith("data:"), qPrintable(panel.validationError()));
  }

  void runtimeErrorsAreMessages_data() {
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("message");
    QTest::newRow("NaN loss") << "nan"
                              << "the loss is";
    QTest::newRow("unwritable output") << "unwritable"
                                       << "corpus.txt";
    QTest::newRow("data too short") << "short"
                                    << "fewer than one window";
  }
  void runtimeErrorsAreMessages() {
    QFETCH(QString, what);
    QFETCH(QString, message);
    TrainPanel panel;
    fillTiny(panel, dir("bad-" + what), 3);
    if (what == "nan") {
      panel.form()->setValues(
          {{"learning_rate", "1e30"}, {"max_steps", 50}, {"max_grad_norm", "0"}});
    } else if (what == "unwritable") {
      panel.outputDirEdit()->setText(m_data + "/out");  // below a regular file
    } else if (what == "short") {
      const QString shortFile = dir("short.txt");
      std::ofstream(shortFile.toStdString()) << "tiny";
      panel.dataPathEdit()->setText(shortFile);
    }
    QCOMPARE(panel.validationError(), QString());
    QSignalSpy failed(&panel, &TrainPanel::runFailed);
    QVERIFY(panel.start());
    QVERIFY(failed.wait(kRunTimeoutMs));
    const QString error = failed.front().front().toString();
    QVERIFY2(error.contains(message), qPrintable(error));
    QVERIFY2(panel.statusText().startsWith("Training failed: "), qPrintable(panel.statusText()));
    QVERIFY(panel.logText().contains("error: "));
    QVERIFY(!panel.isRunning());
    // The form is usable again; Start too, unless the failed run left its
    // history in the directory (the NaN run logged its first steps): then it
    // says so rather than mixing a second history into it.
    const QString out = panel.outputDirEdit()->text();
    const bool leftFiles = !ckpt::existingRunFiles(out.toStdString(), "tiny").empty();
    QCOMPARE(panel.startButton()->isEnabled(), !leftFiles);
    if (leftFiles)
      QVERIFY2(panel.validationError().contains("resume"), qPrintable(panel.validationError()));
  }

  void closingMidRunStopsWithACheckpoint() {
    auto panel = std::make_unique<TrainPanel>();
    fillTiny(*panel, dir("closed"), 500);
    panel->form()->setValue("save_every", 0);
    QVERIFY(panel->start());
    QTRY_VERIFY_WITH_TIMEOUT(panel->progressBar()->value() >= 1, kRunTimeoutMs);
    panel.reset();  // stops after the step in flight and waits for the thread
    QStringList files = QDir(dir("closed")).entryList({"tiny_step*.pt"});
    QCOMPARE(files.size(), 1);
    QVERIFY(!QFileInfo::exists(dir("closed/tiny_final.pt")));
  }

  // max_steps 1,000,000 here too: the step axis follows the steps run (the
  // last one drawn about two thirds of the way along), its title and the
  // progress bar say of how many; Stop, and the curve stays where it was.
  void hugeMaxStepsChartFollowsTheSteps() {
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    fillTiny(panel, dir("huge"), 1000000);
    panel.form()->setValue("save_every", 0);
    // A learning rate that does not move (as a cosine over 1,000,000 steps
    // hardly does in 30): its axis's ticks must still read apart.
    panel.form()->setValue("lr_schedule", "constant");
    panel.form()->setValue("warmup_steps", 0);
    QTRY_VERIFY2(panel.startButton()->isEnabled(), qPrintable(panel.validationError()));
    QSignalSpy done(&panel, &TrainPanel::runFinished);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY(panel.isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(panel.progressBar()->value() >= 30, kRunTimeoutMs);
    QTest::mouseClick(panel.stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!done.isEmpty(), kRunTimeoutMs);
    QCustomPlot* plot = panel.curves()->lossPlot();
    plot->replot();
    QCPGraph* loss = panel.curves()->lossGraph();
    const double last = loss->data()->at(loss->dataCount() - 1)->key;
    QVERIFY(last >= 30);
    const QRect area = plot->axisRect()->rect();
    const double along = (plot->xAxis->coordToPixel(last) - area.left()) / double(area.width());
    QVERIFY2(along > 0.6 && along < 0.8,
             qPrintable(QString("step %1 drawn at %2 of the width").arg(last).arg(along)));
    QCOMPARE(plot->xAxis->label(), QString("step (of 1,000,000)"));
    QVERIFY(!panel.curves()->maxStepsShown());
    QCOMPARE(panel.progressBar()->text(),
             QString("step %1 of 1,000,000").arg(panel.progressBar()->value()));
    // The flat learning rate's axis: its ticks read apart (stacked, and
    // beside the loss).
    for (QCPAxis* axis : {panel.curves()->lrPlot()->yAxis, panel.curves()->lossPlot()->yAxis2}) {
      axis->parentPlot()->replot();
      const QVector<QString> labels = axis->tickVectorLabels();
      QVERIFY2(labels.size() >= 2, qPrintable(QString::number(labels.size())));
      const QSet<QString> distinct(labels.begin(), labels.end());
      QVERIFY2(distinct.size() == labels.size(),
               qPrintable(QStringList(labels.begin(), labels.end()).join(" | ")));
    }
  }

  void remembersTheForm() {
    {
      TrainPanel panel;
      fillTiny(panel, dir("remembered"), 17);
      panel.form()->setValue("d_model", 48);
      panel.form()->setValue("lr_schedule", "cosine");
      panel.processesBox()->setValue(3);
      panel.saveSettings();
    }
    TrainPanel again;
    QCOMPARE(again.form()->value("d_model").toInt(), 48);
    QCOMPARE(again.form()->value("max_steps").toInt(), 17);
    QCOMPARE(again.form()->value("learning_rate").toString(), QStringLiteral("0.003"));
    QCOMPARE(again.form()->value("lr_schedule").toString(), QStringLiteral("cosine"));
    QCOMPARE(again.dataPathEdit()->text(), m_data);
    QCOMPARE(again.outputDirEdit()->text(), dir("remembered"));
    QCOMPARE(again.deviceBox()->currentData().toString(), QStringLiteral("cpu"));
    QCOMPARE(again.threadsBox()->value(), 2);
    QCOMPARE(again.processesBox()->value(), 3);
  }
};

QTEST_MAIN(TestTrainPanel)
#include "tst_trainpanel.moc"
