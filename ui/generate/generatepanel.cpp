#include "generate/generatepanel.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMutex>
#include <QMutexLocker>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QShortcut>
#include <QSpinBox>
#include <QTextCursor>
#include <QVBoxLayout>
#include <algorithm>
#include <atomic>
#include <climits>
#include <stdexcept>

#include "ckpt/trainapi/train_backend.h"
#include "textformat.h"
#include "training/trainbackendloader.h"

namespace ckpt {

// Shared by the worker (writes) and the GUI thread (reads every 50 ms):
// no pointer into a widget crosses threads.
struct GeneratePanel::Stream {
  mutable QMutex mutex;
  std::string completion;  // the pieces' texts joined, as the CLI prints them
  std::atomic<int64_t> tokens{0};
  std::atomic<bool> loaded{false};  // the model is loaded; tokens are being made
  std::string device;               // where it runs, once loaded (under mutex)
  QElapsedTimer clock;              // from the first token (under mutex)

  std::string completionFrom(size_t offset) const {
    const QMutexLocker lock(&mutex);
    return offset < completion.size() ? completion.substr(offset) : std::string();
  }
};

namespace {

const char* const kGroup = "generate/";

QString key(const char* name) {
  return QLatin1String(kGroup) + QLatin1String(name);
}

// What `auto` means in the plugin: CUDA when LibTorch sees a GPU.
std::string deviceText(const TrainBackend& backend, const std::string& asked) {
  if (asked != "auto") return asked;
  return GeneratePanel::tr("%1 (auto)")
      .arg(backend.devices().cudaAvailable ? QStringLiteral("cuda") : QStringLiteral("cpu"))
      .toStdString();
}

}  // namespace

GeneratePanel::GeneratePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  m_source = new QLabel;
  m_source->setWordWrap(true);
  m_source->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_source);

  auto* promptLabel = new QLabel(tr("&Prompt:"));
  layout->addWidget(promptLabel);
  m_prompt = new QPlainTextEdit;
  m_prompt->setTabChangesFocus(true);
  m_prompt->setPlaceholderText(tr("The text the model continues"));
  m_prompt->setFixedHeight(m_prompt->fontMetrics().lineSpacing() * 3 + 16);
  promptLabel->setBuddy(m_prompt);
  layout->addWidget(m_prompt);

  // Two pairs of label and field per row: the tab fits beside the browser at 1000x700.
  auto* settings = new QGridLayout;
  auto addField = [settings](int row, int col, const QString& label, QWidget* field,
                             const QString& tip, int columnSpan = 1) {
    auto* l = new QLabel(label);
    l->setBuddy(field);
    field->setToolTip(tip);
    settings->addWidget(l, row, col * 2);
    settings->addWidget(field, row, col * 2 + 1, 1, columnSpan, Qt::AlignLeft);
  };
  m_maxNewTokens = new QSpinBox;
  m_maxNewTokens->setRange(1, 1'000'000);
  m_maxNewTokens->setValue(64);
  addField(0, 0, tr("&Max new tokens:"), m_maxNewTokens,
           tr("How many tokens to add to the prompt (--max-new-tokens)"));
  m_temperature = new QDoubleSpinBox;
  m_temperature->setRange(0, 100);
  m_temperature->setDecimals(2);
  m_temperature->setSingleStep(0.1);
  m_temperature->setValue(1.0);
  m_temperature->setSpecialValueText(tr("0 (greedy)"));
  addField(0, 1, tr("&Temperature:"), m_temperature,
           tr("Divides the logits before sampling; 0 always takes the likeliest token "
              "(--temperature)"));
  m_topK = new QSpinBox;
  m_topK->setRange(0, 10'000'000);
  m_topK->setSpecialValueText(tr("all"));
  addField(1, 0, tr("Top-&k:"), m_topK,
           tr("Sample among the k likeliest tokens only; \"all\" (0): every token (--top-k)"));
  m_seed = new QSpinBox;
  m_seed->setRange(0, INT_MAX);
  addField(1, 1, tr("S&eed:"), m_seed,
           tr("The sampler's seed: the same seed gives the same text (--seed)"));
  m_device = new QComboBox;
  m_device->addItem(tr("auto (CUDA when there is a GPU)"), QStringLiteral("auto"));
  m_device->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  m_device->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));
  // The device's names are long: its row to itself.
  addField(2, 0, tr("&Device:"), m_device, tr("Where the model runs (--device)"), 3);
  settings->setColumnStretch(4, 1);
  layout->addLayout(settings);

  auto* buttons = new QHBoxLayout;
  m_generate = new QPushButton(tr("&Generate"));
  m_generate->setToolTip(tr("Continue the prompt with the checkpoint's model (Ctrl+Return)"));
  m_stop = new QPushButton(tr("&Stop"));
  m_stop->setToolTip(tr("Stop after the token being made; the text so far stays"));
  m_progress = new QProgressBar;
  m_progress->setFormat(QStringLiteral("%v / %m"));
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setTextVisible(false);  // until the first Generate
  buttons->addWidget(m_generate);
  buttons->addWidget(m_stop);
  buttons->addWidget(m_progress, 1);
  layout->addLayout(buttons);
  m_status = new QLabel;
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_status);

  m_output = new QPlainTextEdit;
  m_output->setReadOnly(true);
  m_output->setPlaceholderText(tr("The prompt and what the model adds to it appear here."));
  layout->addWidget(m_output, 1);

  const QSettings s;
  m_prompt->setPlainText(s.value(key("prompt")).toString());
  m_maxNewTokens->setValue(s.value(key("maxNewTokens"), 64).toInt());
  m_temperature->setValue(s.value(key("temperature"), 1.0).toDouble());
  m_topK->setValue(s.value(key("topK"), 0).toInt());
  m_seed->setValue(s.value(key("seed"), 0).toInt());
  m_device->setCurrentIndex(
      std::max(0, m_device->findData(s.value(key("device"), QStringLiteral("auto")))));

  connect(m_generate, &QPushButton::clicked, this, &GeneratePanel::generate);
  connect(m_stop, &QPushButton::clicked, this, &GeneratePanel::stop);
  connect(m_prompt, &QPlainTextEdit::textChanged, this, &GeneratePanel::updateState);
  auto* run = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this);
  run->setContext(Qt::WidgetWithChildrenShortcut);
  connect(run, &QShortcut::activated, this, &GeneratePanel::generate);
  updateState();
}

GeneratePanel::~GeneratePanel() = default;  // m_job cancels and waits: within one token

void GeneratePanel::setCheckpoint(const QString& path) {
  m_checkpoint = path;
  updateState();
}

int64_t GeneratePanel::tokensMade() const {
  return m_stream ? m_stream->tokens.load() : 0;
}

void GeneratePanel::updateState() {
  const bool running = m_job.isRunning();
  m_source->setText(m_checkpoint.isEmpty()
                        ? tr("Select a checkpoint in the Experiments list: its model continues "
                             "the prompt.")
                        : tr("Checkpoint: %1").arg(QDir::toNativeSeparators(m_checkpoint)));
  m_generate->setEnabled(!running && !m_checkpoint.isEmpty() && !m_prompt->toPlainText().isEmpty());
  m_stop->setEnabled(running);
  for (QWidget* w : std::initializer_list<QWidget*>{m_prompt, m_maxNewTokens, m_temperature, m_topK,
                                                    m_seed, m_device})
    w->setEnabled(!running);
}

void GeneratePanel::setStatus(const QString& text, bool error) {
  m_status->setStyleSheet(error ? QStringLiteral("color: #a00000;") : QString());
  m_status->setText(text);
}

void GeneratePanel::saveSettings() const {
  QSettings s;
  s.setValue(key("prompt"), m_prompt->toPlainText());
  s.setValue(key("maxNewTokens"), m_maxNewTokens->value());
  s.setValue(key("temperature"), m_temperature->value());
  s.setValue(key("topK"), m_topK->value());
  s.setValue(key("seed"), m_seed->value());
  s.setValue(key("device"), m_device->currentData());
}

bool GeneratePanel::generate() {
  if (m_job.isRunning() || m_checkpoint.isEmpty() || m_prompt->toPlainText().isEmpty())
    return false;
  saveSettings();
  GenerateOptions options;
  options.prompt = m_prompt->toPlainText().toStdString();
  options.maxNewTokens = m_maxNewTokens->value();
  options.temperature = m_temperature->value();
  options.topK = m_topK->value();
  options.seed = uint64_t(m_seed->value());
  options.device = m_device->currentData().toString().toStdString();
  const std::string checkpoint = pathToStd(m_checkpoint);

  m_stream = std::make_shared<Stream>();
  m_promptBytes = options.prompt;
  m_shownBytes = 0;
  m_stopping = false;
  m_decoder = QStringDecoder(QStringDecoder::Utf8);
  m_output->setPlainText(QString::fromStdString(options.prompt));
  m_output->moveCursor(QTextCursor::End);
  m_progress->setRange(0, m_maxNewTokens->value());
  m_progress->setValue(0);
  m_progress->setTextVisible(true);
  setStatus(tr("Loading the model of %1...").arg(QFileInfo(m_checkpoint).fileName()));

  m_job.start(
      [checkpoint, options, stream = m_stream](JobProgress& progress) {
        const TrainBackendLoad& loaded = trainBackend();
        if (!loaded.backend)
          throw std::runtime_error(GeneratePanel::tr("Generating needs the training plugin. %1")
                                       .arg(loaded.error)
                                       .toStdString());
        {
          const QMutexLocker lock(&stream->mutex);
          stream->device = deviceText(*loaded.backend, options.device);
        }
        if (progress.cancelled()) return std::string();  // stopped while LibTorch loaded
        return loaded.backend->generate(
            checkpoint, options, [&progress, &stream, &options](const GeneratedToken& t) {
              {
                const QMutexLocker lock(&stream->mutex);
                if (t.index == 0) stream->clock.start();
                stream->completion += t.text;
              }
              stream->loaded = true;
              stream->tokens = t.index + 1;
              return progress.report(uint64_t(t.index + 1), uint64_t(options.maxNewTokens));
            });
      },
      [this, stream = m_stream](JobOutcome outcome, std::optional<std::string>,
                                const QString& error) {
        showStream();
        // The stream decoded as a whole, exactly as the CLI's output reads:
        // a character cut at the end by Stop shows as U+FFFD there too.
        const QString whole = QString::fromStdString(m_promptBytes + stream->completionFrom(0));
        if (m_output->toPlainText() != whole) m_output->setPlainText(whole);
        const int64_t n = stream->tokens.load();
        m_progress->setValue(int(n));
        double seconds = 0;
        std::string device;
        {
          const QMutexLocker lock(&stream->mutex);
          seconds = stream->clock.isValid() ? double(stream->clock.elapsed()) / 1000.0 : 0;
          device = stream->device;
        }
        const QString rate = seconds > 0 && n > 1
                                 ? tr(", %1 tokens/s").arg(double(n - 1) / seconds, 0, 'f', 1)
                                 : QString();
        if (outcome == JobOutcome::Failed)
          setStatus(tr("Cannot generate: %1").arg(error), true);
        else if (outcome == JobOutcome::Cancelled)
          setStatus(tr("Stopped after %1 on %2%3")
                        .arg(countText(uint64_t(n), "token", "tokens"), fromStd(device), rate));
        else
          setStatus(
              tr("%1 on %2%3")
                  .arg(countText(uint64_t(n), "new token", "new tokens"), fromStd(device), rate));
        updateState();
        emit finished();
      },
      [this](const JobProgress&) { showStream(); });
  updateState();
  return true;
}

void GeneratePanel::stop() {
  if (!m_job.isRunning()) return;
  m_job.cancel();
  m_stopping = true;
  setStatus(tr("Stopping..."));
}

// The completion's new bytes, appended as they come (a character cut
// between two tokens waits in the decoder for its last bytes).
void GeneratePanel::showStream() {
  if (!m_stream) return;
  const std::string fresh = m_stream->completionFrom(m_shownBytes);
  m_shownBytes += fresh.size();
  const int64_t n = m_stream->tokens.load();
  if (m_job.isRunning() && m_stream->loaded.load()) {
    m_progress->setValue(int(n));
    if (!m_stopping)
      setStatus(tr("Generating: %1 of %2")
                    .arg(n)
                    .arg(countText(uint64_t(m_progress->maximum()), "new token", "new tokens")));
  }
  if (fresh.empty()) return;
  const QString text = m_decoder.decode(QByteArrayView(fresh.data(), qsizetype(fresh.size())));
  if (text.isEmpty()) return;
  QScrollBar* bar = m_output->verticalScrollBar();
  const bool atEnd = bar->value() >= bar->maximum() - 2;
  QTextCursor c(m_output->document());
  c.movePosition(QTextCursor::End);
  c.insertText(text);
  if (atEnd) bar->setValue(bar->maximum());  // follow the text unless the user scrolled up
}

}  // namespace ckpt
