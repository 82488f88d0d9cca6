#include "training/runview.h"

#include <QDateTime>
#include <QFontDatabase>
#include <QGridLayout>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSplitter>
#include <QVBoxLayout>
#include <climits>

#include "ckpt/index/metrics.h"
#include "ckpt/index/scanner.h"
#include "ckpt/trainapi/train_backend.h"
#include "textformat.h"
#include "training/livecurves.h"

namespace {

// Steps as a person reads them, whatever the system's locale: 1,000,000.
QString steps(int64_t n) {
  QLocale c = QLocale::c();
  c.setNumberOptions({});
  return c.toString(qint64(n));
}

}  // namespace

namespace ckpt {

RunView::RunView(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 0, 0, 0);
  m_title = new QLabel(tr("No run yet"), this);
  QFont bold = m_title->font();
  bold.setBold(true);
  m_title->setFont(bold);
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_title->setWordWrap(true);
  v->addWidget(m_title);
  m_progress = new QProgressBar(this);
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(tr("step %v of %m"));
  m_progress->setTextVisible(false);  // until a run says what its steps are
  v->addWidget(m_progress);

  auto* grid = new QGridLayout;
  grid->setHorizontalSpacing(16);
  auto cell = [&](int row, int col, const QString& name) {
    grid->addWidget(new QLabel(name, this), row, col * 2);
    auto* value = new QLabel(QStringLiteral("–"), this);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setMinimumWidth(90);
    grid->addWidget(value, row, col * 2 + 1);
    return value;
  };
  m_step = cell(0, 0, tr("step"));
  m_loss = cell(0, 1, tr("loss"));
  m_lr = cell(0, 2, tr("lr"));
  m_speed = cell(1, 0, tr("tokens/s"));
  m_eta = cell(1, 1, tr("ETA"));
  m_device = cell(1, 2, tr("device"));
  m_device->setObjectName(QStringLiteral("rankDevices"));
  grid->setColumnStretch(5, 1);
  v->addLayout(grid);

  m_status = new QLabel(this);
  m_status->setObjectName(QStringLiteral("status"));
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(m_status);

  auto* split = new QSplitter(Qt::Vertical, this);
  m_curves = new LiveCurves(split);
  m_log = new QPlainTextEdit(split);
  m_log->setReadOnly(true);
  m_log->setMaximumBlockCount(20000);
  m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_log->setPlaceholderText(tr("The run's log appears here."));
  m_log->setMinimumHeight(m_log->fontMetrics().height() * 3);
  split->addWidget(m_curves);
  split->addWidget(m_log);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
  // Before the first run there is nothing to chart: the form has the room
  // (a 700-pixel window left the chart 34 pixels high).
  m_charts = split;
  m_charts->hide();
  m_curves->hide();
  v->addStretch(0);
}

QString RunView::title() const {
  return m_title->text();
}
QString RunView::statusText() const {
  return m_status->text();
}
QString RunView::logText() const {
  return m_log->toPlainText();
}

void RunView::setTitle(const QString& title) {
  m_title->setText(title);
}

void RunView::clear() {
  m_history.drop();
  m_maxSteps = 0;
  m_curves->clear();
  m_log->clear();
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(tr("step %v of %m"));
  for (QLabel* l : {m_step, m_loss, m_lr, m_speed, m_eta, m_device})
    l->setText(QStringLiteral("–"));
}

void RunView::setStepRange(int64_t startStep, int64_t maxSteps) {
  m_progress->setRange(0, int(std::min<int64_t>(maxSteps, INT_MAX)));
  m_progress->setTextVisible(true);
  m_progress->setValue(int(startStep));
  m_step->setText(QStringLiteral("%1 / %2").arg(steps(startStep), steps(maxSteps)));
  m_maxSteps = maxSteps;
  setProgress(startStep);
  m_curves->setStepRange(double(startStep), double(maxSteps));
}

void RunView::setProgress(int64_t step) {
  m_progress->setValue(int(std::min<int64_t>(step, m_progress->maximum())));
  // Its own words, grouped: "step 300 of 1,000,000" (%v and %m are not).
  m_progress->setFormat(tr("step %1 of %2").arg(steps(step), steps(m_maxSteps)));
}

void RunView::showStep(const StepReport& r) {
  setProgress(r.step);
  m_step->setText(QStringLiteral("%1 / %2").arg(steps(r.step), steps(r.maxSteps)));
  m_loss->setText(r.valLoss ? tr("%1 (val %2)").arg(r.loss, 0, 'f', 4).arg(*r.valLoss, 0, 'f', 4)
                            : QString::number(r.loss, 'f', 4));
  m_lr->setText(QString::number(r.learningRate, 'e', 2));
  m_speed->setText(QLocale().toString(qRound64(r.tokensPerSecond)));
}

void RunView::setEta(const QString& eta) {
  m_eta->setText(eta);
}

void RunView::setDevices(const QString& text, bool severalRanks) {
  m_device->setWordWrap(severalRanks);
  m_device->setText(text);
}

void RunView::loadHistory(const QString& outputDir, int64_t upToStep) {
  const std::string dir = pathToStd(outputDir);
  m_history.start(
      [dir, upToStep](JobProgress&) {
        // The run as the Curves tab reads it: its checkpoints (for the
        // names its log lines go by, and their recorded values), then
        // collectRunMetrics.
        const RunMetrics metrics = collectRunMetrics(scanRunDirectory(dir, dir));
        LiveCurves::History h;
        auto take = [&](const char* metric, QVector<double>& steps, QVector<double>& values) {
          const MetricSeries* s = metrics.find(metric);
          if (!s) return;
          for (const MetricPoint& p : s->points) {
            if (p.step > upToStep) break;  // sorted by step; later ones are this job's
            steps.append(double(p.step));
            values.append(p.value);
          }
        };
        take("loss", h.lossSteps, h.loss);
        take("val_loss", h.valLossSteps, h.valLoss);
        take("lr", h.lrSteps, h.lr);
        return h;
      },
      [this](JobOutcome outcome, std::optional<LiveCurves::History> history, const QString& error) {
        if (outcome == JobOutcome::Failed)
          appendLog(tr("the run's history is not shown: %1").arg(error));
        if (!history || history->size() == 0) {
          emit historyLoaded(0);
          return;
        }
        m_curves->addHistory(*history);
        if (m_maxSteps > 0) m_curves->setStepRange(0.0, double(m_maxSteps));
        emit historyLoaded(history->size());
      });
}

void RunView::showCharts() {
  m_charts->show();
  m_curves->show();
}

void RunView::appendLog(const QString& line) {
  m_charts->show();
  m_log->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line);
}

void RunView::showStatus(const QString& text, bool error) {
  m_status->setText(text);
  m_status->setStyleSheet(error ? QStringLiteral("color: #c02020;") : QString());
}

}  // namespace ckpt
