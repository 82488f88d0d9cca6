#pragma once

#include <QScrollArea>

#include "ckpt/config/run_config.h"

class QComboBox;
class QLineEdit;
class QSettings;

namespace ckpt {

class ConfigForm;

// The Train panel's "New run" page: the model and training fields (made
// from the config's field tables), the data, the tokenizer and the output
// directory. It scrolls down, never sideways: the panel gives the form one
// column when two do not fit.
class NewRunPage : public QScrollArea {
  Q_OBJECT

 public:
  explicit NewRunPage(QWidget* parent = nullptr);

  [[nodiscard]] ConfigForm* form() const { return m_form; }
  [[nodiscard]] QLineEdit* dataPathEdit() const { return m_dataPath; }
  [[nodiscard]] QComboBox* tokenizerBox() const { return m_tokenizer; }
  [[nodiscard]] QLineEdit* outputDirEdit() const { return m_outputDir; }

  // The run the page describes, on `device` ("auto", "cpu", "cuda"). Throws
  // ConfigError naming the field(s) when a value is wrong, or when the
  // output directory already holds this run's files.
  [[nodiscard]] RunConfig config(const QString& device) const;

  void saveSettings(QSettings& settings) const;
  void restoreSettings(QSettings& settings);

 signals:
  void changed();  // a value was edited

 private:
  ConfigForm* m_form = nullptr;
  QLineEdit* m_dataPath = nullptr;
  QComboBox* m_tokenizer = nullptr;
  QLineEdit* m_outputDir = nullptr;
};

}  // namespace ckpt
