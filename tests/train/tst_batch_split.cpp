// The batch numbers of RUN.json (batch_size = world_size x micro_batch_size
// x gradient_accumulation_steps) for every combination of what is given (in
// the file, by key=value, in a checkpoint's config) and the world a run gets:
// what was given is never replaced; a number not given follows; given ones
// that contradict each other for the world at hand are a ConfigError of
// Kind::BatchSplit naming them all; a given world_size that is not the run's
// changes the number world_adapts names, and says so. Every expected number
// below is worked out by hand from that rule. No LibTorch.
#include <QtTest>

#include "ckpt/config/run_config.h"
#include "config_test_util.h"

using namespace ckpt;
using json = nlohmann::ordered_json;
using ckpt::test::Fields;
using ckpt::test::smallModel;
using Strings = std::vector<std::string>;

namespace {

// RUN.json with this "training" section, then the key=value overrides.
RunConfig configOf(const std::string& training, const Strings& overrides) {
  RunConfig c =
      RunConfig::fromJson(json{{"model", smallModel()}, {"training", json::parse(training)}});
  for (const std::string& o : overrides) applyOverride(c, o);
  return c;
}

struct Outcome {
  bool refused = false;
  std::string message;  // the error, or the note adaptToWorld returned
  Fields fields;
  ConfigError::Kind kind = ConfigError::Kind::Invalid;
  TrainingConfig training;
};

Outcome launch(const std::string& training, const Strings& overrides, int64_t world) {
  Outcome o;
  try {
    RunConfig c = configOf(training, overrides);
    o.message = c.training.adaptToWorld(world);
    c.training.validate();
    o.training = c.training;
  } catch (const ConfigError& e) {
    o.refused = true;
    o.message = e.what();
    o.fields = e.fields();
    o.kind = e.kind();
  }
  return o;
}

const char* const kBatchKeys[] = {"batch_size", "micro_batch_size", "gradient_accumulation_steps",
                                  "world_size"};

int64_t valueOf(const TrainingConfig& t, const std::string& key) {
  if (key == "batch_size") return t.batchSize;
  if (key == "micro_batch_size") return t.microBatchSize;
  if (key == "gradient_accumulation_steps") return t.gradientAccumulationSteps;
  return t.worldSize;
}

}  // namespace

class TestBatchSplit : public QObject {
  Q_OBJECT

 private slots:
  void splitForTheRunsWorld_data() {
    QTest::addColumn<std::string>("training");
    QTest::addColumn<Strings>("overrides");
    QTest::addColumn<qlonglong>("world");
    // The numbers the run trains with (batch, micro, accumulation); none when refused.
    QTest::addColumn<qlonglong>("batch");
    QTest::addColumn<qlonglong>("micro");
    QTest::addColumn<qlonglong>("accumulation");
    // Refused: the fields named and a part of the message. Else the note ("": none).
    QTest::addColumn<Fields>("fields");
    QTest::addColumn<std::string>("message");
    const Fields all{"batch_size", "micro_batch_size", "gradient_accumulation_steps", "world_size"};
    auto ok = [](const char* tag, const char* training, Strings overrides, int world, int b, int m,
                 int a, const char* note = "") {
      QTest::newRow(tag) << std::string(training) << overrides << qlonglong(world) << qlonglong(b)
                         << qlonglong(m) << qlonglong(a) << Fields{} << std::string(note);
    };
    auto refused = [](const char* tag, const char* training, Strings overrides, int world,
                      Fields fields, const char* message) {
      QTest::newRow(tag) << std::string(training) << overrides << qlonglong(world) << qlonglong(0)
                         << qlonglong(0) << qlonglong(0) << fields << std::string(message);
    };
    // The issue's file: a global batch of 4 for 2 ranks of 2 x 1.
    const char* global4 =
        R"({"batch_size": 4, "micro_batch_size": 2, "gradient_accumulation_steps": 1})";
    ok("all three, 2 ranks", global4, {}, 2, 4, 2, 1);
    refused("all three, 1 rank", global4, {}, 1, all,
            "batch_size: (4) must equal world_size (1) x micro_batch_size (2) x "
            "gradient_accumulation_steps (1) = 2 in this run of 1 rank (batch_size counts the "
            "sequences of all ranks; the three fit 2 ranks)");
    refused("all three, 4 ranks", global4, {}, 4, all,
            "(4) must equal world_size (4) x micro_batch_size (2) x gradient_accumulation_steps "
            "(1) = 8 in this run of 4 ranks");
    const char* accum2 =
        R"({"batch_size": 4, "micro_batch_size": 2, "gradient_accumulation_steps": 2})";
    ok("accumulating, 1 rank", accum2, {}, 1, 4, 2, 2);
    refused("accumulating, 2 ranks", accum2, {}, 2, all,
            "(4) must equal world_size (2) x micro_batch_size (2) x gradient_accumulation_steps "
            "(2) = 8 in this run of 2 ranks (batch_size counts the sequences of all ranks; the "
            "three fit 1 rank)");
    // No world at all fits: refused as the file is read, whatever the launch.
    refused("all three, no world fits",
            R"({"batch_size": 5, "micro_batch_size": 2, "gradient_accumulation_steps": 1})", {}, 1,
            {"batch_size", "micro_batch_size", "gradient_accumulation_steps"},
            "batch_size: (5) must be a multiple of micro_batch_size (2) x "
            "gradient_accumulation_steps (1) = 2");
    // Two given: the third follows for the run's world.
    const char* bm = R"({"batch_size": 4, "micro_batch_size": 2})";
    ok("batch + micro, 1 rank", bm, {}, 1, 4, 2, 2);
    ok("batch + micro, 2 ranks", bm, {}, 2, 4, 2, 1);
    refused("batch + micro, 3 ranks", bm, {}, 3, {"batch_size", "micro_batch_size", "world_size"},
            "batch_size: (4) cannot be split over 3 ranks: it must be a multiple of world_size (3) "
            "x micro_batch_size (2) = 6");
    const char* ba = R"({"batch_size": 8, "gradient_accumulation_steps": 2})";
    ok("batch + accumulation, 1 rank", ba, {}, 1, 8, 4, 2);
    ok("batch + accumulation, 4 ranks", ba, {}, 4, 8, 1, 2);
    refused("batch + accumulation, 8 ranks", ba, {}, 8,
            {"batch_size", "gradient_accumulation_steps", "world_size"},
            "(8) cannot be split over 8 ranks: it must be a multiple of world_size (8) x "
            "gradient_accumulation_steps (2) = 16");
    const char* ma = R"({"micro_batch_size": 2, "gradient_accumulation_steps": 3})";
    ok("micro + accumulation, 1 rank", ma, {}, 1, 6, 2, 3);
    ok("micro + accumulation, 2 ranks", ma, {}, 2, 12, 2, 3);
    // One given: the defaults (micro 8, accumulation 1) fill the rest.
    ok("batch alone, 2 ranks", R"({"batch_size": 6})", {}, 2, 6, 3, 1);
    refused("batch alone, 4 ranks", R"({"batch_size": 6})", {}, 4, {"batch_size", "world_size"},
            "(6) cannot be split over 4 ranks: it must be a multiple of world_size (4)");
    ok("micro alone, 2 ranks", R"({"micro_batch_size": 2})", {}, 2, 4, 2, 1);
    ok("accumulation alone, 2 ranks", R"({"gradient_accumulation_steps": 2})", {}, 2, 32, 8, 2);
    ok("nothing given, 3 ranks", "{}", {}, 3, 24, 8, 1);
    // A product past int64 is refused, not wrapped round.
    refused("too large",
            R"({"micro_batch_size": 4611686018427387904, "gradient_accumulation_steps": 2})", {}, 1,
            all,
            "batch_size: the product of world_size, micro_batch_size and "
            "gradient_accumulation_steps (4611686018427387904 x 2) is too large");
    refused("too large for the world",
            R"({"micro_batch_size": 2305843009213693952, "gradient_accumulation_steps": 2})", {}, 2,
            all, "(2 x 4611686018427387904) is too large");
    // world_adapts is about a given world_size only: batch_size given, it stays.
    ok("world_adapts without world_size",
       R"({"batch_size": 8, "micro_batch_size": 4, "world_adapts": "batch_size"})", {}, 2, 8, 4, 1);
    // A given world_size is what the numbers are for.
    const char* for2 =
        R"({"batch_size": 4, "micro_batch_size": 2, "gradient_accumulation_steps": 1, "world_size": 2})";
    ok("world_size given, that world", for2, {}, 2, 4, 2, 1);
    ok("world_size given, another world", for2, {}, 1, 4, 2, 2,
       "world_size 2 in the config, 1 in this run: gradient_accumulation_steps 1 -> 2 "
       "(world_adapts), batch_size stays 4");
    ok("world_size given, world_adapts batch_size",
       R"({"batch_size": 4, "micro_batch_size": 2, "gradient_accumulation_steps": 1, "world_size": 2, "world_adapts": "batch_size"})",
       {}, 1, 2, 2, 1,
       "world_size 2 in the config, 1 in this run: batch_size 4 -> 2 (world_adapts), "
       "gradient_accumulation_steps stays 1");
    refused("world_size given, no split for the run's",
            R"({"batch_size": 4, "micro_batch_size": 2, "world_size": 2})", {}, 3,
            {"batch_size", "micro_batch_size", "world_size"},
            "(4) cannot be split over 3 ranks: it must be a multiple of world_size (3) x "
            "micro_batch_size (2) = 6; change batch_size or micro_batch_size, or set world_adapts "
            "to batch_size");
    refused(
        "world_size given, contradicting",
        R"({"batch_size": 4, "micro_batch_size": 2, "gradient_accumulation_steps": 1, "world_size": 1})",
        {}, 1, all,
        "batch_size: (4) must equal world_size (1) x micro_batch_size (2) x "
        "gradient_accumulation_steps (1) = 2");
    // key=value on the command line gives a number as the file does.
    ok("override completes the three", bm, {"gradient_accumulation_steps=1"}, 2, 4, 2, 1);
    ok("override replaces a given one", accum2, {"micro_batch_size=1"}, 2, 4, 1, 2);
    refused("override contradicts the file", bm,
            {"micro_batch_size=1", "gradient_accumulation_steps=4"}, 2, all,
            "(4) must equal world_size (2) x micro_batch_size (1) x gradient_accumulation_steps "
            "(4) = 8 in this run of 2 ranks");
    ok("override of world_size", global4, {"world_size=2"}, 1, 4, 2, 2,
       "world_size 2 in the config, 1 in this run: gradient_accumulation_steps 1 -> 2");
  }
  void splitForTheRunsWorld() {
    QFETCH(std::string, training);
    QFETCH(Strings, overrides);
    QFETCH(qlonglong, world);
    QFETCH(qlonglong, batch);
    QFETCH(qlonglong, micro);
    QFETCH(qlonglong, accumulation);
    QFETCH(Fields, fields);
    QFETCH(std::string, message);
    const Outcome o = launch(training, overrides, world);
    if (!fields.empty()) {
      QVERIFY2(o.refused, ("trained with batch_size " + std::to_string(o.training.batchSize) +
                           ", micro_batch_size " + std::to_string(o.training.microBatchSize) +
                           ", gradient_accumulation_steps " +
                           std::to_string(o.training.gradientAccumulationSteps))
                              .c_str());
      QVERIFY2(o.message.find(message) != std::string::npos, o.message.c_str());
      QCOMPARE(o.fields, fields);
      QVERIFY(o.kind == ConfigError::Kind::BatchSplit);
      return;
    }
    QVERIFY2(!o.refused, o.message.c_str());
    const TrainingConfig& t = o.training;
    QCOMPARE(t.batchSize, int64_t(batch));
    QCOMPARE(t.microBatchSize, int64_t(micro));
    QCOMPARE(t.gradientAccumulationSteps, int64_t(accumulation));
    QCOMPARE(t.worldSize, int64_t(world));
    if (message.empty())
      QCOMPARE(o.message, std::string());
    else
      QVERIFY2(o.message.find(message) != std::string::npos, o.message.c_str());
    // What was given is what the run uses, unless the note says otherwise.
    if (message.empty()) {
      json given = json::parse(training);
      for (const std::string& kv : overrides) {
        const size_t eq = kv.find('=');
        given[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
      }
      for (const char* key : kBatchKeys)
        if (given.contains(key))
          QVERIFY2(valueOf(t, key) == given[key].get<int64_t>(),
                   (std::string(key) + " given " + given[key].dump() + ", run with " +
                    std::to_string(valueOf(t, key)))
                       .c_str());
    }
  }

  // A checkpoint records the numbers its run used, world_size among them:
  // resumed on that world nothing changes; on another, world_adapts decides
  // and says so; where no split exists, the error names the fields and says
  // how to get one.
  void checkpointConfigOnAnotherWorld() {
    RunConfig run = configOf(
        R"({"batch_size": 8, "micro_batch_size": 2, "gradient_accumulation_steps": 1})", {});
    QCOMPARE(run.training.adaptToWorld(4), std::string());
    const json saved = run.toJson();
    QCOMPARE(saved["training"]["world_size"].get<int64_t>(), int64_t(4));

    RunConfig same = RunConfig::fromJson(saved);
    QCOMPARE(same.training.adaptToWorld(4), std::string());
    QCOMPARE(same.training.gradientAccumulationSteps, int64_t(1));

    RunConfig two = RunConfig::fromJson(saved);
    QCOMPARE(two.training.adaptToWorld(2),
             std::string("world_size 4 in the config, 2 in this run: gradient_accumulation_steps "
                         "1 -> 2 (world_adapts), batch_size stays 8"));
    QCOMPARE(two.training.batchSize, int64_t(8));
    QCOMPARE(two.training.gradientAccumulationSteps, int64_t(2));
    two.training.validate();

    RunConfig three = RunConfig::fromJson(saved);
    try {
      three.training.adaptToWorld(3);
      QFAIL("8 sequences split over 3 ranks of micro-batch 2");
    } catch (const ConfigError& e) {
      QCOMPARE(e.fields(), (Fields{"batch_size", "micro_batch_size", "world_size"}));
      QVERIFY(e.kind() == ConfigError::Kind::BatchSplit);
      QVERIFY2(std::string(e.what()).find("set world_adapts to batch_size") != std::string::npos,
               e.what());
    }
    RunConfig scaled = RunConfig::fromJson(saved);
    applyOverride(scaled, "world_adapts=batch_size");
    QCOMPARE(scaled.training.adaptToWorld(3),
             std::string("world_size 4 in the config, 3 in this run: batch_size 8 -> 6 "
                         "(world_adapts), gradient_accumulation_steps stays 1"));
  }

  // The file's name leads the message, and the kind survives it (the CLI
  // exits 2 by it).
  void fileErrorKeepsTheKind() {
    const QString path = QDir::temp().filePath("tst_batch_split_run.json");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"({"model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4,
                  "ffn_hidden_size": 80, "max_seq_len": 32},
                  "training": {"batch_size": 6, "micro_batch_size": 4, "gradient_accumulation_steps": 1}})");
    }
    try {
      RunConfig::fromFile(path.toStdString());
      QFAIL("6 sequences of micro-batches of 4 were accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).rfind(path.toStdString() + ": batch_size: (6)", 0) == 0,
               e.what());
      QVERIFY(e.kind() == ConfigError::Kind::BatchSplit);
    }
    QFile::remove(path);
  }
};

QTEST_GUILESS_MAIN(TestBatchSplit)
#include "tst_batch_split.moc"
