#pragma once

#include <QString>
#include <QStringDecoder>
#include <QWidget>
#include <memory>
#include <string>

#include "backgroundjob.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace ckpt {

// The Generate tab: text from the selected checkpoint's model, the
// reference guide's "inference only" use of a checkpoint. A prompt, max new
// tokens, temperature (0: greedy), top-k (0: all), seed and device; Generate
// runs on a BackgroundJob through the training plugin (ckpt/trainapi/train_backend.h's
// generate(): the sampler of `ckptscope-cli generate`, so the same
// checkpoint, prompt, settings and seed give the same text, token for
// token), and the tokens appear as they come. Stop ends it after the token
// being made; the text so far stays. A file without a model or tokenizer,
// or a missing plugin, is said in the status line. The settings are
// remembered (QSettings "generate/...").
class GeneratePanel : public QWidget {
  Q_OBJECT

 public:
  explicit GeneratePanel(QWidget* parent = nullptr);
  ~GeneratePanel() override;

  // The checkpoint Generate uses (the browser's current one). A running
  // generation goes on with the checkpoint it started from.
  void setCheckpoint(const QString& path);
  [[nodiscard]] QString checkpoint() const { return m_checkpoint; }
  [[nodiscard]] bool isRunning() const { return m_job.isRunning(); }
  // Starts Generate as the button does; false when it cannot start (none
  // selected, already running, an empty prompt).
  bool generate();
  void stop();

  [[nodiscard]] QPlainTextEdit* promptEdit() const { return m_prompt; }
  [[nodiscard]] QSpinBox* maxNewTokensBox() const { return m_maxNewTokens; }
  [[nodiscard]] QDoubleSpinBox* temperatureBox() const { return m_temperature; }
  [[nodiscard]] QSpinBox* topKBox() const { return m_topK; }
  [[nodiscard]] QSpinBox* seedBox() const { return m_seed; }
  [[nodiscard]] QComboBox* deviceBox() const { return m_device; }
  [[nodiscard]] QPushButton* generateButton() const { return m_generate; }
  [[nodiscard]] QPushButton* stopButton() const { return m_stop; }
  // The prompt followed by the completion, as `ckptscope-cli generate` prints them.
  [[nodiscard]] QPlainTextEdit* output() const { return m_output; }
  [[nodiscard]] QLabel* statusLabel() const { return m_status; }
  [[nodiscard]] QProgressBar* progressBar() const { return m_progress; }
  // New tokens of the last (or running) generation.
  [[nodiscard]] int64_t tokensMade() const;

 signals:
  // A generation ended: done, stopped or failed (the status line says which).
  void finished();

 private:
  struct Stream;  // what the worker hands over: the completion's bytes so far

  void updateState();
  void showStream();
  void setStatus(const QString& text, bool error = false);
  void saveSettings() const;

  QString m_checkpoint;
  QLabel* m_source = nullptr;
  QPlainTextEdit* m_prompt = nullptr;
  QSpinBox* m_maxNewTokens = nullptr;
  QDoubleSpinBox* m_temperature = nullptr;
  QSpinBox* m_topK = nullptr;
  QSpinBox* m_seed = nullptr;
  QComboBox* m_device = nullptr;
  QPushButton* m_generate = nullptr;
  QPushButton* m_stop = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_status = nullptr;
  QPlainTextEdit* m_output = nullptr;

  std::shared_ptr<Stream> m_stream;  // the running (or last) generation's
  std::string m_promptBytes;         // its prompt, as sent
  size_t m_shownBytes = 0;           // of m_stream's completion, already in m_output
  bool m_stopping = false;           // Stop was clicked; the worker ends after its token
  QStringDecoder m_decoder{QStringDecoder::Utf8};  // the completion's bytes, as they come
  BackgroundJob<std::string> m_job{this, 50};
};

}  // namespace ckpt
