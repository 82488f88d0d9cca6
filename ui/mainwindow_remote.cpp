// MainWindow and locations on other machines (docs/REMOTE.md, "The app"):
// opening, refreshing and the messages when a host cannot be reached. The
// work is ui/remote's, on the thread pool; here it is started and its
// results are swapped in.
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QTabWidget>
#include <QTreeView>
#include <algorithm>
#include <stdexcept>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "browser/runsummary.h"
#include "browser/runwatcher.h"
#include "ckpt/analysis/tensor_stats.h"
#include "ckpt/remote/describe_wire.h"
#include "ckpt/remote/plots_wire.h"
#include "ckpt/remote/shards_wire.h"
#include "compare/compareview.h"
#include "compare/driftview.h"
#include "curves/curvesview.h"
#include "inspector/inspectorwidget.h"
#include "inspector/tensorview.h"
#include "mainwindow.h"
#include "remote/openremotedialog.h"
#include "remote/remotediff.h"
#include "remote/remotefolder.h"
#include "remote/remotesession.h"
#include "textformat.h"
#include "training/trainpanel.h"

namespace ckpt {

void MainWindow::setUpRemote() {
  m_remote = std::make_unique<RemoteSession>(this);
  m_remoteCancel = new QPushButton(tr("Cancel"), this);
  m_remoteCancel->setObjectName(QStringLiteral("remoteCancel"));
  m_remoteCancel->setToolTip(tr("Stop what the host is asked to do"));
  statusBar()->addPermanentWidget(m_remoteCancel);
  m_remoteCancel->hide();
  connect(m_remoteCancel, &QPushButton::clicked, this, &MainWindow::cancelRemote);
  setUpRemoteFollowing();
  connect(m_inspector->tensorView(), &TensorView::remoteBusy, this, [this](bool busy) {
    m_remote->tensorBusy = busy;
    if (busy)
      statusBar()->showMessage(tr("Computing the tensor's statistics on the host..."));
    else if (statusBar()->currentMessage().startsWith(tr("Computing the tensor's")))
      statusBar()->clearMessage();
    updateRemoteCancel();
  });
}

void MainWindow::updateRemoteCancel() {
  m_remoteCancel->setVisible(m_remote->job.isRunning() || m_remote->describing ||
                             m_remote->tensorBusy);
}

bool MainWindow::isRemote() const {
  return m_remote->where.has_value();
}

void MainWindow::chooseRemote() {
  QStringList recent;
  for (const QStringList& paths : recentPaths())
    if (paths.size() == 1 && isRemoteLocation(paths.front())) recent << paths.front();
  OpenRemoteDialog dialog(recent, this);
  if (dialog.exec() == QDialog::Accepted) openPaths({dialog.location()});
}

bool MainWindow::openRemote(const QString& location) {
  std::optional<remote::RemotePath> where;
  try {
    where = remote::parseRemotePath(pathToStd(location));
  } catch (const std::invalid_argument& e) {
    showRemoteFailure(fromStd(e.what()));
    return false;
  }
  if (!where) return false;
  m_watcher->stop();
  m_curvesRefresh.stop();
  m_scan.drop();  // a local scan still running: the newest open wins
  // The same location again (F5): the rows again, and only what the curves'
  // files gained since (`metrics since`). Another: read whole. What is shown
  // stays until the answer is in (a host that cannot be reached leaves it).
  const bool refresh =
      m_remote->where && m_remote->where->display() == where->display() && !m_remote->files.empty();
  m_loadPending = true;
  m_summaryPending = false;
  std::vector<QString> shownRuns;
  for (const CurveRun& r : m_curves->runs()) shownRuns.push_back(r.path);
  const auto asked = std::chrono::steady_clock::now();
  auto work = [connections = m_remote->connections, at = *where, refresh, files = m_remote->files,
               shownRuns](JobProgress& progress) {
    RemoteRefresh loaded;
    if (refresh) {
      loaded = refreshRemoteFolder(*connections, at, files, shownRuns, progress);
    } else {
      loaded.folder = loadRemoteFolder(*connections, at, progress);
      loaded.reloaded = true;
    }
    // The Train tab offers SLURM where the host has it.
    loaded.sbatch = connections->hello(at).value("sbatch", false);
    return loaded;
  };
  m_remote->job.start(
      std::move(work),
      [this, at = *where, location, asked](JobOutcome outcome, std::optional<RemoteRefresh> result,
                                           const QString& error) {
        if (outcome == JobOutcome::Done && result) {
          m_remote->listedAt = asked;
          m_remote->where = at;
          m_remote->location = location;
          m_paths = {location};
          m_extraLogs.clear();
          rememberPaths(m_paths);  // a location that answered, not a typo
          setWindowTitle(tr("CkptScope — %1").arg(location));
        }
        onRemoteFinished(outcome, std::move(result), error);
      },
      [this](const JobProgress& progress) { showRemoteProgress(progress); });
  m_browser->showProgress(0, 0);
  m_remoteCancel->show();
  statusBar()->showMessage(tr("Connecting to %1...").arg(fromStd(where->host)));
  return true;
}

void MainWindow::showRemoteProgress(const JobProgress& progress) {
  const QString host = m_remote->where ? fromStd(m_remote->where->host) : tr("the host");
  switch (progress.part()) {
    case 1:
      statusBar()->showMessage(tr("Connecting to %1...").arg(host));
      break;
    case 2:
      statusBar()->showMessage(tr("Listing the runs on the host..."));
      break;
    case 3:
      statusBar()->showMessage(tr("Reading their curves on the host..."));
      break;
    default:
      break;
  }
}

void MainWindow::cancelRemote() {
  // The agent is sent `cancel` for what it is doing (stats, diff and report
  // stop at once; scan and metrics are not stopped once started, their
  // answers are dropped). Nothing of it is reported as an error.
  const bool loading = m_remote->job.isRunning();
  m_remote->job.drop();
  if (m_remote->describing) m_summary.cancel();
  m_inspector->tensorView()->cancel();
  m_remoteCancel->hide();
  if (!loading) return;
  m_browser->hideProgress();
  statusBar()->showMessage(tr("Stopped waiting for the host: what was shown is kept"), 10000);
  finishLoading();
}

void MainWindow::onRemoteFinished(JobOutcome outcome, std::optional<RemoteRefresh> result,
                                  const QString& error) {
  updateRemoteCancel();
  m_browser->hideProgress();
  if (outcome == JobOutcome::Cancelled) {  // stopped on purpose: nothing to report
    finishLoading();
    return;
  }
  if (outcome == JobOutcome::Failed || !result) {
    showRemoteFailure(error);
    finishLoading();
    return;
  }
  if (m_remote->where) m_train->setRemoteHost(fromStd(m_remote->where->endpoint()), result->sbatch);
  m_remote->files = std::move(result->folder.files);
  m_remote->curvesReloaded = result->reloaded;
  m_remote->curves = std::move(result->folder.curves);
  m_remote->batches = std::move(result->batches);
  // The host's agent watches it from now on; what changes before its first
  // look it reports then (RemoteWatch::start's listedAt).
  startRemoteFollowing();
  if (m_remote->followPending) followRemote({}, false);
  // The rows as a local scan's are shown (selection, status, the curves).
  onScanFinished(std::move(result->folder.groups), {});
}

bool MainWindow::applyRemoteCurves() {
  if (!m_remote->where) return false;
  if (m_remote->curvesReloaded) {
    m_remote->curvesReloaded = false;
    m_curves->setLoadedRuns(std::move(m_remote->curves));
    m_remote->curves.clear();
    return true;
  }
  size_t points = 0;
  for (const RemoteBatch& b : m_remote->batches)
    if (m_curves->addLivePoints(b.runPath, b.source, b.points)) points += b.points.size();
  m_remote->batches.clear();
  if (points)
    statusBar()->showMessage(tr("%1 new on the host").arg(countText(points, "point", "points")),
                             10000);
  return true;
}

void MainWindow::showRemoteFailure(const QString& message) {
  const QString text =
      message + "\n\n" +
      tr("What was shown is kept. Press F5 (File > Reload) to connect again, or File > Open "
         "Remote... to change the location.");
  statusBar()->showMessage(message);
  // One message at a time, not in the way of the window (not modal).
  delete findChild<QMessageBox*>(QStringLiteral("remoteError"));
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Cannot reach the host"), text,
                              QMessageBox::Ok, this);
  box->setObjectName(QStringLiteral("remoteError"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setModal(false);
  box->show();
}

namespace {

// The Tensor tab's numbers of a checkpoint on `where`'s host, from its agent.
std::shared_ptr<RemoteTensors> remoteTensors(std::shared_ptr<RemoteConnections> connections,
                                             const remote::RemotePath& where,
                                             const std::string& path,
                                             const CheckpointDescription& d,
                                             const QString& location) {
  using Json = nlohmann::ordered_json;
  auto r = std::make_shared<RemoteTensors>();
  r->location = location;
  for (const DescribedTensor& t : d.tensors) r->sizes.push_back(t.sizes);
  r->stats = [connections, where, path](int tensor, JobProgress& progress) {
    const Json answer = connections->call(
        where, "stats", Json{{"path", path}, {"tensor", tensor}},
        [&progress](const Json& p) {
          progress.report(p.value("done", uint64_t(0)), p.value("total", uint64_t(0)));
        },
        [&progress] { return progress.cancelled(); });
    const remote::WireStats w = remote::statsFromWire(answer.at("stats"));
    TensorStats s;
    s.count = w.count;
    s.finite = w.finite;
    s.zeros = w.zeros;
    s.nans = w.nans;
    s.posInf = w.posInf;
    s.negInf = w.negInf;
    s.min = w.min;
    s.max = w.max;
    s.mean = w.mean;
    s.std = w.std;
    s.l2norm = w.l2norm;
    return s;
  };
  // The Tensor tab's histogram and heat map: `stats` with bins and heat
  // cells, computed on the host as analyzeTensor computes them here.
  r->analyze = [connections, where, path](int tensor, const AnalysisOptions& options,
                                          JobProgress& progress, bool* plotted) {
    const Json answer = connections->call(
        where, "stats",
        Json{{"path", path},
             {"tensor", tensor},
             {"bins", options.bins},
             {"heat_rows", options.heatRows},
             {"heat_cols", options.heatCols}},
        [&progress](const Json& p) {
          progress.report(p.value("done", uint64_t(0)), p.value("total", uint64_t(0)));
        },
        [&progress] { return progress.cancelled(); });
    const remote::WireStats w = remote::statsFromWire(answer.at("stats"));
    TensorAnalysis a;
    a.stats = {w.count, w.finite, w.zeros, w.nans, w.posInf, w.negInf,
               w.min,   w.max,    w.mean,  w.std,  w.l2norm};
    std::optional<Histogram> h = remote::histogramFromWire(answer);
    std::optional<HeatMap> m = remote::heatMapFromWire(answer);
    *plotted = h.has_value();  // an older agent ignores bins
    if (h) a.histogram = std::move(*h);
    if (m) a.heatMap = std::move(*m);
    return a;
  };
  r->slice = [connections, where, path](int tensor, uint64_t first, size_t count, double* out) {
    const Json answer = connections->call(
        where, "slice",
        Json{{"path", path}, {"tensor", tensor}, {"first", first}, {"count", count}});
    const std::vector<double> values = remote::sliceFromWire(answer, count);
    std::copy(values.begin(), values.end(), out);
    return values.size();
  };
  return r;
}

}  // namespace

// The agent describes the checkpoint where it is (`describe`); the Inspect
// tab shows it as it shows a local file, the Tensor tab reads its numbers
// there. Cancel (the status bar's) tells the agent to stop.
void MainWindow::showRemoteCheckpoint(const CheckpointEntry& checkpoint, const BrowseGroup& run) {
  const remote::RemotePath where = *m_remote->where;
  const QString location = remoteLocation(where, checkpoint.path);
  m_summaryPath = location;
  m_summaryPending = true;
  m_train->setSelectedCheckpoint(location);  // Resume / Fine-tune start it on the host
  m_remote->describing = true;
  updateRemoteCancel();
  statusBar()->showMessage(tr("Reading %1 on the host...").arg(location));
  m_summary.start(
      [connections = m_remote->connections, where, path = checkpoint.path, location,
       trainer = trainerLine(run, &checkpoint)](JobProgress& progress) {
        const auto cancelled = [&progress] { return progress.cancelled(); };
        CheckpointDescription d;
        try {
          const auto answer = connections->call(
              where, "describe", nlohmann::ordered_json{{"path", path}}, {}, cancelled);
          d = remote::describeFromWire(answer.at("description"));
        } catch (const remote::RemoteError& e) {
          if (progress.cancelled()) return CheckpointSummary{};  // the outcome is Cancelled
          // Shown in the Summary, as a local file that cannot be read is.
          return failedSummary(location, fromStd(e.what()), {});
        } catch (const std::exception& e) {
          return failedSummary(location, fromStd(e.what()), {});
        }
        CheckpointSummary s = summaryFromDescription(d);
        s.path = location;
        auto tensors = remoteTensors(connections, where, path, d, location);
        tensors->rows = s.tensors;
        if (d.sharded) {
          // The Shards tab: its parts, tensors and chunks (`shards`), no bytes.
          try {
            const auto answer = connections->call(
                where, "shards", nlohmann::ordered_json{{"path", path}}, {}, cancelled);
            if (!answer.is_object() || !answer.contains("shards"))
              throw std::runtime_error("shards: the answer holds no shards");
            s.shards =
                std::make_shared<const ShardListing>(remote::shardsFromWire(answer["shards"]));
          } catch (const remote::RemoteError& e) {
            if (progress.cancelled()) return CheckpointSummary{};
            s.shardsProblem =
                e.code() == "unknown_method"
                    ? QObject::tr(
                          "The agent on %1 is older than the Shards tab (no `shards`): "
                          "update ckptscope-cli there to see how this checkpoint is split.")
                          .arg(fromStd(where.endpoint()))
                    : QObject::tr("%1 could not list the shards: %2")
                          .arg(fromStd(where.endpoint()), fromStd(e.what()));
          } catch (const std::exception& e) {  // an answer refused (shardsFromWire)
            s.shardsProblem =
                QObject::tr("%1 sent a wrong answer, so its shards are not listed: %2")
                    .arg(fromStd(where.endpoint()), fromStd(e.what()));
          }
          if (!s.shardsProblem.isEmpty()) s.notes << s.shardsProblem;
        }
        s.remote = std::move(tensors);
        addTrainerField(s, trainer);
        return s;
      },
      [this](JobOutcome outcome, std::optional<CheckpointSummary> summary, const QString& error) {
        m_remote->describing = false;
        updateRemoteCancel();
        if (outcome == JobOutcome::Cancelled) {  // stopped on purpose: nothing to report
          m_summaryPending = false;
          statusBar()->showMessage(tr("Stopped reading %1").arg(m_summaryPath), 10000);
          finishLoading();
          return;
        }
        onSummaryReady(summary ? *summary : failedSummary(m_summaryPath, error, {}));
      });
}

QString MainWindow::locatedPath(const QString& p) const {
  // The browser's rows of a remote folder hold the paths on its host; an
  // ssh:// location names its host itself; anything else is a file here
  // (Compare With...'s file dialog).
  if (isRemoteLocation(p)) return p;
  if (m_remote->where && m_model->indexOfPath(p).isValid())
    return remoteLocation(*m_remote->where, pathToStd(p));
  return p;
}

bool MainWindow::driftRemote(const QString& title, const QStringList& files,
                             const QStringList& labels) {
  QStringList located;
  for (const QString& f : files) located << locatedPath(f);
  if (std::none_of(located.begin(), located.end(), isRemoteLocation)) return false;
  // A chain on a host: each pair compared there (only the numbers travel).
  m_tabs->setCurrentWidget(m_drift);
  m_drift->showChain(title, located, labels, remoteDiffSource(m_remote->connections));
  return true;
}

bool MainWindow::compareRemote(const QString& a, const QString& b) {
  const QString ra = locatedPath(a), rb = locatedPath(b);
  if (!isRemoteLocation(ra) && !isRemoteLocation(rb)) return false;
  m_tabs->setCurrentWidget(m_compare);
  if (const QString problem = remotePairProblem(ra, rb); !problem.isEmpty()) {
    m_compare->showMessage(problem, ra, rb);
    statusBar()->showMessage(problem, 10000);
    return true;
  }
  m_compare->compare(ra, rb, remoteDiffSource(m_remote->connections));
  statusBar()->showMessage(m_compare->summaryLine());
  return true;
}

}  // namespace ckpt
