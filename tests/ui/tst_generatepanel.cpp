// The Generate tab, driven by input events: a checkpoint trained at test
// time by `ckptscope-cli train` clicked in the browser, Checkpoint >
// Generate Text... (Ctrl+G), the prompt and the settings typed, the visible
// Generate button clicked. What the panel shows must be what `ckptscope-cli
// generate` prints for the same checkpoint, prompt, settings and seed,
// character for character (and not what another seed prints). Stop in the
// middle of a long generation stops it, and the text it kept is the CLI's
// for that many tokens. A file without a model says so.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "../core/run_process.h"
#include "generate/generatepanel.h"
#include "gestures.h"
#include "mainwindow.h"
#include "textformat.h"

using namespace ckpt;

namespace {

test::ProcessResult cli(const QStringList& args, const QString& cwd) {
  return test::runProcess(QStringLiteral(CKPT_CLI), args, cwd);
}

// Replaces what a spin box shows with `text`, typed.
void typeInto(QAbstractSpinBox* box, const QString& text) {
  QTest::mouseClick(box, Qt::LeftButton, {}, box->rect().center());
  QTest::keyClick(box, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(box, text);
  QTest::keyClick(box, Qt::Key_Tab);
}

void click(QWidget* w) {
  QVERIFY2(w->isVisible() && w->isEnabled(), qPrintable(w->objectName() + " cannot be clicked"));
  QTest::mouseClick(w, Qt::LeftButton, {}, w->rect().center());
}

}  // namespace

class TestGeneratePanel : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  QString m_checkpoint;  // trained by ckptscope-cli train
  QString m_noModel;     // a checkpoint with metadata and no model

  // The window on the experiments folder, the Generate tab on `checkpoint`
  // through Ctrl+G, the prompt typed.
  void openOn(MainWindow& w, const QString& checkpoint, const QString& prompt) {
    // The folder above the checkpoint's run: runs/.
    QVERIFY(openWindow(w, {QFileInfo(QFileInfo(checkpoint).absolutePath()).absolutePath()}));
    clickRow(w, checkpoint);
    QTest::keyClick(&w, Qt::Key_G, Qt::ControlModifier);
    QCOMPARE(w.tabs()->currentWidget(), w.generatePanel());
    GeneratePanel* panel = w.generatePanel();
    QCOMPARE(panel->checkpoint(), checkpoint);
    QVERIFY(panel->promptEdit()->hasFocus());
    QTest::keyClick(panel->promptEdit(), Qt::Key_A, Qt::ControlModifier);
    QTest::keyClick(panel->promptEdit(), Qt::Key_Delete);
    QTest::keyClicks(panel->promptEdit(), prompt);
    QCOMPARE(panel->promptEdit()->toPlainText(), prompt);
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("CkptScopeTest");
    QCoreApplication::setApplicationName("tst_generatepanel");
    QSettings().clear();
    if (qEnvironmentVariableIsEmpty("CKPTSCOPE_TRAIN_BACKEND"))
      qputenv("CKPTSCOPE_TRAIN_BACKEND", CKPT_TRAIN_BACKEND_PATH);
    m_checkpoint = qEnvironmentVariable("CKPT_GENERATE_CHILD");
    if (!m_checkpoint.isEmpty()) return;  // missingPluginChild's process: the parent's checkpoint
    QVERIFY(m_tmp.isValid());
    const QString d = m_tmp.path();
    {
      std::ofstream corpus((d + "/corpus.txt").toStdString());
      for (int i = 0; i < 60; ++i)
        corpus << "Sing, O goddess, the anger of Achilles son of Peleus, line " << i << ".\n";
      std::ofstream(d.toStdString() + "/run.json") << R"({
        "model": {"vocab_size": 256, "d_model": 32, "n_layers": 1, "n_heads": 4, "ffn_hidden_size": 80, "max_seq_len": 32},
        "training": {"run_name": "tiny", "batch_size": 4, "micro_batch_size": 4, "seq_len": 32, "learning_rate": 0.01,
                     "max_steps": 40, "eval_every": 40, "save_every": 40, "log_every": 10, "mixed_precision": "fp32"},
        "data": {"path": "corpus.txt"}})";
    }
    const auto r = cli({"train", "--config", "run.json", "--out", "runs/tiny"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    m_checkpoint = d + "/runs/tiny/tiny_final.pt";
    QVERIFY(QFile::exists(m_checkpoint));
    // Metadata and an optimizer, no model: written by python3-torch.
    m_noModel = d + "/runs/broken/broken_step3.pt";
    QVERIFY(QDir().mkpath(d + "/runs/broken"));
    const auto py = test::runProcess(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {"-c",
         "import sys, torch; torch.save({'metadata': {'step': 3, 'run_name': 'broken'}, "
         "'optimizer': {'state': {}, 'param_groups': []}, 'step': 3}, sys.argv[1])",
         m_noModel});
    QVERIFY2(py.exitCode == 0, py.err.constData());
  }

  void matchesTheCli_data() {
    QTest::addColumn<QString>("prompt");
    QTest::addColumn<QString>("maxNewTokens");
    QTest::addColumn<QString>("temperature");
    QTest::addColumn<QString>("topK");
    QTest::addColumn<QString>("seed");
    QTest::newRow("top-k 5, temperature 0.8") << "Sing, O"
                                              << "48"
                                              << "0.8"
                                              << "5"
                                              << "7";
    QTest::newRow("greedy") << "the anger"
                            << "30"
                            << "0"
                            << "0"
                            << "0";
    QTest::newRow("every token, temperature 1") << "line 1"
                                                << "40"
                                                << "1"
                                                << "0"
                                                << "123";
  }

  void matchesTheCli() {
    QFETCH(QString, prompt);
    QFETCH(QString, maxNewTokens);
    QFETCH(QString, temperature);
    QFETCH(QString, topK);
    QFETCH(QString, seed);
    MainWindow w;
    openOn(w, m_checkpoint, prompt);
    GeneratePanel* panel = w.generatePanel();
    typeInto(panel->maxNewTokensBox(), maxNewTokens);
    typeInto(panel->temperatureBox(), temperature);
    typeInto(panel->topKBox(), topK);
    typeInto(panel->seedBox(), seed);
    QCOMPARE(panel->maxNewTokensBox()->value(), maxNewTokens.toInt());
    QCOMPARE(panel->temperatureBox()->value(), temperature.toDouble());
    QCOMPARE(panel->topKBox()->value(), topK.toInt());
    QCOMPARE(panel->seedBox()->value(), seed.toInt());
    QSignalSpy finished(panel, &GeneratePanel::finished);
    click(panel->generateButton());
    QVERIFY(panel->isRunning());
    QVERIFY(panel->stopButton()->isEnabled());
    QVERIFY(!panel->generateButton()->isEnabled());
    QVERIFY(finished.wait(kTimeoutMs));
    QVERIFY2(!panel->statusLabel()->text().startsWith("Cannot"),
             qPrintable(panel->statusLabel()->text()));
    QCOMPARE(panel->tokensMade(), maxNewTokens.toLongLong());
    QCOMPARE(panel->progressBar()->value(), maxNewTokens.toInt());
    QVERIFY2(panel->statusLabel()->text().startsWith(maxNewTokens + " new tokens on "),
             qPrintable(panel->statusLabel()->text()));
    const QString shown = panel->output()->toPlainText();
    qInfo().noquote() << panel->statusLabel()->text() << "|" << shown;
    QVERIFY(shown.startsWith(prompt));
    QVERIFY(shown.size() > prompt.size());

    const QStringList args{"generate",         m_checkpoint, "--prompt",      prompt,
                           "--max-new-tokens", maxNewTokens, "--temperature", temperature,
                           "--top-k",          topK};
    const auto r = cli(args + QStringList{"--seed", seed}, m_tmp.path());
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(r.out.endsWith('\n'));
    QCOMPARE(shown, QString::fromUtf8(r.out.chopped(1)));
    if (temperature.toDouble() > 0) {
      // Another seed samples other text: the comparison above can fail.
      const auto other =
          cli(args + QStringList{"--seed", QString::number(seed.toInt() + 1)}, m_tmp.path());
      QVERIFY2(other.exitCode == 0, other.err.constData());
      QVERIFY(QString::fromUtf8(other.out.chopped(1)) != shown);
    }
    QVERIFY(panel->generateButton()->isEnabled());
    QVERIFY(!panel->stopButton()->isEnabled());
  }

  // A long generation, its tokens on screen while it runs, stopped with
  // the Stop button: it ends at once, keeps its text (the CLI's for that
  // many tokens) and adds nothing after. The settings are remembered.
  void stopMidGeneration() {
    MainWindow w;
    const QString prompt = QStringLiteral("Sing");
    openOn(w, m_checkpoint, prompt);
    GeneratePanel* panel = w.generatePanel();
    typeInto(panel->maxNewTokensBox(), "200000");
    typeInto(panel->temperatureBox(), "0.9");
    typeInto(panel->topKBox(), "0");
    typeInto(panel->seedBox(), "5");
    QSignalSpy finished(panel, &GeneratePanel::finished);
    click(panel->generateButton());
    // Streamed: text appears while it still runs.
    QTRY_VERIFY_WITH_TIMEOUT(panel->output()->toPlainText().size() > prompt.size() + 20,
                             kTimeoutMs);
    QVERIFY(panel->isRunning());
    QVERIFY(finished.isEmpty());
    QVERIFY(panel->statusLabel()->text().startsWith("Generating: "));
    click(panel->stopButton());
    QVERIFY(finished.wait(10'000));
    QVERIFY(!panel->isRunning());
    const int64_t made = panel->tokensMade();
    QVERIFY(made > 0 && made < 200000);
    QVERIFY2(panel->statusLabel()->text().startsWith(
                 "Stopped after " + countText(uint64_t(made), "token", "tokens") + " on "),
             qPrintable(panel->statusLabel()->text()));
    const QString kept = panel->output()->toPlainText();
    qInfo().noquote() << panel->statusLabel()->text();
    QTest::qWait(300);
    QCOMPARE(panel->output()->toPlainText(), kept);
    QCOMPARE(panel->tokensMade(), made);
    QVERIFY(panel->generateButton()->isEnabled());

    const auto r = cli({"generate", m_checkpoint, "--prompt", prompt, "--max-new-tokens",
                        QString::number(made), "--temperature", "0.9", "--seed", "5"},
                       m_tmp.path());
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QCOMPARE(kept, QString::fromUtf8(r.out.chopped(1)));

    // Remembered for the next window.
    MainWindow again;
    GeneratePanel* next = again.generatePanel();
    QCOMPARE(next->maxNewTokensBox()->value(), 200000);
    QCOMPARE(next->temperatureBox()->value(), 0.9);
    QCOMPARE(next->seedBox()->value(), 5);
    QCOMPARE(next->promptEdit()->toPlainText(), prompt);
  }

  // A checkpoint without a model: the status line names the file and what
  // is missing; nothing is added to the prompt.
  void noModelIsAClearError() {
    MainWindow w;
    openOn(w, m_noModel, QStringLiteral("Hello"));
    GeneratePanel* panel = w.generatePanel();
    typeInto(panel->maxNewTokensBox(), "8");
    QSignalSpy finished(panel, &GeneratePanel::finished);
    click(panel->generateButton());
    QVERIFY(finished.wait(kTimeoutMs));
    const QString status = panel->statusLabel()->text();
    QVERIFY2(status.startsWith("Cannot generate: ") && status.contains(m_noModel) &&
                 status.contains("no model state"),
             qPrintable(status));
    QCOMPARE(panel->output()->toPlainText(), QStringLiteral("Hello"));
    QCOMPARE(panel->tokensMade(), int64_t(0));
    QVERIFY(panel->generateButton()->isEnabled());
  }

  // Without the plugin: the status line says so and where it looked. The
  // loader keeps its first answer for the process, so this runs in a child
  // process of this test whose CKPTSCOPE_TRAIN_BACKEND names no file.
  void missingPlugin() {
    if (!qEnvironmentVariableIsEmpty("CKPT_GENERATE_CHILD")) QSKIP("the parent's test");
    QProcess child;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("CKPTSCOPE_TRAIN_BACKEND", m_tmp.path() + "/no-such-plugin.so");
    env.insert("CKPT_GENERATE_CHILD", m_checkpoint);
    child.setProcessEnvironment(env);
    child.start(QCoreApplication::applicationFilePath(), {"missingPluginChild"});
    const test::ProcessResult r = test::finishProcess(child, kTimeoutMs);
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    QVERIFY2(r.out.contains("PASS   : TestGeneratePanel::missingPluginChild()"), r.out.constData());
  }
  void missingPluginChild() {
    if (qEnvironmentVariableIsEmpty("CKPT_GENERATE_CHILD")) QSKIP("run by missingPlugin");
    MainWindow w;
    openOn(w, m_checkpoint, QStringLiteral("Sing"));
    GeneratePanel* panel = w.generatePanel();
    QSignalSpy finished(panel, &GeneratePanel::finished);
    click(panel->generateButton());
    QVERIFY(finished.wait(kTimeoutMs));
    const QString status = panel->statusLabel()->text();
    QVERIFY2(status.startsWith("Cannot generate: Generating needs the training plugin.") &&
                 status.contains("no-such-plugin.so does not exist"),
             qPrintable(status));
    QCOMPARE(panel->output()->toPlainText(), QStringLiteral("Sing"));
    QVERIFY(panel->generateButton()->isEnabled());
  }

  // Nothing selected: Generate is disabled and the panel says what to do;
  // Ctrl+G says so in the status bar.
  void nothingSelected() {
    MainWindow w;
    w.resize(1000, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    clickTab(w.tabs(), "Generate");
    GeneratePanel* panel = w.generatePanel();
    QCOMPARE(w.tabs()->currentWidget(), panel);
    QVERIFY(!panel->generateButton()->isEnabled());
    QVERIFY(!panel->stopButton()->isEnabled());
    QVERIFY(visibleChildren(panel).contains(panel->generateButton()));
    QVERIFY(!w.generateSelected());
  }
};

QTEST_MAIN(TestGeneratePanel)
#include "tst_generatepanel.moc"
