#pragma once
// Driving the Train panel in tests: the tiny config typed into its form,
// and waiting for a run's end (tst_trainpanel, tst_trainpanel_dist).
#include <QtTest>

#include <QComboBox>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <fstream>

#include "../core/run_outputs.h"
#include "training/configform.h"
#include "training/trainpanel.h"

namespace ckpt::test {

constexpr int kRunTimeoutMs = 240000;

struct Finished {
  QString outputDir, lastCheckpoint;
  bool stopped = false;
};

// Waits for runFinished (or runFailed, which fails the test with its message).
inline bool waitForRun(TrainPanel& panel, Finished* result, QString* failure) {
  QSignalSpy done(&panel, &TrainPanel::runFinished);
  QSignalSpy failed(&panel, &TrainPanel::runFailed);
  QElapsedTimer t;
  t.start();
  while (done.isEmpty() && failed.isEmpty() && t.elapsed() < kRunTimeoutMs) QTest::qWait(20);
  if (!failed.isEmpty()) {
    *failure = failed.front().front().toString();
    return false;
  }
  if (done.isEmpty()) {
    *failure = QStringLiteral("timed out");
    return false;
  }
  result->outputDir = done.front().at(0).toString();
  result->lastCheckpoint = done.front().at(1).toString();
  result->stopped = done.front().at(2).toBool();
  return true;
}

// A Train test's start: its own settings, cleared (the form remembers what
// it was given), and the training backend this build made, unless the
// environment names another.
inline void startTrainTest(const char* name) {
  QCoreApplication::setOrganizationName("CkptScopeTest");
  QCoreApplication::setApplicationName(name);
  QSettings().clear();
  if (qEnvironmentVariableIsEmpty("CKPTSCOPE_TRAIN_BACKEND"))
    qputenv("CKPTSCOPE_TRAIN_BACKEND", CKPT_TRAIN_BACKEND_PATH);
}

// The tiny corpus the Train tests train on: twelve chapters of kText.
inline void writeTinyCorpus(const QString& path) {
  std::ofstream out(path.toStdString());
  for (int i = 0; i < 12; ++i) out << "Chapter " << i << ". " << kText;
}

// tst_trainer's tiny config, typed into the form: on the CPU, two threads.
inline void fillTiny(TrainPanel& panel, const QString& data, const QString& out, int steps) {
  ConfigForm* f = panel.form();
  f->resetToDefaults();
  const QVariantMap values{{"vocab_size", 256},
                           {"d_model", 32},
                           {"n_layers", 2},
                           {"n_heads", 4},
                           {"ffn_hidden_size", 80},
                           {"max_seq_len", 32},
                           {"run_name", "tiny"},
                           {"batch_size", 4},
                           {"micro_batch_size", 2},
                           {"seq_len", 16},
                           {"learning_rate", "0.003"},
                           {"warmup_steps", 2},
                           {"eval_every", 2},
                           {"eval_batches", 2},
                           {"save_every", 2},
                           {"log_every", 1},
                           {"seed", 7},
                           {"mixed_precision", "fp32"},
                           {"max_steps", steps},
                           {"val_fraction", "0.1"}};
  f->setValues(values);
  panel.setMode(TrainPanel::Mode::NewRun);
  panel.dataPathEdit()->setText(data);
  panel.tokenizerBox()->setCurrentText(QStringLiteral("bytes"));
  panel.outputDirEdit()->setText(out);
  panel.deviceBox()->setCurrentIndex(panel.deviceBox()->findData(QStringLiteral("cpu")));
  panel.threadsBox()->setValue(2);
}

}  // namespace ckpt::test
