// The Train form's checks of a config, offscreen, with the real LibTorch
// plugin: a bad value named in the form with the field it concerns, the
// form laid out as the config's tables, a typed bad value framed in its
// field, missing data named. Nothing is trained. Split from
// tst_trainpanel.cpp.
#include <QtTest>

#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>

#include "../core/json_compare.h"
#include "ckpt/config/config_schema.h"
#include "ckpt/config/run_config.h"
#include "training/configform.h"
#include "training/trainpanel.h"
#include "trainpanel_driver.h"

using namespace ckpt;
using ckpt::test::json;

class TestTrainForm : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  QString m_data;

  QString dir(const QString& name) const { return m_tmp.filePath(name); }

  // tst_trainer's tiny config, typed into the form.
  void fillTiny(TrainPanel& panel, const QString& out, int steps) const {
    ckpt::test::fillTiny(panel, m_data, out, steps);
  }

 private slots:
  void initTestCase() {
    ckpt::test::startTrainTest("tst_trainform");
    QVERIFY(m_tmp.isValid());
    m_data = dir("corpus.txt");
    ckpt::test::writeTinyCorpus(m_data);
  }

  void badConfigNamesTheField_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("message");
    QTest::addColumn<QString>("marked");
    QTest::newRow("ffn too small") << "ffn_hidden_size"
                                   << "32"
                                   << "ffn_hidden_size (32) must exceed d_model (32)"
                                   << "ffn_hidden_size";
    QTest::newRow("heads") << "n_heads"
                           << "3"
                           << "d_model (32) must be divisible by n_heads (3)"
                           << "d_model";
    QTest::newRow("odd head_dim") << "n_heads"
                                  << "32"
                                  << "head_dim (1 = d_model / n_heads) must be even"
                                  << "n_heads";
    QTest::newRow("lr not a number") << "learning_rate"
                                     << "fast"
                                     << "learning_rate: expected a number, got 'fast'"
                                     << "learning_rate";
    QTest::newRow("dropout") << "dropout"
                             << "1.5"
                             << "dropout (1.5) must be in [0, 1)"
                             << "dropout";
    QTest::newRow("batch") << "batch_size"
                           << "5"
                           << "batch_size: (5) must be a multiple of micro_batch_size (2)"
                           << "batch_size";
    QTest::newRow("gqa") << "gqa_groups"
                         << "3"
                         << "gqa_groups (3) must divide n_heads (4)"
                         << "gqa_groups";
    QTest::newRow("seq_len") << "seq_len"
                             << "64"
                             << "seq_len (64) must not exceed max_seq_len (32)"
                             << "seq_len";
    QTest::newRow("run_name") << "run_name"
                              << "a/b"
                              << "run_name: must be a non-empty name without '/'"
                              << "run_name";
    QTest::newRow("moe") << "use_moe"
                         << "true"
                         << "use_moe: MoE layers cannot be trained"
                         << "use_moe";
  }
  void badConfigNamesTheField() {
    QFETCH(QString, key);
    QFETCH(QString, value);
    QFETCH(QString, message);
    QFETCH(QString, marked);
    TrainPanel panel;
    fillTiny(panel, dir("never"), 3);
    QCOMPARE(panel.validationError(), QString());
    QVERIFY(panel.startButton()->isEnabled());
    if (key == "gqa_groups") panel.form()->setValue("use_gqa", true);
    panel.form()->setValue(key, key == "use_moe" ? QVariant(true) : QVariant(value));
    QVERIFY2(panel.validationError().startsWith(message), qPrintable(panel.validationError()));
    QVERIFY(!panel.startButton()->isEnabled());
    QVERIFY2(panel.form()->markedKeys().contains(marked), qPrintable(marked));
    // A spin box keeps its arrows: no style sheet on it, its palette marks it.
    if (!qobject_cast<QLineEdit*>(panel.form()->editor(marked)))
      QVERIFY(panel.form()->editor(marked)->styleSheet().isEmpty());
    QCOMPARE(panel.form()->editor(marked)->toolTip(), panel.validationError());
    QVERIFY(!panel.start());  // Start refuses too, and says why
    QVERIFY(!panel.isRunning());
    QCOMPARE(panel.statusText(), panel.validationError());
    // Fixing it clears the mark.
    fillTiny(panel, dir("never"), 3);
    panel.form()->setValue("use_gqa", false);
    panel.form()->setValue("use_moe", false);
    QCOMPARE(panel.validationError(), QString());
    QVERIFY(panel.form()->editor(marked)->styleSheet().isEmpty());
    QVERIFY(panel.form()->markedKeys().isEmpty());
  }

  // The New run form has exactly the config tables' form fields, in their
  // order, starting at the form's defaults, with the help and rule as
  // tooltips; today's small CPU model and spin-box floors typed in by hand.
  void formIsTheConfigTables() {
    QSettings().remove("training");
    TrainPanel panel;
    ConfigForm* form = panel.form();
    QStringList expected;
    for (const ConfigSection* s :
         {&modelConfigSection(), &trainingConfigSection(), &dataConfigSection()}) {
      for (const ConfigField& f : s->fields) {
        if (!f.inForm) continue;
        const QString key = QString::fromStdString(f.name);
        expected << key;
        QWidget* editor = form->editor(key);
        QVERIFY2(editor, qPrintable(key));
        QCOMPARE(editor->toolTip(), QString::fromStdString(f.describe()));
        const QVariant v = form->value(key);
        const json& start = f.formDefault;
        if (auto* spin = qobject_cast<QSpinBox*>(editor)) {
          QCOMPARE(spin->value(), start.get<int>());
          QCOMPARE(spin->minimum(), int(f.formLowest()));
        } else if (start.is_boolean()) {
          QCOMPARE(v.toBool(), start.get<bool>());
        } else if (start.is_number()) {
          QCOMPARE(QLocale::c().toDouble(v.toString()), start.get<double>());
        } else if (start.is_string()) {
          QCOMPARE(v.toString(), QString::fromStdString(start.get<std::string>()));
        } else {
          QVERIFY2(start.is_null() && v.toString().isEmpty(), qPrintable(key));  // None
        }
      }
    }
    QCOMPARE(form->keys(), expected);
    QCOMPARE(form->keys().size(), 20 + 20 + 2);
    // The form's small model and its floors, as the panel has always had them.
    const std::map<QString, std::pair<int, int>> spins{{"vocab_size", {256, 1}},
                                                       {"d_model", {128, 1}},
                                                       {"n_layers", {4, 1}},
                                                       {"n_heads", {4, 1}},
                                                       {"ffn_hidden_size", {512, 1}},
                                                       {"max_seq_len", {256, 1}},
                                                       {"num_attention_sinks", {2, 0}},
                                                       {"max_steps", {1000, 1}},
                                                       {"batch_size", {8, 1}},
                                                       {"micro_batch_size", {8, 1}},
                                                       {"seq_len", {0, 0}},
                                                       {"warmup_steps", {100, 0}},
                                                       {"eval_every", {100, 0}},
                                                       {"eval_batches", {8, 1}},
                                                       {"save_every", {500, 0}},
                                                       {"keep_last", {0, 0}},
                                                       {"log_every", {10, 1}},
                                                       {"seed", {1337, 0}}};
    for (const auto& [key, want] : spins) {
      auto* spin = qobject_cast<QSpinBox*>(form->editor(key));
      QVERIFY2(spin, qPrintable(key));
      QCOMPARE(std::make_pair(spin->value(), spin->minimum()), want);
    }
    QCOMPARE(form->value("learning_rate").toString(),
             QStringLiteral("3e-04"));  // as it always read
    QCOMPARE(form->value("rmsnorm_eps").toString(), QStringLiteral("1e-05"));
    QCOMPARE(form->editor("learning_rate")->toolTip(), QStringLiteral("Peak learning rate (> 0)"));
  }

  // A value typed into a number field that its bound refuses frames that
  // field, with the error as its tooltip; typing a good one clears it.
  void typedBadValueFramesTheField_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("bad");
    for (const ConfigSection* s :
         {&modelConfigSection(), &trainingConfigSection(), &dataConfigSection()}) {
      for (const ConfigField& f : s->fields) {
        if (!f.inForm || !f.minimum ||
            (f.type != FieldType::Float && f.type != FieldType::OptionalFloat))
          continue;
        const double bad = f.below ? *f.below : f.exclusive ? *f.minimum : *f.minimum - 0.5;
        QTest::newRow(f.name.c_str())
            << QString::fromStdString(f.name) << QLocale::c().toString(bad);
      }
    }
  }
  void typedBadValueFramesTheField() {
    QFETCH(QString, key);
    QFETCH(QString, bad);
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    fillTiny(panel, dir("never"), 3);
    QCOMPARE(panel.validationError(), QString());
    auto* edit = qobject_cast<QLineEdit*>(panel.form()->editor(key));
    QVERIFY(edit);
    const QString before = edit->text();
    edit->setFocus();
    QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(edit, bad);
    QCOMPARE(edit->text(), bad);
    QVERIFY2(panel.validationError().startsWith(key), qPrintable(panel.validationError()));
    QCOMPARE(panel.form()->markedKeys(), QStringList{key});
    QVERIFY(!edit->styleSheet().isEmpty());
    QCOMPARE(edit->toolTip(), panel.validationError());
    QVERIFY(!panel.startButton()->isEnabled());
    QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(edit, before.isEmpty() ? QStringLiteral("0.5") : before);
    QCOMPARE(panel.validationError(), QString());
    QVERIFY(panel.form()->markedKeys().isEmpty());
    QVERIFY(edit->styleSheet().isEmpty());
  }

  // A fine-tune's data belongs to the machine of its checkpoint: a path on a
  // host never comes back for a checkpoint here or on another host, nor the
  // reverse, and each comes back for its machine, also after a restart.
  void finetuneDataPerMachine() {
    QSettings().remove("finetune");
    const QString onHost = "ssh://me@cluster:2222/runs/tiny/tiny_step100.pt";
    const QString onOtherHost = "other:/runs/tiny/tiny_step100.pt";
    const QString here = dir("tiny_step100.pt");
    const QString hostData = "/scratch/data/sft.txt";
    {
      TrainPanel panel;
      QLineEdit* data = panel.finetuneDataEdit();
      panel.prepareFinetune(here);
      data->clear();
      QTest::keyClicks(data, m_data);
      panel.prepareFinetune(onHost);
      QCOMPARE(data->text(), QString());  // not this machine's path
      QTest::keyClicks(data, hostData);
      panel.prepareFinetune(onOtherHost);
      QCOMPARE(data->text(), QString());
      panel.prepareFinetune(here);
      QCOMPARE(data->text(), m_data);
      panel.prepareFinetune("ssh://me@cluster:2222/runs/tiny/tiny_step200.pt");
      QCOMPARE(data->text(), hostData);  // the same host, another checkpoint
      panel.prepareFinetune(here);
    }  // the panel saves its settings as the app quits
    TrainPanel again;
    QCOMPARE(again.finetuneDataEdit()->text(), m_data);
    again.prepareFinetune(onHost);
    QCOMPARE(again.finetuneDataEdit()->text(), hostData);
    again.prepareFinetune(onOtherHost);
    QCOMPARE(again.finetuneDataEdit()->text(), QString());
  }

  void missingDataIsNamed() {
    TrainPanel panel;
    fillTiny(panel, dir("never"), 3);
    panel.dataPathEdit()->setText(dir("no/such/corpus.txt"));
    QVERIFY2(panel.validationError().startsWith("path: ") &&
                 panel.validationError().contains("does not exist"),
             qPrintable(panel.validationError()));
    QVERIFY(!panel.dataPathEdit()->styleSheet().isEmpty());
  }
};

QTEST_MAIN(TestTrainForm)
#include "tst_trainform.moc"
