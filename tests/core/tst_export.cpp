// ckptscope-cli export: slim copies that python3-torch loads with every
// model tensor equal to the source's (after the same .to(dtype) in torch),
// checked by tests/python/export_check.py; the refusals; and a cancelled
// copy that leaves nothing behind.
#include <QtTest>

#include "ckpt/format/checkpoint_copy.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "run_process.h"

namespace {

using Run = ckpt::test::ProcessResult;

const QString kDir = QStringLiteral(CKPT_FIXTURE_DIR "/export");
const QString kScript = QStringLiteral(CKPT_SOURCE_DIR "/tests/python/export_check.py");

Run cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, {}, 60000);
}

QByteArray fileBytes(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

QStringList filesIn(const QString& dir) {
  return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System);
}

}  // namespace

class TestExport : public QObject {
  Q_OBJECT

 private slots:
  void exportLoadsInPython_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("out");
    QTest::addColumn<QStringList>("options");
    // The file's size over the source's: an AdamW checkpoint keeps two
    // moments per parameter, so the model alone is about a third.
    QTest::addColumn<double>("minRatio");
    QTest::addColumn<double>("maxRatio");
    QTest::newRow("pt") << "trained.pt"
                        << "slim.pt" << QStringList{} << 0.30 << 0.37;
    QTest::newRow("pt model-only") << "trained.pt"
                                   << "slim.pt" << QStringList{"--model-only"} << 0.30 << 0.37;
    QTest::newRow("pt bf16") << "trained.pt"
                             << "slim.pt" << QStringList{"--dtype", "bf16"} << 0.15 << 0.19;
    QTest::newRow("pt fp16 model-only")
        << "trained.pt"
        << "slim.pt" << QStringList{"--dtype", "fp16", "--model-only"} << 0.15 << 0.19;
    // safetensors has no shared tensors: the tied embedding (a third of
    // the model here) is stored twice.
    QTest::newRow("safetensors by extension")
        << "trained.pt"
        << "slim.safetensors" << QStringList{} << 0.42 << 0.50;
    QTest::newRow("safetensors fp16 by --format")
        << "trained.pt"
        << "slim.safetensors" << QStringList{"--format", "safetensors", "--dtype", "fp16"} << 0.21
        << 0.25;
    QTest::newRow("safetensors bf16 model-only")
        << "trained.pt"
        << "slim.safetensors" << QStringList{"--dtype", "bf16", "--model-only"} << 0.21 << 0.25;
    QTest::newRow("pt fp32 from bf16/fp64 buffers")
        << "trained.pt"
        << "slim.pt" << QStringList{"--dtype", "fp32"} << 0.30 << 0.37;
    // A bare state dict has no optimizer: the copy is as big, and gains the
    // modern_llm layout around it.
    QTest::newRow("bare state dict -> pt") << "state.pt"
                                           << "slim.pt" << QStringList{} << 0.98 << 1.05;
  }
  void exportLoadsInPython() {
    QFETCH(QString, source);
    QFETCH(QString, out);
    QFETCH(QStringList, options);
    QFETCH(double, minRatio);
    QFETCH(double, maxRatio);
    QTemporaryDir tmp;
    const QString target = tmp.filePath(out);
    const Run r = cli(QStringList{"export", kDir + "/" + source, target} + options);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY2(r.out.contains("without optimizer state"), r.out.constData());
    QStringList check{kScript, "check", kDir + "/" + source, target};
    if (const int at = int(options.indexOf("--dtype")); at >= 0)
      check << "--dtype" << options[at + 1];
    if (options.contains("--model-only")) check << "--model-only";
    const Run c = ckpt::test::runProcess(QStringLiteral(CKPT_TORCH_PYTHON), check, {}, 120000);
    QVERIFY2(c.exitCode == 0, (c.out + c.err).constData());
    QVERIFY2(c.out.startsWith("OK "), c.out.constData());
    const int at = int(c.out.indexOf("ratio="));
    QVERIFY(at > 0);
    const double ratio = c.out.mid(at + 6).trimmed().toDouble();
    QVERIFY2(ratio >= minRatio && ratio <= maxRatio, c.out.constData());
    QCOMPARE(filesIn(tmp.path()), QStringList{out});  // no temporary left
  }

  void refusesAnExistingTarget() {
    QTemporaryDir tmp;
    const QString target = tmp.filePath("taken.pt");
    {
      QFile f(target);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("mine");
    }
    const Run r = cli({"export", kDir + "/trained.pt", target});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(target.toUtf8() + ": exists"), r.err.constData());
    QVERIFY2(r.err.contains("never overwrites"), r.err.constData());
    QCOMPARE(fileBytes(target), QByteArray("mine"));
    QCOMPARE(filesIn(tmp.path()), QStringList{"taken.pt"});
  }

  void refusesABadDtypeOrFormat_data() {
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QString>("message");
    QTest::newRow("dtype fp8") << QStringList{"--dtype", "fp8"}
                               << "--dtype takes fp32, bf16 or fp16, not 'fp8'";
    QTest::newRow("dtype missing") << QStringList{"--dtype"} << "--dtype needs";
    QTest::newRow("format onnx") << QStringList{"--format", "onnx"}
                                 << "--format takes pt or safetensors, not 'onnx'";
    QTest::newRow("unknown option") << QStringList{"--fast"} << "unknown option --fast";
  }
  void refusesABadDtypeOrFormat() {
    QFETCH(QStringList, options);
    QFETCH(QString, message);
    QTemporaryDir tmp;
    const Run r =
        cli(QStringList{"export", kDir + "/trained.pt", tmp.filePath("out.pt")} + options);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
    QVERIFY2(r.err.contains("usage: ckptscope-cli export"), r.err.constData());
    QVERIFY(filesIn(tmp.path()).isEmpty());
  }

  // A source that is missing, not a checkpoint, or cut short: exit 1 with a
  // message naming it, and nothing written.
  void refusesAnUnreadableSource_data() {
    QTest::addColumn<QByteArray>("content");  // empty: no file at all
    QTest::newRow("missing") << QByteArray();
    QTest::newRow("not a checkpoint") << QByteArray("hello, not a checkpoint\n");
    QTest::newRow("cut short") << fileBytes(kDir + "/trained.pt").left(300000);
  }
  void refusesAnUnreadableSource() {
    QFETCH(QByteArray, content);
    QTemporaryDir tmp;
    const QString source = tmp.filePath("broken_step5.pt");
    if (!content.isEmpty()) {
      QFile f(source);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(content);
    }
    QDir().mkpath(tmp.filePath("out"));
    const Run r = cli({"export", source, tmp.filePath("out/slim.pt")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(source.toUtf8()), r.err.constData());
    QVERIFY(filesIn(tmp.filePath("out")).isEmpty());
  }

  // Cancelled from the progress callback (as the app's Cancel does): no
  // target, no temporary file.
  void cancelLeavesNothing() {
    const auto source = ckpt::CheckpointFile::open((kDir + "/trained.pt").toStdString());
    QTemporaryDir tmp;
    ckpt::CopyOptions options;
    options.content = ckpt::CopyContent::WithoutOptimizer;
    size_t calls = 0, total = 0;
    options.progress = [&](size_t done, size_t all) {
      ++calls;
      total = all;
      return done < 5;
    };
    const std::string target = tmp.filePath("slim.pt").toStdString();
    const ckpt::CopyResult r = ckpt::copyCheckpoint(*source, target, options);
    QVERIFY(r.cancelled);
    QCOMPARE(calls, size_t(6));  // stopped at the sixth tensor, of many more
    QVERIFY(total > calls);
    QVERIFY(filesIn(tmp.path()).isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestExport)
#include "tst_export.moc"
