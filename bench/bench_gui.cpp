// bench_gui: the desktop app's speed, measured in the real window (offscreen).
//
//   bench_gui cold DIR
//       One fresh process: from the process's start (the kernel's start
//       time) to a populated browser for DIR. run_gui_bench.sh runs it
//       several times and takes the median.
//   bench_gui curves POINTS
//       A run whose metrics.jsonl holds POINTS steps (loss and lr): time to
//       read and plot it, the time of one replot, and the longest GUI-thread
//       stall while 20,000 more lines arrive (the live view follows them).
//   bench_gui runstable DIR
//       The Curves tab's runs table on the runs of DIR (a sweep from
//       make_sweep_bench.py): the time to summarize every run, to sort the
//       table by clicking a header (grouped by all but the seed, and one
//       row per run), and to apply a filter typed into its box (the chart
//       drawing only the runs kept), each against the time to read and plot
//       the runs and against one replot, measured in the same run.
//   bench_gui sweep DIR
//       The whole app on a sweep (make_sweep_bench.py): the window opens
//       DIR as `ckptscope DIR` does and shows the Curves tab; the time from
//       the open (and from the process's start) to the curves shown
//       (CurvesView::curvesReady), the points held, and the process's peak
//       RSS. Cold or warm is the metrics cache's state
//       (CKPTSCOPE_CACHE_DIR): run_gui_bench.sh sweep runs both.
//   bench_gui manyckpt DIR
//       Many small checkpoints (make_many_checkpoints.py: 1,000 runs x 50):
//       the window is shown, then opens DIR as `ckptscope DIR` does; the
//       time from the open to the browser's first rows (the model's first
//       row inserted or reset in, as a person sees the tree fill) and to
//       the scan finished (MainWindow::scanFinished: every run listed), the
//       runs and checkpoints listed, and the process's peak RSS.
//   bench_gui stall DIR FILE TENSOR
//       In one window: scan DIR, select FILE, then compute TENSOR's
//       statistics, histogram and heat map in the Tensor tab. A 2 ms
//       precise timer on the GUI thread records the longest gap between its
//       ticks in each phase: the longest time the window could not respond.
//
// Prints one JSON object per run on stdout.
#include <sys/resource.h>
#include <unistd.h>
#include <QApplication>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>

#include <qcustomplot.h>
#include <QTemporaryDir>
#include <cmath>
#include <thread>

#include "browser/checkpointlistmodel.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_info.h"
#include "ckpt/index/huge_page_malloc.h"
#include "ckpt/index/scanner.h"
#include "curves/curvesview.h"
#include "curves/runstable.h"
#include "inspector/inspectorwidget.h"
#include "inspector/tensorview.h"
#include "mainwindow.h"

namespace {

// Milliseconds since this process was started, from /proc/self/stat (field
// 22, in clock ticks since boot) and CLOCK_BOOTTIME; 10 ms resolution.
double msSinceProcessStart() {
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  size_t pos = close + 2;
  for (int field = 3; field < 22; ++field) pos = stat.find(' ', pos) + 1;
  const double startTicks = std::stod(stat.substr(pos, stat.find(' ', pos) - pos));
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return (double(now.tv_sec) + now.tv_nsec * 1e-9 - startTicks / double(sysconf(_SC_CLK_TCK))) *
         1e3;
}

// The longest gap between ticks of a fast timer on the GUI thread.
class StallMeter : public QObject {
 public:
  StallMeter() {
    m_timer.setTimerType(Qt::PreciseTimer);
    m_timer.setInterval(2);
    connect(&m_timer, &QTimer::timeout, this, [this] {
      const qint64 ns = m_clock.nsecsElapsed();
      m_max = std::max(m_max, ns - m_last);
      m_last = ns;
    });
  }
  void start() {
    m_clock.start();
    m_last = 0;
    m_max = 0;
    m_timer.start();
  }
  double stopMs() {
    m_timer.stop();
    return double(m_max) / 1e6;
  }

 private:
  QTimer m_timer;
  QElapsedTimer m_clock;
  qint64 m_last = 0;
  qint64 m_max = 0;
};

bool waitFor(QObject* sender, const char* what, QSignalSpy& spy, int timeoutMs = 120'000) {
  if (spy.count() > 0 || spy.wait(timeoutMs)) return true;
  std::fprintf(stderr, "bench_gui: timed out waiting for %s\n", what);
  (void)sender;
  return false;
}

int cold(const QString& dir) {
  const double startMs = msSinceProcessStart();
  QElapsedTimer clock;
  clock.start();
  ckpt::MainWindow w;
  w.resize(1280, 800);
  w.show();
  QSignalSpy scanned(&w, &ckpt::MainWindow::scanFinished);
  w.openPaths({dir});
  if (!waitFor(&w, "the scan", scanned)) return 1;
  const double populated = clock.nsecsElapsed() / 1e6;
  std::printf(
      "{\"mode\": \"cold\", \"process_to_populated_ms\": %.1f, \"main_to_populated_ms\": %.1f, "
      "\"process_to_main_ms\": %.1f, \"checkpoints\": %zu}\n",
      startMs + populated, populated, startMs, w.checkpointModel()->checkpointCount());
  return 0;
}

int stall(const QString& dir, const QString& file, const QString& tensorName) {
  ckpt::MainWindow w;
  w.resize(1280, 800);
  w.show();
  // The first paint (fonts, styles) is start-up, measured by `cold`, not a
  // stall while scanning: let it happen before the meter starts.
  QElapsedTimer warm;
  warm.start();
  while (warm.elapsed() < 300) QApplication::processEvents(QEventLoop::AllEvents, 10);
  StallMeter meter;
  QElapsedTimer clock;

  // 1. The scan.
  QSignalSpy loaded(&w, &ckpt::MainWindow::loaded);
  meter.start();
  clock.start();
  w.openPaths({dir});
  if (!waitFor(&w, "the scan", loaded)) return 1;
  const double scanMs = clock.nsecsElapsed() / 1e6;
  const double scanStall = meter.stopMs();
  QApplication::processEvents();

  // 2. One checkpoint's summary, metadata, parameters.
  QSignalSpy shown(&w, &ckpt::MainWindow::summaryShown);
  meter.start();
  clock.start();
  if (!w.selectPath(file)) {
    std::fprintf(stderr, "bench_gui: %s is not listed under %s\n", qPrintable(file),
                 qPrintable(dir));
    return 1;
  }
  while (w.inspector()->shownPath() != file) {
    if (!shown.wait(120'000)) {
      std::fprintf(stderr, "bench_gui: %s was not shown\n", qPrintable(file));
      return 1;
    }
  }
  const double selectMs = clock.nsecsElapsed() / 1e6;
  const double selectStall = meter.stopMs();

  // 3. One tensor's statistics, histogram and heat map.
  const auto ck = ckpt::CheckpointFile::open(file.toStdString());
  int index = -1;
  uint64_t numel = 0;
  for (size_t i = 0; i < ck->tensors().size(); ++i)
    if (QString::fromStdString(ckpt::joinPath(ck->tensors()[i].path)) == tensorName) {
      index = int(i);
      numel = ck->tensors()[i].numel();
    }
  if (index < 0) {
    std::fprintf(stderr, "bench_gui: no tensor %s in %s\n", qPrintable(tensorName),
                 qPrintable(file));
    return 1;
  }
  ckpt::TensorView* view = w.inspector()->tensorView();
  QSignalSpy ready(view, &ckpt::TensorView::statsReady);
  QSignalSpy failed(view, &ckpt::TensorView::statsFailed);
  meter.start();
  clock.start();
  w.inspector()->inspectTensor(index);
  while (ready.isEmpty() && failed.isEmpty())
    if (!ready.wait(120'000)) break;
  const double statsMs = clock.nsecsElapsed() / 1e6;
  // Let the histogram and heat map draw before the stall window closes.
  QElapsedTimer settle;
  settle.start();
  while (settle.elapsed() < 300) QApplication::processEvents(QEventLoop::AllEvents, 10);
  const double statsStall = meter.stopMs();
  if (!failed.isEmpty()) {
    std::fprintf(stderr, "bench_gui: statistics failed: %s\n",
                 qPrintable(failed.front().at(1).toString()));
    return 1;
  }
  std::printf(
      "{\"mode\": \"stall\", \"checkpoints\": %zu, \"scan_ms\": %.1f, \"scan_max_stall_ms\": %.1f, "
      "\"select_ms\": %.1f, \"select_max_stall_ms\": %.1f, \"tensor\": \"%s\", \"tensor_numel\": "
      "%llu, "
      "\"stats_ms\": %.1f, \"stats_max_stall_ms\": %.1f}\n",
      w.checkpointModel()->checkpointCount(), scanMs, scanStall, selectMs, selectStall,
      qPrintable(tensorName), static_cast<unsigned long long>(numel), statsMs, statsStall);
  return 0;
}

// One metrics.jsonl line as our trainer writes it.
std::string metricsLine(int64_t step) {
  char line[160];
  const double loss =
      2.0 + 3.0 * std::exp(-double(step) / 200000.0) + 0.05 * std::sin(double(step) * 0.37);
  std::snprintf(line, sizeof line,
                "{\"step\": %lld, \"loss\": %.6f, \"lr\": %.6g, \"tokens\": %lld}\n",
                static_cast<long long>(step), loss, 3e-4, static_cast<long long>(step) * 4096);
  return line;
}

int curves(int64_t points) {
  QTemporaryDir dir;
  const std::string file = dir.filePath("big/metrics.jsonl").toStdString();
  QDir(dir.path()).mkpath("big");
  {
    std::ofstream out(file);
    for (int64_t i = 1; i <= points; ++i) out << metricsLine(i);
  }
  ckpt::CurvesView view;
  view.resize(1000, 640);
  view.show();
  view.setPollInterval(100);
  QElapsedTimer clock;
  clock.start();
  QSignalSpy ready(&view, &ckpt::CurvesView::curvesReady);
  ckpt::RunEntry big;
  big.name = "big";
  big.path = dir.filePath("big").toStdString();
  view.setRuns({big});
  if (!waitFor(&view, "the curves", ready)) return 1;
  const double loadMs = clock.nsecsElapsed() / 1e6;
  QCPGraph* raw = view.rawGraph("big");
  if (!raw || raw->dataCount() != points) {
    std::fprintf(stderr, "bench_gui: %d points plotted, %lld written\n", raw ? raw->dataCount() : 0,
                 static_cast<long long>(points));
    return 1;
  }
  double replot = 0;
  for (int i = 0; i < 5; ++i) {
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    replot += view.plot()->replotTime(false);
  }
  // Live: a writer thread appends 20,000 lines in 200 bursts.
  StallMeter meter;
  meter.start();
  clock.start();
  const int64_t more = 20000;
  std::thread writer([&file, points, more] {
    std::ofstream out(file, std::ios::app);
    for (int64_t i = points + 1; i <= points + more; ++i) {
      out << metricsLine(i);
      if (i % 100 == 0) {
        out.flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  });
  while (raw->dataCount() < points + more && clock.elapsed() < 120'000)
    QApplication::processEvents(QEventLoop::AllEvents, 10);
  writer.join();
  const double liveMs = clock.nsecsElapsed() / 1e6;
  const double stall = meter.stopMs();
  std::printf(
      "{\"mode\": \"curves\", \"points\": %lld, \"load_ms\": %.1f, \"replot_ms\": %.1f, "
      "\"appended\": %lld, \"plotted\": %d, \"live_ms\": %.1f, \"live_max_stall_ms\": %.1f}\n",
      static_cast<long long>(points), loadMs, replot / 5, static_cast<long long>(more),
      raw->dataCount(), liveMs, stall);
  return raw->dataCount() == points + more ? 0 : 1;
}

// A click on the header section titled `title`; the milliseconds it took
// (the table is built again before the click returns).
double clickHeader(ckpt::RunsTablePanel* panel, const QString& title) {
  QHeaderView* h = panel->view()->horizontalHeader();
  for (int c = 0; c < panel->model()->columnCount(); ++c) {
    if (panel->model()->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString() != title)
      continue;
    panel->view()->scrollTo(panel->model()->index(0, c));
    const QPoint at(h->sectionViewportPosition(c) + h->sectionSize(c) / 2, h->height() / 2);
    QElapsedTimer clock;
    clock.start();
    QTest::mouseClick(h->viewport(), Qt::LeftButton, {}, at);
    return clock.nsecsElapsed() / 1e6;
  }
  std::fprintf(stderr, "bench_gui: no column %s\n", qPrintable(title));
  return -1;
}

int runsTable(const QString& dir) {
  QSettings().clear();  // no filter or sort remembered from an earlier run
  ckpt::CurvesView view;
  view.resize(1000, 700);
  view.show();
  QElapsedTimer clock;
  clock.start();
  QSignalSpy ready(&view, &ckpt::CurvesView::curvesReady);
  view.setRuns(ckpt::scanDirectory(dir.toStdString()).runs);
  if (!waitFor(&view, "the curves", ready, 600'000)) return 1;
  const double loadMs = clock.nsecsElapsed() / 1e6;
  double replot = 0;
  for (int i = 0; i < 3; ++i) {
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    replot += view.plot()->replotTime(false);
  }
  replot /= 3;
  clock.start();
  size_t points = 0;
  for (const ckpt::CurveRun& run : view.runs()) {
    const ckpt::RunSummary s = ckpt::summarizeCurveRun(run);
    for (const auto& [metric, m] : s.metrics) points += m.points;
  }
  const double summarizeMs = clock.nsecsElapsed() / 1e6;
  ckpt::RunsTablePanel* panel = view.runsTable();
  const int groupRows = panel->model()->rowCount();
  const double groupedSortMs = clickHeader(panel, "Best (min)");
  // The grouped table built again (a filter that keeps every run: the chart stays).
  QLineEdit* box = panel->filterBox();
  box->setFocus();
  QTest::keyClicks(box, "seed >= 0");
  clock.start();
  QTest::keyClick(box, Qt::Key_Return);
  const double groupedBuildMs = clock.nsecsElapsed() / 1e6;
  box->clear();
  // One row per run (the chart drawn again too), then sorted, then filtered.
  clock.start();
  view.setGroupBy("none");
  const double ungroupMs = clock.nsecsElapsed() / 1e6;
  const double sortMs = clickHeader(panel, "Best (min)");
  box->setFocus();
  QTest::keyClicks(box, "seed < 100");
  clock.start();
  QTest::keyClick(box, Qt::Key_Return);
  const double filterMs = clock.nsecsElapsed() / 1e6;
  const int kept = panel->model()->rowCount();
  std::printf(
      "{\"mode\": \"runstable\", \"runs\": %zu, \"points\": %zu, \"load_ms\": %.1f, "
      "\"replot_ms\": %.1f, \"summarize_ms\": %.1f, \"group_rows\": %d, "
      "\"grouped_sort_ms\": %.1f, \"grouped_build_ms\": %.1f, \"ungroup_ms\": %.1f, \"sort_ms\": "
      "%.1f, \"filter_ms\": %.1f, "
      "\"filter_rows\": %d, \"summarize_vs_load\": %.4f, \"grouped_sort_vs_replot\": %.2f, "
      "\"sort_vs_replot\": %.2f, \"filter_vs_load\": %.4f}\n",
      view.runs().size(), points, loadMs, replot, summarizeMs, groupRows, groupedSortMs,
      groupedBuildMs, ungroupMs, sortMs, filterMs, kept, summarizeMs / loadMs,
      groupedSortMs / replot, sortMs / replot, filterMs / loadMs);
  return 0;
}

int sweep(const QString& dir) {
  QSettings().clear();  // the defaults: no metric, grouping or splitter remembered
  const double startMs = msSinceProcessStart();
  QElapsedTimer clock;
  clock.start();
  ckpt::MainWindow w;
  w.resize(1280, 800);
  w.show();
  w.tabs()->setCurrentWidget(w.curvesView());
  ckpt::CurvesView* view = w.curvesView();
  QSignalSpy ready(view, &ckpt::CurvesView::curvesReady);
  QSignalSpy scanned(&w, &ckpt::MainWindow::scanFinished);
  QApplication::processEvents();
  const double windowMs = clock.nsecsElapsed() / 1e6;
  clock.start();
  w.openPaths({dir});
  if (!waitFor(&w, "the scan", scanned, 600'000)) return 1;
  const double scanMs = clock.nsecsElapsed() / 1e6;
  if (!waitFor(view, "the curves", ready, 600'000)) return 1;
  const double shownMs = clock.nsecsElapsed() / 1e6;
  // The first paint of the chart with every curve (or group) in it.
  QElapsedTimer paint;
  paint.start();
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  QApplication::processEvents();
  const double paintMs = paint.nsecsElapsed() / 1e6;
  size_t points = 0;
  for (const ckpt::CurveRun& run : view->runs())
    for (const auto& [metric, series] : run.series) points += series.points.size();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const long long groups = static_cast<long long>(view->groupLabels().size());
  const int graphs = view->plot()->graphCount();
  const double groupedRssMb = double(usage.ru_maxrss) / 1024.0;
  // BENCH_UNGROUPED=1: then every run drawn on its own (Group by: None, as
  // the box sets it), the time to that chart painted and the peak after.
  QString ungrouped;
  if (qEnvironmentVariableIntValue("BENCH_UNGROUPED") == 1) {
    QElapsedTimer regroup;
    regroup.start();
    view->setGroupBy(QStringLiteral("none"));
    const double regroupMs = regroup.nsecsElapsed() / 1e6;
    view->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QApplication::processEvents();
    const double ungroupMs = regroup.nsecsElapsed() / 1e6;
    getrusage(RUSAGE_SELF, &usage);
    ungrouped = QStringLiteral(
                    ", \"ungrouped_graphs\": %1, \"ungroup_ms\": %2, "
                    "\"regroup_ms\": %4, \"ungrouped_peak_rss_mb\": %3")
                    .arg(view->plot()->graphCount())
                    .arg(ungroupMs, 0, 'f', 1)
                    .arg(double(usage.ru_maxrss) / 1024.0, 0, 'f', 1)
                    .arg(regroupMs, 0, 'f', 1);
  }
  std::printf(
      "{\"mode\": \"sweep\", \"runs\": %zu, \"points\": %zu, \"groups\": %lld, "
      "\"graphs\": %d, \"window_ms\": %.1f, \"scan_ms\": %.1f, \"open_to_shown_ms\": %.1f, "
      "\"process_to_shown_ms\": %.1f, \"paint_ms\": %.1f, \"peak_rss_mb\": %.1f%s}\n",
      view->runs().size(), points, groups, graphs, windowMs, scanMs, shownMs,
      startMs + windowMs + shownMs, paintMs, groupedRssMb, qPrintable(ungrouped));
  return 0;
}

int manyCheckpoints(const QString& dir) {
  QSettings().clear();
  ckpt::MainWindow w;
  w.resize(1280, 800);
  w.show();
  QApplication::processEvents();
  ckpt::CheckpointListModel* model = w.checkpointModel();
  QElapsedTimer clock;
  double firstRowsMs = -1;
  int firstRuns = 0;
  auto firstRows = [&] {
    if (firstRowsMs < 0 && model->rowCount() > 0) {
      firstRowsMs = clock.nsecsElapsed() / 1e6;
      firstRuns = model->rowCount();
    }
  };
  QObject::connect(model, &QAbstractItemModel::rowsInserted, &w, firstRows);
  QObject::connect(model, &QAbstractItemModel::modelReset, &w, firstRows);
  QSignalSpy scanned(&w, &ckpt::MainWindow::scanFinished);
  clock.start();
  w.openPaths({dir});
  if (!waitFor(&w, "the scan", scanned, 600'000)) return 1;
  const double completeMs = clock.nsecsElapsed() / 1e6;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "{\"mode\": \"manyckpt\", \"runs\": %d, \"checkpoints\": %zu, \"first_rows_ms\": %.1f, "
      "\"first_rows_runs\": %d, \"complete_ms\": %.1f, \"peak_rss_mb\": %.1f}\n",
      model->rowCount(), model->checkpointCount(), firstRowsMs, firstRuns, completeMs,
      double(usage.ru_maxrss) / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // As the app starts (app/gui/main.cpp): its heap advised for huge pages,
  // which changes what a first touch of memory costs (huge_page_malloc.h).
  ckpt::restartWithHugePageMalloc(argv);
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setOrganizationName("CkptScopeBench");  // keep the user's recent list clean
  const QStringList args = app.arguments();
  if (args.size() == 3 && args[1] == "cold") return cold(args[2]);
  if (args.size() == 5 && args[1] == "stall") return stall(args[2], args[3], args[4]);
  if (args.size() == 3 && args[1] == "curves") return curves(args[2].toLongLong());
  if (args.size() == 3 && args[1] == "runstable") return runsTable(args[2]);
  if (args.size() == 3 && args[1] == "sweep") return sweep(args[2]);
  if (args.size() == 3 && args[1] == "manyckpt") return manyCheckpoints(args[2]);
  std::fprintf(
      stderr,
      "usage: bench_gui cold DIR | bench_gui stall DIR FILE TENSOR | bench_gui curves POINTS | "
      "bench_gui runstable DIR | bench_gui sweep DIR | bench_gui manyckpt DIR\n");
  return 2;
}
