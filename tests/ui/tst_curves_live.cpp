// The curves view following live runs: lines appended, a new file, a file
// rewritten, a restart; what it draws after each is what a reload draws
// (and what `ckptscope-cli metrics --json` reads), on the experiment
// curves_sample.h writes. Split from tst_curves.cpp.
#include <qcustomplot.h>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QSignalSpy>
#include <QSlider>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <QTreeView>
#include <QTreeWidget>
#include <cmath>
#include <vector>

#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "curves_sample.h"
#include "inspector/inspectorwidget.h"
#include "mainwindow.h"
#include "screenshot.h"
#include "textformat.h"
#include "window_driver.h"

using namespace ckpt;
using namespace curves_sample;

class TestCurvesLive : public QObject, private CurvesSample {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void liveAppend();
  void lineWrittenAsTheCurvesShow();
  void liveNewFileAndRewrite();
  void liveMergeEqualsReloadAtEveryLine();
  void liveRestartDrawsWhatAReloadDraws();
};

void TestCurvesLive::initTestCase() {
  const QString missing = readManifest();
  QVERIFY2(missing.isEmpty(), qPrintable(missing));
}

void TestCurvesLive::init() {
  const QString failed = writeSample();
  QVERIFY2(failed.isEmpty(), qPrintable(failed));
}

// The runs are followed once the chart shown has been drawn
// (RunFollower::followSoon): a line written the moment the curves are
// shown, before the files are watched, still arrives.
void TestCurvesLive::lineWrittenAsTheCurvesShow() {
  CurvesView view;
  const QString jsonl = QDir(m_dir->path()).filePath("alpha/metrics.jsonl");
  bool appended = false;
  connect(&view, &CurvesView::curvesReady, this, [&] {
    if (appended) return;  // once
    appended = appendText(jsonl, "{\"step\": 360, \"loss\": 2.5}\n");
  });
  QVERIFY(load(view));
  QVERIFY(appended);
  QCOMPARE(view.rawGraph("alpha")->data()->size(), int(m_alphaLoss.size()));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("alpha")->data()->size(), int(m_alphaLoss.size()) + 1,
                            10'000);
  QCOMPARE(view.rawGraph("alpha")->data()->at(int(m_alphaLoss.size()))->key, 360.0);
  QCOMPARE(view.rawGraph("alpha")->data()->at(int(m_alphaLoss.size()))->value, 2.5);
}

void TestCurvesLive::liveAppend() {
  CurvesView view;
  QVERIFY(load(view));
  const QString jsonl = QDir(m_dir->path()).filePath("alpha/metrics.jsonl");
  const QString log = QDir(m_dir->path()).filePath("beta/train.log");
  const Series before = graphPoints(view.rawGraph("alpha"));

  // A line being written (no newline yet) is not read.
  QVERIFY(appendText(jsonl, "{\"step\": 350, \"loss\": 2.25, \"lr\": 0.0007, \"tok"));
  QTest::qWait(1500);  // longer than the poll
  QCOMPARE(view.rawGraph("alpha")->data()->size(), int(before.size()));

  QVERIFY(appendText(jsonl, "ens\": 179200}\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("alpha")->data()->size(), int(before.size()) + 1, 10'000);
  Series expected = m_alphaLoss;
  expected.push_back({350, 2.25});
  QString why;
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("alpha")), expected, &why), qPrintable(why));
  const std::vector<double> ema = debiasedEma(expected, view.smoothing());
  QVERIFY(std::abs(graphPoints(view.smoothedGraph("alpha")).back().value - ema.back()) < 1e-12);
  QCOMPARE(graphPoints(view.smoothedGraph("alpha")).size(), expected.size());

  // Two more lines at once, in the log of another run.
  QVERIFY(
      appendText(log, "step=390 loss=0.0625 lr=7.800e-04\nstep=420 loss=0.03125 lr=8.400e-04\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("beta")->data()->size(), int(m_betaLoss.size()) + 2,
                            10'000);
  Series betaExpected = m_betaLoss;
  betaExpected.push_back({390, 0.0625});
  betaExpected.push_back({420, 0.03125});
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("beta")), betaExpected, &why), qPrintable(why));
  // alpha did not change meanwhile: nothing read twice.
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("alpha")), expected, &why), qPrintable(why));
  // beta's markers at 100 and 200 stay where they were.
  QCOMPARE(graphKeys(view.markerGraph("beta")), (std::vector<double>{100, 200}));

  // A new metric appears in the choices.
  QVERIFY(!view.metrics().contains("grad_norm"));
  QVERIFY(appendText(jsonl, "{\"step\": 400, \"loss\": 2.0, \"grad_norm\": 0.5}\n"));
  QTRY_VERIFY_WITH_TIMEOUT(view.metrics().contains("grad_norm"), 10'000);
  QCOMPARE(view.rawGraph("alpha")->data()->size(), int(expected.size()) + 1);
  QCOMPARE(view.metric(), QStringLiteral("loss"));
}

void TestCurvesLive::liveNewFileAndRewrite() {
  CurvesView view;
  view.setPollInterval(200);
  QVERIFY(load(view));
  // gamma starts writing a metrics.jsonl: it is preferred over checkpoint metadata,
  // so it replaces gamma's loss curve, as a fresh load would show it.
  const QString jsonl = QDir(m_dir->path()).filePath("gamma/metrics.jsonl");
  QVERIFY(appendText(jsonl, "{\"step\": 10, \"loss\": 6.5}\n{\"step\": 20, \"loss\": 6.0}\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("gamma")->data()->size(), 2, 10'000);
  QString why;
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("gamma")), {{10, 6.5}, {20, 6.0}}, &why),
           qPrintable(why));
  // A resumed run rewrites a step: the last value read wins.
  QVERIFY(appendText(jsonl, "{\"step\": 20, \"loss\": 5.75}\n{\"step\": 30, \"loss\": 5.5}\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("gamma")->data()->size(), 3, 10'000);
  QVERIFY2(
      sameSeries(graphPoints(view.rawGraph("gamma")), {{10, 6.5}, {20, 5.75}, {30, 5.5}}, &why),
      qPrintable(why));
  QCOMPARE(graphPoints(view.smoothedGraph("gamma")).back().value,
           debiasedEma({{10, 6.5}, {20, 5.75}, {30, 5.5}}, view.smoothing()).back());
}

void TestCurvesLive::liveMergeEqualsReloadAtEveryLine() {
  // A job that restarts twice into its metrics.jsonl (and logs one step
  // twice), and a pipeline log in which two stages restart, with tqdm
  // noise. Whatever line a reload happened to stop at, following the files
  // from there on gives the series a reload of the whole file gives: the
  // same points, the same restarts, the same tooltip note.
  const QDir root(m_dir->path());
  QVERIFY(root.mkpath("job/run-pretrain") && root.mkpath("job/run-sft"));
  QByteArrayList jsonl;
  auto jline = [&](int step, double loss) {
    jsonl
        << QStringLiteral(
               "{\"step\": %1, \"loss\": %2, \"lr\": 0.0003, \"tokens\": %3, \"wall_time\": %4}\n")
               .arg(step)
               .arg(loss, 0, 'g', 17)
               .arg(step * 64)
               .arg(1718000000.0 + jsonl.size(), 0, 'f', 1)
               .toUtf8();
  };
  for (int step = 10; step <= 80; step += 10) jline(step, 5.0 - step / 40.0);
  for (int step = 40; step <= 100; step += 10) jline(step, 4.0 - step / 50.0);  // restarted at 40
  jline(100, 1.75);  // step 100 again: replaced
  for (int step = 70; step <= 120; step += 5) jline(step, 3.0 - step / 100.0);  // restarted at 70
  QByteArrayList log;
  auto lline = [&](const char* stage, int step, double loss) {
    log << QStringLiteral(
               "2025-12-02 10:%1:00 - trainer.run-%2 - INFO - step=%3 loss=%4 lr=3.000e-04\n")
               .arg(log.size() % 60, 2, 10, QChar('0'))
               .arg(stage)
               .arg(step)
               .arg(loss, 0, 'g', 17)
               .toUtf8();
  };
  for (int step = 1; step <= 6; ++step) lline("pretrain", step, 9 - step);
  log << "Loading dataset shards...\n";
  for (int step = 1; step <= 3; ++step) lline("sft", step, 4 - step * 0.5);
  log << "train:  40%|####      | 4/10 [00:01<00:02, step=9 loss=0.5]\r";  // a bar's postfix: not a
                                                                           // point
  for (int step = 3; step <= 8; ++step)
    lline("pretrain", step, 7.5 - step);  // pretrain restarted at 3
  for (int step = 2; step <= 5; ++step)
    lline("sft", step, 3.25 - step * 0.25);  // sft restarted at 2

  const QString jsonlPath = root.filePath("job/run-pretrain/metrics.jsonl");
  const QString logPath = root.filePath("job/pipeline_4711.log");
  auto write = [](const QString& path, const QByteArrayList& lines, qsizetype n) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    for (qsizetype i = 0; i < n; ++i) f.write(lines[i]);
    return true;
  };
  RunEntry pretrain, sft;
  pretrain.name = "run-pretrain";
  pretrain.path = pathToStd(root.filePath("job/run-pretrain"));
  sft.name = "run-sft";
  sft.path = pathToStd(root.filePath("job/run-sft"));

  for (const RunEntry& entry : {pretrain, sft})
    for (qsizetype cut = 0; cut <= std::max(jsonl.size(), log.size()); ++cut) {
      QVERIFY(write(jsonlPath, jsonl, std::min(cut, jsonl.size())));
      QVERIFY(write(logPath, log, std::min(cut, log.size())));
      CurveRun live = loadCurveRun(entry);
      // The rest arrives one line at a time, each read as the follower reads it.
      for (qsizetype n = cut + 1; n <= std::max(jsonl.size(), log.size()); ++n) {
        QVERIFY(write(jsonlPath, jsonl, std::min(n, jsonl.size())));
        QVERIFY(write(logPath, log, std::min(n, log.size())));
        for (LiveSource& source : live.sources)
          (void)mergeLivePoints(live, source, readNewPoints(source, nullptr));
      }
      const RunMetrics reload = collectRunMetrics(entry);
      const CurveRun reloaded = loadCurveRun(entry);
      const std::string context = entry.name + ", reloaded after " + std::to_string(cut) + " lines";
      QVERIFY2(!reload.series.empty(), context.c_str());
      QCOMPARE(live.series.size(), reload.series.size());
      for (const MetricSeries& want : reload.series) {
        const MetricSeries* got = live.find(want.metric);
        QVERIFY2(got, (context + ": no " + want.metric).c_str());
        QString why;
        QVERIFY2(sameSeries(got->points, want.points, &why),
                 qPrintable(fromStd(context) + ": " + why));
        QCOMPARE(got->restarts, want.restarts);
      }
      QCOMPARE(live.restartNotes, reloaded.restartNotes);
    }
  // What the files hold in the end, by hand: the last segment of each restart.
  const RunMetrics m = collectRunMetrics(pretrain);
  QCOMPARE(m.find("loss")->restarts, (std::vector<int64_t>{40, 70}));
  const SeriesPoints& loss = m.find("loss")->points;
  QCOMPARE(loss.size(),
           size_t(3 + 3 + 11));  // 10..30 of the first job, 40..60 of the second, 70..120
  QCOMPARE(loss.front().step, int64_t(10));
  QCOMPARE(loss[2].value, 5.0 - 30 / 40.0);
  QCOMPARE(loss[3].value, 4.0 - 40 / 50.0);
  QCOMPARE(loss[5].step, int64_t(60));
  QCOMPARE(loss[6].step, int64_t(70));
  QCOMPARE(loss[6].value, 3.0 - 70 / 100.0);
  QCOMPARE(loss.back().step, int64_t(120));
  const RunMetrics s = collectRunMetrics(sft);
  QCOMPARE(s.find("loss")->restarts, (std::vector<int64_t>{2}));
  QCOMPARE(s.find("loss")->points.size(), size_t(5));
  QCOMPARE(s.find("loss")->points.back().value, 3.25 - 5 * 0.25);
  QCOMPARE(loadCurveRun(sft).restartNotes.at("loss"),
           QStringLiteral("restarted at step 2: the later job's points are shown"));
}

void TestCurvesLive::liveRestartDrawsWhatAReloadDraws() {
  const QDir root(m_dir->path());
  MainWindow w;
  QString opened;
  CurvesView* view =
      ckpt::test::openOnCurvesTab(w, {m_dir->path()}, kScreenshotSize, kLoadTimeoutMs, &opened);
  QVERIFY2(view, qPrintable(opened));
  view->setPollInterval(200);
  QString why;
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("alpha")), m_alphaLoss, &why), qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("beta")), m_betaLoss, &why), qPrintable(why));

  // alpha's job (it logged 50..300) restarts from its checkpoint at 150 and
  // logs into the same metrics.jsonl; beta's (30..360) from 210 into its
  // console log, behind a progress bar's redraws.
  QSignalSpy reloads(view, &CurvesView::curvesReady);
  QVERIFY(appendText(root.filePath("alpha/metrics.jsonl"),
                     "{\"step\": 150, \"loss\": 3.0, \"lr\": 0.0003, \"tokens\": 76800}\n"
                     "{\"step\": 200, \"loss\": 2.75, \"lr\": 0.0003, \"tokens\": 102400}\n"
                     "{\"step\": 250, \"loss\": 2.5, \"lr\": 0.0003, \"tokens\": 128000}\n"));
  QVERIFY(appendText(root.filePath("beta/train.log"),
                     "Resuming from step 210\n"
                     "train:  50%|#####     | 5/10 [00:01<00:01, step=250 loss=9.5]\r"
                     "step=240 loss=1.25 lr=1.000e-04\n"
                     "step=270 loss=1.125 lr=1.000e-04\n"));
  // By hand: the points before the restart, then the later job's.
  const Series alphaWant{{50, 4.0}, {100, 3.5}, {150, 3.0}, {200, 2.75}, {250, 2.5}};
  Series betaWant(m_betaLoss.begin(), m_betaLoss.begin() + 7);  // 30..210
  QCOMPARE(betaWant.back().step, qint64(210));
  betaWant.push_back({240, 1.25});
  betaWant.push_back({270, 1.125});
  QTRY_VERIFY_WITH_TIMEOUT(sameSeries(graphPoints(view->rawGraph("alpha")), alphaWant, &why) &&
                               sameSeries(graphPoints(view->rawGraph("beta")), betaWant, &why),
                           10'000);
  QCOMPARE(reloads.count(), 0);  // drawn by following the files, not by reading them again

  // The same as `ckptscope-cli metrics --json` reads from the files.
  std::map<QString, std::map<QString, QJsonArray>> restarts;
  const auto cli = cliSeries(m_dir->path(), &restarts);
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("alpha")), cli.at("alpha").at("loss"), &why),
           qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("beta")), cli.at("beta").at("loss"), &why),
           qPrintable(why));
  QCOMPARE(restarts.at("alpha").at("loss"), QJsonArray{150});
  QCOMPARE(restarts.at("beta").at("loss"), QJsonArray{240});
  QCOMPARE(restarts.at("gamma").at("loss"), QJsonArray{});

  // The mouse over the chart at step 210: the tooltip says which runs
  // restarted. (Hovered again while the tooltip names another step: in one
  // CI run, under load, the axes moved between the pixel being computed
  // and the hover, and the tooltip was for step 173.)
  auto hoverText = [&]() -> QString {
    QString text;
    for (int attempt = 0; attempt < 5 && !text.startsWith("step 210\n"); ++attempt) {
      view->plot()->replot();
      const QRect area = view->plot()->axisRect()->rect();
      const QPoint at(int(std::lround(view->plot()->xAxis->coordToPixel(210))), area.top() + 2);
      QToolTip::hideText();
      QTest::mouseMove(view->plot(), at + QPoint(12, 0));
      QTest::mouseMove(view->plot(), at);
      if (!QTest::qWaitFor([] { return QToolTip::isVisible(); }, 5000)) return {};
      text = QToolTip::text();
    }
    return text;
  };
  const QString live = hoverText();
  const QStringList lines = live.split('\n');
  auto lineOf = [&lines](const QString& run) {
    for (const QString& l : lines)
      if (l.startsWith(run + ": ")) return l;
    return QString();
  };
  QVERIFY2(lineOf("alpha").contains("(restarted at step 150: the later job's points are shown)") &&
               lineOf("alpha").endsWith("at step 200"),
           qPrintable(live));
  QVERIFY2(lineOf("beta").contains("(restarted at step 240: the later job's points are shown)") &&
               lineOf("beta").endsWith("at step 210"),
           qPrintable(live));
  QVERIFY2(!lineOf("gamma").isEmpty() && !lineOf("gamma").contains("restarted"), qPrintable(live));

  // File > Reload (F5) reads the files afresh: the same curves, the same tooltip.
  QSignalSpy reloaded(view, &CurvesView::curvesReady);
  QTest::keyClick(&w, Qt::Key_F5);
  QVERIFY(reloaded.wait(kLoadTimeoutMs));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("alpha")), alphaWant, &why), qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("beta")), betaWant, &why), qPrintable(why));
  QCOMPARE(hoverText(), live);
}

QTEST_MAIN(TestCurvesLive)
#include "tst_curves_live.moc"
