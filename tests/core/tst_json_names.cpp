// Names from files are bytes (issue 24): every --json command prints JSON
// that Python's json.loads parses, in which each name that is not UTF-8
// comes back byte for byte under the documented convention (surrogateescape,
// checked by tests/python/json_names.py), with the command's normal exit
// status; a safetensors copy refuses such a name before writing anything;
// diff reports unreadable tensors in one stderr line. Fixtures: json_names.py
// make (hand-built pickles and torch.save archives patched to hold the bytes).
#include <QtTest>

#include "ckpt/format/json_export.h"
#include "ckpt/format/utf8.h"
#include "run_process.h"

namespace {

using Run = ckpt::test::ProcessResult;

const QString kDir = QStringLiteral(CKPT_FIXTURE_DIR "/json_names");
const QString kScript = QStringLiteral(CKPT_SOURCE_DIR "/tests/python/json_names.py");

Run cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, kDir, 60000);
}

// json_names.py `mode` on `file` for `expectCase`: "" when it says OK, else what it says.
QString pythonCheck(const QString& mode, const QString& file, const QString& expectCase) {
  const Run c = ckpt::test::runProcess(QStringLiteral(CKPT_TORCH_PYTHON),
                                       {kScript, mode, file, kDir, expectCase}, {}, 60000);
  if (c.exitCode == 0 && c.out.startsWith("OK")) return {};
  return QString::fromUtf8(c.out + c.err);
}

QStringList filesIn(const QString& dir) {
  return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System);
}

}  // namespace

class TestJsonNames : public QObject {
  Q_OBJECT

 private slots:
  void everyJsonCommand_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("status");
    QTest::addColumn<QString>("expectCase");
    // A plain pickle naming globals that are not UTF-8 and builtins.eval.
    QTest::newRow("scan, dangerous")
        << QStringList{"scan", "globals.pkl", "--json"} << 3 << "globals_scan";
    QTest::newRow("info, globals")
        << QStringList{"info", "globals.pkl", "--json"} << 0 << "globals_info";
    // Tensor names, a metadata key and a metadata string.
    QTest::newRow("info, names") << QStringList{"info", "names.pt", "--json"} << 0 << "names_info";
    QTest::newRow("diff") << QStringList{"diff", "names.pt", "names_b.pt", "--json"} << 0
                          << "names_diff";
    // A run folder whose name is not UTF-8.
    QTest::newRow("ls") << QStringList{"ls", "exp", "--json"} << 0 << "exp_ls";
    QTest::newRow("scan, recursive")
        << QStringList{"scan", "exp", "--recursive", "--json"} << 0 << "exp_scan";
    QTest::newRow("metrics") << QStringList{"metrics", "exp", "--json"} << 0 << "exp_metrics";
    QTest::newRow("runs") << QStringList{"runs", "exp", "--json"} << 0 << "exp_runs";
    // A file whose name is not UTF-8, kept as "not a step checkpoint".
    QTest::newRow("prune") << QStringList{"prune", "prune", "--keep-last", "1", "--json"} << 0
                           << "prune";
  }
  void everyJsonCommand() {
    QFETCH(QStringList, args);
    QFETCH(int, status);
    QFETCH(QString, expectCase);
    const Run r = cli(args);
    QVERIFY2(r.exitCode == status,
             qPrintable(QString("exit %1: %2").arg(r.exitCode).arg(QString::fromUtf8(r.err))));
    QTemporaryDir tmp;
    const QString out = tmp.filePath("out.json");
    {
      QFile f(out);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(r.out);
    }
    const QString problem = pythonCheck("json", out, expectCase);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
  }

  // The convention itself, byte by byte, against hand-written expectations.
  void escapeConvention() {
    std::string out;
    ckpt::utf8::appendJsonString(
        out, std::string_view("a\xff\"\\\n\x01\xc3\xa9\xe2\x82x\xed\xb3\xbf", 14));
    QCOMPARE(QByteArray::fromStdString(out),
             QByteArray("\"a\\udcff\\\"\\\\\\n\\u0001\xc3\xa9\\udce2\\udc82x"
                        "\\udced\\udcb3\\udcbf\""));
    QCOMPARE(QByteArray::fromStdString(ckpt::utf8::printable("w\xff\xfe.\xc3\xa9")),
             QByteArray("w\\xff\\xfe.\xc3\xa9"));
    // The layout nlohmann's dump gives, for a tree it can dump.
    const nlohmann::ordered_json j{{"a", {1, -2, 2.5, nullptr, true}},
                                   {"b", nlohmann::ordered_json::object()},
                                   {"c", nlohmann::ordered_json::array()},
                                   {"d", {{"e", "f\tg"}}},
                                   {"u", uint64_t(1) << 63}};
    for (const int indent : {-1, 0, 1, 2})
      QCOMPARE(QString::fromStdString(ckpt::dumpJson(j, indent)),
               QString::fromStdString(j.dump(indent)));
  }

  // consolidate and export to safetensors: refused before anything is
  // written, naming the name (escaped) and the file.
  void safetensorsRefuses_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("named");
    QTest::newRow("consolidate, tensor name") << QStringList{"consolidate", "state.pt", "OUT"}
                                              << QByteArray("tensor name \"w\\xff\\xfe\"");
    QTest::newRow("export --format, tensor name")
        << QStringList{"export", "state.pt", "OUT", "--format", "safetensors"}
        << QByteArray("tensor name \"w\\xff\\xfe\"");
    // export puts the metadata into __metadata__.
    QTest::newRow("export, metadata key")
        << QStringList{"export", "names.pt", "OUT"} << QByteArray("metadata key \"key\\x80\"");
    QTest::newRow("consolidate --model-only, metadata value")
        << QStringList{"consolidate", "note.pt", "OUT", "--model-only"}
        << QByteArray("the value of metadata \"note\"");
  }
  void safetensorsRefuses() {
    QFETCH(QStringList, args);
    QFETCH(QByteArray, named);
    QTemporaryDir tmp;
    const QString target = tmp.filePath(args.contains("--format") ? "copy" : "copy.safetensors");
    args.replace(int(args.indexOf("OUT")), target);
    const Run r = cli(args);
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY2(r.err.contains(target.toUtf8() + ": "), r.err.constData());
    QVERIFY2(r.err.contains(named), r.err.constData());
    QVERIFY2(r.err.contains("not UTF-8"), r.err.constData());
    QVERIFY(r.out.isEmpty());
    QVERIFY(!QFileInfo::exists(target));
    QCOMPARE(filesIn(tmp.path()), QStringList{});  // no temporary left either
  }

  // Metadata that is not a string goes in as JSON text, escaped the one way.
  void safetensorsMetadataAsJson() {
    QTemporaryDir tmp;
    const QString target = tmp.filePath("nested.safetensors");
    const Run r = cli({"export", "nested.pt", target});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QString problem = pythonCheck("safetensors", target, "nested_safetensors");
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
  }

  // Four unreadable tensors: one stderr line, naming them and the file;
  // --json gives each its error.
  void diffUnreadableInOneLine() {
    for (const bool json : {false, true}) {
      QStringList args{"diff", "unreadable.pt", "plain.pt"};
      if (json) args << "--json";
      const Run r = cli(args);
      QCOMPARE(r.exitCode, 1);
      QVERIFY2(r.err.count('\n') == 1, r.err.constData());
      QVERIFY2(r.err.startsWith("ckptscope-cli: 4 tensors"), r.err.constData());
      QVERIFY2(r.err.contains("unreadable.pt"), r.err.constData());
      for (const char* name : {"t1", "t2", "t3"}) QVERIFY2(r.err.contains(name), r.err.constData());
      QVERIFY2(r.err.contains("+1 more"), r.err.constData());
      if (!json) continue;
      const auto doc = nlohmann::json::parse(r.out.toStdString());
      QStringList withError;
      for (const auto& t : doc["tensors"])
        if (t.contains("error")) withError << QString::fromStdString(t["name"].get<std::string>());
      withError.sort();
      QCOMPARE(withError, (QStringList{"t1", "t2", "t3", "t4"}));
    }
  }
};

QTEST_GUILESS_MAIN(TestJsonNames)
#include "tst_json_names.moc"
