// The reader against files written by python3-torch: every tensor's
// descriptor and values, the whole value tree, and the checkpoint view, each
// compared with what torch itself saw (tests/python/make_fixtures.py).
#include <QtTest>

#include <cmath>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/json_text.h"
#include "ckpt/format/tensor_data.h"
#include "json_compare.h"

using namespace ckpt;
using ckpt::test::json;

namespace {

const json& manifest() {
  static const json m = ckpt::test::readJsonFile(std::string(CKPT_FIXTURE_DIR) + "/manifest.json");
  return m;
}

const json& fixture(const QString& file) {
  for (const json& f : manifest()["fixtures"])
    if (f["file"].get<std::string>() == file.toStdString()) return f;
  throw std::runtime_error("no fixture " + file.toStdString());
}

struct Sums {
  double sum = 0, wsum = 0, sumImag = 0, wsumImag = 0;
  uint64_t nan = 0, posinf = 0, neginf = 0;
};

Sums checksum(const TensorData& data) {
  Sums s;
  const bool complex = dtypeIsComplex(data.info().dtype);
  for (uint64_t i = 0; i < data.numel(); ++i) {
    const std::complex<double> c =
        complex ? data.complexAt(i) : std::complex<double>(data.at(i), 0.0);
    const double w = double(i % 7 + 1);
    if (std::isnan(c.real()))
      ++s.nan;
    else if (std::isinf(c.real()))
      (c.real() > 0 ? s.posinf : s.neginf)++;
    else {
      s.sum += c.real();
      s.wsum += c.real() * w;
    }
    if (complex && std::isfinite(c.imag())) {
      s.sumImag += c.imag();
      s.wsumImag += c.imag() * w;
    }
  }
  return s;
}

// The same sums of the real parts through the bulk path, in odd-sized
// chunks so that chunk boundaries fall everywhere.
Sums bulkChecksum(const TensorData& data) {
  Sums s;
  double buf[37];
  for (uint64_t first = 0; first < data.numel();) {
    const size_t n = data.read(first, 37, buf);
    if (n == 0) break;
    for (size_t k = 0; k < n; ++k) {
      const double v = buf[k], w = double((first + k) % 7 + 1);
      if (std::isnan(v))
        ++s.nan;
      else if (std::isinf(v))
        (v > 0 ? s.posinf : s.neginf)++;
      else {
        s.sum += v;
        s.wsum += v * w;
      }
    }
    first += n;
  }
  return s;
}

bool close(double expected, double actual, double sumAbs) {
  return std::fabs(expected - actual) <= 1e-12 * 7 * sumAbs + 1e-300;
}

}  // namespace

class TestReader : public QObject {
  Q_OBJECT

 private slots:
  void fixtures_data() {
    QTest::addColumn<QString>("file");
    for (const json& f : manifest()["fixtures"]) {
      const std::string name = f["file"].get<std::string>();
      QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
    QVERIFY(manifest()["fixtures"].size() >= 20);
  }

  // Format, tree, and every tensor's descriptor and values.
  void fixtures() {
    QFETCH(QString, file);
    const json& fx = fixture(file);
    const std::string path = std::string(CKPT_FIXTURE_DIR) + "/" + file.toStdString();
    std::unique_ptr<CheckpointFile> ck;
    try {
      ck = CheckpointFile::open(path);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QCOMPARE(std::string(formatName(ck->format())), fx["format"].get<std::string>());

    const std::string treeDiff = ckpt::test::compareJson(fx["tree"], valueToJson(ck->root()));
    QVERIFY2(treeDiff.empty(), treeDiff.c_str());
    // The tree as text, written with no DOM between (what info --json
    // prints), reads back as the same tree.
    std::string text;
    appendValueJson(text, ck->root());
    const std::string textDiff = ckpt::test::compareJson(fx["tree"], parseJsonText(text));
    QVERIFY2(textDiff.empty(), ("text: " + textDiff).c_str());
    // info --json's layout: the tree kept as text is laid out as nlohmann
    // lays out the same document built as a DOM.
    json doc = toJson(*ck);
    json dom = doc;
    dom["tree"] = valueToJson(ck->root());
    QCOMPARE(dumpJson(doc, 2), dumpJson(dom, 2));
    QCOMPARE(dumpJson(doc), dumpJson(dom));
    if (text.find("\\udc") == std::string::npos) {  // nlohmann's dump() refuses other bytes
      QCOMPARE(dumpJson(doc, 2), dom.dump(2));
      QCOMPARE(dumpJson(doc), dom.dump());
    }

    const json& want = fx["tensors"];
    const auto& tensors = ck->tensors();
    QCOMPARE(tensors.size(), want.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorInfo& t = tensors[i];
      const json& w = want[i];
      const std::string where =
          file.toStdString() + " tensor " + std::to_string(i) + " " + joinPath(t.path);
      const std::string pathDiff = ckpt::test::compareJson(w["path"], pathToJson(t.path));
      QVERIFY2(pathDiff.empty(), (where + ": " + pathDiff).c_str());
      QVERIFY2(std::string(dtypeName(t.dtype)) == w["dtype"].get<std::string>(), where.c_str());
      QVERIFY2(t.shape == w["shape"].get<std::vector<int64_t>>(), where.c_str());
      QVERIFY2(t.stride == w["stride"].get<std::vector<int64_t>>(), where.c_str());
      QVERIFY2(t.storageOffset == w["storage_offset"].get<int64_t>(), where.c_str());
      QVERIFY2(t.requiresGrad == w["requires_grad"].get<bool>(), where.c_str());
      QVERIFY2(t.isParameter == w["is_parameter"].get<bool>(), where.c_str());
      QVERIFY2(t.isMeta == w["meta"].get<bool>(), where.c_str());
      QVERIFY2(t.numel() == w["numel"].get<uint64_t>(), where.c_str());
      QVERIFY2(t.error.empty(), (where + ": " + t.error).c_str());
      if (w["storage"].is_null()) {
        QVERIFY2(t.storage < 0, where.c_str());
        continue;
      }
      QVERIFY2(t.storage >= 0, where.c_str());
      const StorageInfo& s = ck->storages()[size_t(t.storage)];
      QVERIFY2(s.key == w["storage"].get<std::string>(), (where + ": storage " + s.key).c_str());
      QVERIFY2(s.numel == w["storage_numel"].get<uint64_t>(), where.c_str());

      const TensorData data = ck->tensorData(i);
      const Sums got = checksum(data);
      const double sumAbs = w["sum_abs"].get<double>();
      QVERIFY2(close(w["sum"].get<double>(), got.sum, sumAbs),
               (where + ": sum " + std::to_string(got.sum) + " vs " + w["sum"].dump()).c_str());
      QVERIFY2(close(w["wsum"].get<double>(), got.wsum, sumAbs),
               (where + ": weighted sum " + std::to_string(got.wsum) + " vs " + w["wsum"].dump())
                   .c_str());
      QVERIFY2(got.nan == w["nan"].get<uint64_t>(), (where + ": NaN count").c_str());
      QVERIFY2(got.posinf == w["posinf"].get<uint64_t>(), (where + ": +inf count").c_str());
      QVERIFY2(got.neginf == w["neginf"].get<uint64_t>(), (where + ": -inf count").c_str());
      const Sums bulk = bulkChecksum(data);
      QVERIFY2(
          close(w["sum"].get<double>(), bulk.sum, sumAbs),
          (where + ": bulk sum " + std::to_string(bulk.sum) + " vs " + w["sum"].dump()).c_str());
      QVERIFY2(close(w["wsum"].get<double>(), bulk.wsum, sumAbs),
               (where + ": bulk weighted sum").c_str());
      QVERIFY2(bulk.nan == got.nan && bulk.posinf == got.posinf && bulk.neginf == got.neginf,
               (where + ": bulk NaN/inf counts").c_str());
      if (w.contains("sum_imag")) {
        QVERIFY2(close(w["sum_imag"].get<double>(), got.sumImag, sumAbs),
                 (where + ": imaginary sum").c_str());
        QVERIFY2(close(w["wsum_imag"].get<double>(), got.wsumImag, sumAbs),
                 (where + ": imaginary weighted sum").c_str());
      }
      if (w.contains("qscale")) {
        QVERIFY2(t.qscale == w["qscale"].get<double>(), where.c_str());
        QVERIFY2(t.qzeroPoint == w["qzero_point"].get<int64_t>(), where.c_str());
      }
    }
    // An intact file verifies clean.
    const auto problems = ck->verify();
    QVERIFY2(problems.empty(), problems.empty() ? "" : problems.front().c_str());
  }

  // step / loss / run / stage, model keys and the optimizer's names.
  void checkpointView_data() {
    QTest::addColumn<QString>("file");
    for (const json& f : manifest()["fixtures"])
      if (f.contains("checkpoint")) {
        const std::string name = f["file"].get<std::string>();
        QTest::newRow(name.c_str()) << QString::fromStdString(name);
      }
  }
  void checkpointView() {
    QFETCH(QString, file);
    const json& want = fixture(file)["checkpoint"];
    const auto ck = CheckpointFile::open(std::string(CKPT_FIXTURE_DIR) + "/" + file.toStdString());
    const CheckpointView view(*ck);
    auto optInt = [](const json& j) {
      return j.is_null() ? std::optional<int64_t>() : std::optional<int64_t>(j.get<int64_t>());
    };
    QCOMPARE(view.step(), optInt(want["step"]));
    if (want["loss"].is_null())
      QVERIFY(!view.loss());
    else
      QCOMPARE(view.loss().value_or(-1), want["loss"].get<double>());
    if (want["run"].is_null())
      QVERIFY(!view.run());
    else
      QCOMPARE(view.run().value_or(""), want["run"].get<std::string>());
    if (want["stage"].is_null())
      QVERIFY(!view.stage());
    else
      QCOMPARE(view.stage().value_or(""), want["stage"].get<std::string>());

    std::vector<std::string> keys;
    for (const StateEntry& e : view.entries()) keys.push_back(e.name);
    QCOMPARE(keys, want["model_keys"].get<std::vector<std::string>>());

    if (want.contains("optimizer_params") && !want["optimizer_params"].is_null()) {
      const json& names = want["optimizer_params"];
      QCOMPARE(view.optimizerParams().size(), names.size());
      // A moment whose shape is not its parameter's is a problem, as many
      // as Python counts (misc/optimizer_swapped.pt has two).
      size_t mapped = 0;
      for (const OptimizerParam& p : view.optimizerParams()) {
        if (p.problem.empty()) ++mapped;
        QCOMPARE(p.name, names[std::to_string(p.index)].get<std::string>());
        // exp_avg has the shape of the parameter it belongs to.
        QVERIFY(p.expAvg >= 0 && p.expAvgSq >= 0);
      }
      if (want.contains("optimizer_mapped"))
        QCOMPARE(mapped, want["optimizer_mapped"].get<size_t>());
      else
        QCOMPARE(mapped, view.optimizerParams().size());
    } else {
      QVERIFY(view.optimizerParams().empty());
    }
  }

  // Tied weights: lm_head.weight shares token_embed.weight's bytes.
  void tiedWeights() {
    const auto ck =
        CheckpointFile::open(std::string(CKPT_FIXTURE_DIR) + "/runs/tiny/tiny_step100.pt");
    const CheckpointView view(*ck);
    const auto& entries = view.entries();
    auto find = [&](const std::string& n) {
      for (size_t i = 0; i < entries.size(); ++i)
        if (entries[i].name == n) return int(i);
      return -1;
    };
    const int embed = find("token_embed.weight"), head = find("lm_head.weight");
    QVERIFY(embed >= 0 && head >= 0);
    QCOMPARE(entries[size_t(head)].tiedTo, embed);
    QCOMPARE(entries[size_t(embed)].tiedTo, -1);
    const StorageInfo& s =
        ck->storages()[size_t(ck->tensors()[size_t(entries[size_t(head)].tensor)].storage)];
    QVERIFY(s.useCount >= 2);
  }

  // ReadOptions::phases (for the benchmark's breakdown): a zip fills every
  // phase, a legacy file only those it has; the tables come out the same.
  void openPhases() {
    ckpt::OpenPhases phases;
    phases.directory = 99;  // open() starts from zero
    ckpt::ReadOptions options;
    options.phases = &phases;
    const std::string zip = std::string(CKPT_FIXTURE_DIR) + "/runs/tiny/tiny_step100.pt";
    const auto timed = CheckpointFile::open(zip, options);
    const auto plain = CheckpointFile::open(zip);
    QCOMPARE(timed->tensors().size(), plain->tensors().size());
    for (double t : {phases.sniff, phases.directory, phases.pickleRead, phases.parse,
                     phases.records, phases.finish})
      QVERIFY(t > 0 && t < 10);
    const auto legacy =
        CheckpointFile::open(std::string(CKPT_FIXTURE_DIR) + "/legacy_state.pt", options);
    QVERIFY(!legacy->tensors().empty());
    QCOMPARE(phases.directory, 0.0);
    QCOMPARE(phases.pickleRead, 0.0);
    QCOMPARE(phases.records, 0.0);
    QVERIFY(phases.sniff > 0 && phases.parse > 0 && phases.finish > 0);
  }
};

QTEST_GUILESS_MAIN(TestReader)
#include "tst_reader.moc"
