// The config's field tables (ckpt/config/config_schema.h) without LibTorch:
// every field of every section reads back what toJson wrote, every bound
// is enforced by a ConfigError naming its field, the rules across fields
// name theirs, RUN.json is written byte for byte as before the tables
// (the strings below are what the hand-written toJson printed), and
// `train --help`'s text lists every field.
#include <QtTest>

#include <fstream>
#include <functional>
#include <map>

#include "ckpt/config/config_schema.h"
#include "ckpt/config/model_config.h"
#include "ckpt/config/run_config.h"
#include "config_test_util.h"

using namespace ckpt;
using json = nlohmann::ordered_json;
using ckpt::test::Fields;
using ckpt::test::smallModel;

namespace {

struct Caught {
  bool thrown = false;
  std::string message;
  Fields fields;
};

template <class F>
Caught caught(F f) {
  Caught c;
  try {
    f();
  } catch (const ConfigError& e) {
    c.thrown = true;
    c.message = e.what();
    c.fields = e.fields();
  }
  return c;
}

// A value of the field's type other than its default, inside its bounds.
json otherValue(const ConfigField& f) {
  switch (f.type) {
    case FieldType::Int:
      return f.minimum ? int64_t(*f.minimum) + 3 : f.defaultValue.get<int64_t>() + 5;
    case FieldType::Float:
      if (f.below) return (*f.minimum + *f.below) / 2;
      return (f.minimum ? *f.minimum : 0.0) + 0.375;
    case FieldType::OptionalInt:
      return 2;
    case FieldType::OptionalFloat:
      return 0.5;
    case FieldType::Bool:
      return !f.defaultValue.get<bool>();
    case FieldType::Choice:
      return f.choices.back() == f.defaultValue ? f.choices.front() : f.choices.back();
    case FieldType::Text:
      return "some_name";
    case FieldType::Json:
      return json{{"num_experts", 4}, {"top_k", 2}};
  }
  return nullptr;
}

// Reads {name: value} into a section's config and writes it back.
json roundTrip(const std::string& section, const std::string& name, const json& value) {
  if (section == "model") {
    json j = smallModel();
    j[name] = value;
    return ModelConfig::fromJson(j).toJson();
  }
  if (section == "training") {
    TrainingConfig t;
    t.update(json{{name, value}});
    return t.toJson();
  }
  DataConfig d;
  d.update(json{{name, value}});
  return d.toJson();
}

// validate() of a config with {name: value}. gradient_accumulation_steps
// cannot be set alone through update() (it is derived from batch_size), so
// it is set on the struct.
void validateWith(const std::string& section, const std::string& name, const json& value) {
  if (section == "model") {
    json j = smallModel();
    j[name] = value;
    ModelConfig::fromJson(j).validate();
  } else if (section == "training") {
    TrainingConfig t;
    if (name == "gradient_accumulation_steps")
      t.gradientAccumulationSteps = value.get<int64_t>();
    else
      t.update(json{{name, value}});
    t.validate();
  } else {
    DataConfig d;
    d.update(json{{name, value}});
  }
}

const std::vector<const ConfigSection*>& sections() {
  static const std::vector<const ConfigSection*> all{
      &modelConfigSection(), &trainingConfigSection(), &dataConfigSection()};
  return all;
}

}  // namespace

class TestConfig : public QObject {
  Q_OBJECT

 private slots:
  void everyFieldRoundTrips_data() {
    QTest::addColumn<std::string>("section");
    QTest::addColumn<std::string>("name");
    for (const ConfigSection* s : sections())
      for (const ConfigField& f : s->fields)
        QTest::newRow((s->name + "." + f.name).c_str()) << s->name << f.name;
  }
  void everyFieldRoundTrips() {
    QFETCH(std::string, section);
    QFETCH(std::string, name);
    const ConfigSection* s = section == "model"      ? &modelConfigSection()
                             : section == "training" ? &trainingConfigSection()
                                                     : &dataConfigSection();
    const ConfigField& f = *s->find(name);
    const json value = otherValue(f);
    QVERIFY2(value != f.defaultValue, value.dump().c_str());
    const json out = roundTrip(section, name, value);
    QVERIFY2(out[name] == value, (name + ": wrote " + out[name].dump()).c_str());
    // Every field of the table, in its order, and only those (no extra here).
    std::vector<std::string> keys, names;
    for (auto it = out.begin(); it != out.end(); ++it) keys.push_back(it.key());
    for (const ConfigField& g : s->fields) names.push_back(g.name);
    QCOMPARE(keys, names);
    // Reading what was written writes the same bytes.
    if (section == "model") QCOMPARE(ModelConfig::fromJson(out).toJson().dump(), out.dump());
    // An absent key means the default: the written default is the table's.
    if (!f.required) {
      const json defaults = section == "model"      ? ModelConfig::fromJson(smallModel()).toJson()
                            : section == "training" ? TrainingConfig{}.toJson()
                                                    : DataConfig{}.toJson();
      QCOMPARE(defaults[name].dump(), f.defaultValue.dump());
    }
  }

  void everyBoundIsEnforced_data() {
    QTest::addColumn<std::string>("section");
    QTest::addColumn<std::string>("name");
    QTest::addColumn<std::string>("bad");
    QTest::addColumn<std::string>("good");
    int bounded = 0;
    for (const ConfigSection* s : sections()) {
      for (const ConfigField& f : s->fields) {
        if (!f.minimum) continue;
        ++bounded;
        const double lo = *f.minimum;
        const bool isInt = f.type == FieldType::Int || f.type == FieldType::OptionalInt;
        auto num = [&](double v) { return isInt ? json(int64_t(v)).dump() : json(v).dump(); };
        const std::string good =
            isInt ? num(double(f.formLowest())) : num(f.below ? lo : lo + 0.25);
        auto row = [&](const char* what, double v) {
          QTest::newRow((s->name + "." + f.name + " " + what).c_str())
              << s->name << f.name << num(v) << good;
        };
        if (f.exclusive) row("at the bound", lo);
        row("below the bound", lo - (isInt ? 1 : 0.5));
        if (f.below) row("at the upper bound", *f.below);
      }
    }
    QVERIFY(bounded >= 20);  // the model's six sizes, the optimizer's, the counts, ...
  }
  void everyBoundIsEnforced() {
    QFETCH(std::string, section);
    QFETCH(std::string, name);
    QFETCH(std::string, bad);
    QFETCH(std::string, good);
    const Caught refused = caught([&] { validateWith(section, name, json::parse(bad)); });
    QVERIFY2(refused.thrown, (name + " = " + bad + " was accepted").c_str());
    QCOMPARE(refused.fields, Fields{name});
    QVERIFY2(refused.message.rfind(name, 0) == 0, refused.message.c_str());
    // The lowest value the bound allows passes it (a rule across fields may
    // still refuse it, naming other fields too).
    const Caught passed = caught([&] { validateWith(section, name, json::parse(good)); });
    QVERIFY2(!passed.thrown || passed.fields != Fields{name}, passed.message.c_str());
  }

  void errorsNameTheirFields_data() {
    QTest::addColumn<std::string>("what");
    QTest::addColumn<std::string>("message");
    QTest::addColumn<Fields>("fields");
    auto row = [](const char* tag, const char* message, Fields fields) {
      QTest::newRow(tag) << std::string(tag) << std::string(message) << fields;
    };
    row("model type", "config: d_model must be an int, got str (\"32\")", {"d_model"});
    row("model missing", "config: missing max_seq_len", {"max_seq_len"});
    row("model null", "config: dropout must be a float, got None (null)", {"dropout"});
    row("d_model % n_heads", "d_model (100) must be divisible by n_heads (3)",
        {"d_model", "n_heads"});
    row("ffn", "ffn_hidden_size (32) must exceed d_model (32)", {"ffn_hidden_size", "d_model"});
    row("head_dim", "head_dim (3 = d_model / n_heads) must be even when use_rope is set",
        {"d_model", "n_heads"});
    row("rope_theta", "rope_theta must be > 0", {"rope_theta"});
    row("sinks", "num_attention_sinks must be > 0 when use_attention_sinks is set",
        {"num_attention_sinks"});
    row("gqa unset", "gqa_groups must be set when use_gqa is set", {"gqa_groups"});
    row("gqa divides", "gqa_groups (3) must divide n_heads (4)", {"gqa_groups", "n_heads"});
    row("training type", "max_steps: expected an integer, got \"x\"", {"max_steps"});
    row("lr_schedule", "lr_schedule: expected constant or cosine, got linear", {"lr_schedule"});
    row("device", "device: expected auto, cpu or cuda, got tpu", {"device"});
    row("batch split", "batch_size: (5) must be a multiple of micro_batch_size (2)",
        {"batch_size", "micro_batch_size"});
    row("batch split on 2 ranks",
        "batch_size: (6) must be a multiple of world_size (2) x micro_batch_size (2) = 4",
        {"batch_size", "micro_batch_size", "world_size"});
    row("batch equality",
        "batch_size: (9) must equal micro_batch_size (8) x gradient_accumulation_steps (1)",
        {"batch_size", "micro_batch_size", "gradient_accumulation_steps"});
    row("world change", "batch_size: (8) cannot be split over 3 ranks",
        {"batch_size", "micro_batch_size", "world_size"});
    row("run_name", "run_name: must be a non-empty name without '/'", {"run_name"});
    row("override", "config: n_layers must be an int, got str (\"two\")", {"n_layers"});
    row("file", ": config: missing vocab_size", {"vocab_size"});
    row("moe layout", "moe_config.num_experts must be set (an int > 0) when use_moe is set",
        {"moe_config"});
  }
  void errorsNameTheirFields() {
    QFETCH(std::string, what);
    QFETCH(std::string, message);
    QFETCH(Fields, fields);
    auto model = [](json changes) {
      json j = smallModel();
      for (auto it = changes.begin(); it != changes.end(); ++it) j[it.key()] = it.value();
      ModelConfig::fromJson(j).validate();
    };
    auto training = [](json j) {
      TrainingConfig t;
      t.update(j);
      t.validate();
    };
    const std::map<std::string, std::function<void()>> cases{
        {"model type",
         [&] {
           model({{"d_model", "32"}});
         }},
        {"model missing",
         [&] {
           ModelConfig::fromJson(json{{"vocab_size", 1},
                                      {"d_model", 2},
                                      {"n_layers", 1},
                                      {"n_heads", 1},
                                      {"ffn_hidden_size", 3}});
         }},
        {"model null",
         [&] {
           model({{"dropout", nullptr}});
         }},
        {"d_model % n_heads",
         [&] {
           model({{"d_model", 100}, {"n_heads", 3}, {"ffn_hidden_size", 200}});
         }},
        {"ffn",
         [&] {
           model({{"ffn_hidden_size", 32}});
         }},
        {"head_dim",
         [&] {
           model({{"d_model", 12}});
         }},
        {"rope_theta",
         [&] {
           model({{"rope_theta", 0}});
         }},
        {"sinks",
         [&] {
           model({{"num_attention_sinks", 0}});
         }},
        {"gqa unset",
         [&] {
           model({{"use_gqa", true}});
         }},
        {"gqa divides",
         [&] {
           model({{"use_gqa", true}, {"gqa_groups", 3}});
         }},
        {"training type",
         [&] {
           training({{"max_steps", "x"}});
         }},
        {"lr_schedule",
         [&] {
           training({{"lr_schedule", "linear"}});
         }},
        {"device",
         [&] {
           training({{"device", "tpu"}});
         }},
        {"batch split",
         [&] {
           training({{"batch_size", 5}, {"micro_batch_size", 2}});
         }},
        {"batch split on 2 ranks",
         [&] {
           training({{"batch_size", 6}, {"micro_batch_size", 2}, {"world_size", 2}});
         }},
        {"batch equality",
         [&] {
           TrainingConfig t;
           t.batchSize = 9;
           t.validate();
         }},
        {"world change",
         [&] {
           TrainingConfig t;
           t.adaptToWorld(3);
         }},
        {"run_name",
         [&] {
           training({{"run_name", "a/b"}});
         }},
        {"override",
         [&] {
           RunConfig rc = RunConfig::fromJson(json{{"model", smallModel()}});
           applyOverride(rc, "n_layers=two");
         }},
        {"file",
         [&] {
           const QString path = QDir::temp().filePath("tst_config_run.json");
           std::ofstream(path.toStdString()) << R"({"model": {"d_model": 32}})";
           RunConfig::fromFile(path.toStdString());
         }},
        {"moe layout",
         [&] {
           ModelConfig c = ModelConfig::fromJson(smallModel());
           c.useMoe = true;
           stateDictLayout(c);
         }},
    };
    const Caught c = caught(cases.at(what));
    QVERIFY2(c.thrown, what.c_str());
    QVERIFY2(c.message.find(message) != std::string::npos, c.message.c_str());
    QCOMPARE(c.fields, fields);
  }

  // What RUN.json's writer printed before the tables, byte for byte (the
  // hand-written toJson's output for these inputs, kept here as text).
  void runJsonBytesAsBefore() {
    QCOMPARE(
        TrainingConfig{}.toJson().dump(),
        std::string(
            R"({"run_name":"run","output_dir":"","stage":"pretrain","batch_size":8,"micro_batch_size":8,"gradient_accumulation_steps":1,"world_size":1,"world_adapts":"gradient_accumulation_steps","allreduce_bucket_mb":25.0,"allreduce_overlap":true,"dist_timeout_seconds":600.0,"seq_len":0,"learning_rate":0.0003,"max_steps":1000,"warmup_steps":0,"lr_schedule":"constant","weight_decay":0.01,"beta1":0.9,"beta2":0.999,"eps":1e-08,"max_grad_norm":1.0,"eval_every":100,"eval_batches":8,"save_every":500,"log_every":10,"keep_last":0,"seed":1337,"mixed_precision":"bf16","device":"auto"})"));
    QCOMPARE(DataConfig{}.toJson().dump(),
             std::string(R"({"path":"","tokenizer":"bytes","val_fraction":0.1,"uint32":false})"));
    const RunConfig rc = RunConfig::fromJson(json::parse(R"({
      "model": {"vocab_size": 256, "d_model": 64, "n_layers": 2, "n_heads": 4, "ffn_hidden_size": 256,
                "max_seq_len": 64, "zeta": [1, 2], "rope_theta": 500000, "rope_scaling": 2, "dropout": 0.1,
                "gqa_groups": 2, "moe_config": {"num_experts": 4}},
      "training": {"run_name": "x", "batch_size": 16, "micro_batch_size": 4, "learning_rate": 1e-3,
                   "lr_schedule": "cosine", "betas": [0.8, 0.95], "seed": 42, "eps": 1e-6,
                   "max_grad_norm": 0.5, "world_size": 2, "ignored": 1},
      "data": {"path": "a.txt", "val_fraction": 0.05, "uint32": true}})"));
    QCOMPARE(
        rc.toJson().dump(),
        std::string(
            R"({"model":{"vocab_size":256,"d_model":64,"n_layers":2,"n_heads":4,"ffn_hidden_size":256,"max_seq_len":64,"rmsnorm_eps":1e-05,"dropout":0.1,"initializer_range":0.02,"rope_theta":500000.0,"rope_scaling":2.0,"use_rope":true,"use_attention_sinks":true,"num_attention_sinks":2,"use_swiglu":true,"swiglu_multiplier":2.0,"use_gqa":false,"gqa_groups":2,"use_moe":false,"moe_config":{"num_experts":4},"tie_embeddings":true,"zeta":[1,2]},"training":{"run_name":"x","output_dir":"","stage":"pretrain","batch_size":16,"micro_batch_size":4,"gradient_accumulation_steps":2,"world_size":2,"world_adapts":"gradient_accumulation_steps","allreduce_bucket_mb":25.0,"allreduce_overlap":true,"dist_timeout_seconds":600.0,"seq_len":0,"learning_rate":0.001,"max_steps":1000,"warmup_steps":0,"lr_schedule":"cosine","weight_decay":0.01,"beta1":0.8,"beta2":0.95,"eps":1e-06,"max_grad_norm":0.5,"eval_every":100,"eval_batches":8,"save_every":500,"log_every":10,"keep_last":0,"seed":42,"mixed_precision":"bf16","device":"auto"},"data":{"path":"a.txt","tokenizer":"bytes","val_fraction":0.05,"uint32":true}})"));
    QCOMPARE(RunConfig::fromJson(rc.toJson()).toJson().dump(), rc.toJson().dump());
  }

  // Every field's bound, typed in from MODEL.md's notes and the checks the
  // hand-written validate() made before the tables; unlisted fields have none
  // (conditional ones like num_attention_sinks are rules across fields).
  void boundsAsTypedIn() {
    const std::map<std::string, std::string> expected{{"vocab_size", "> 0"},
                                                      {"d_model", "> 0"},
                                                      {"n_layers", "> 0"},
                                                      {"n_heads", "> 0"},
                                                      {"ffn_hidden_size", "> 0"},
                                                      {"max_seq_len", "> 0"},
                                                      {"rmsnorm_eps", "> 0"},
                                                      {"dropout", "in [0, 1)"},
                                                      {"initializer_range", ">= 0"},
                                                      {"rope_scaling", "> 0"},
                                                      {"batch_size", "> 0"},
                                                      {"micro_batch_size", "> 0"},
                                                      {"gradient_accumulation_steps", "> 0"},
                                                      {"world_size", "> 0"},
                                                      {"allreduce_bucket_mb", "> 0"},
                                                      {"dist_timeout_seconds", "> 0"},
                                                      {"seq_len", ">= 0"},
                                                      {"learning_rate", "> 0"},
                                                      {"max_steps", "> 0"},
                                                      {"warmup_steps", ">= 0"},
                                                      {"weight_decay", ">= 0"},
                                                      {"beta1", "in [0, 1)"},
                                                      {"beta2", "in [0, 1)"},
                                                      {"eps", "> 0"},
                                                      {"eval_every", ">= 0"},
                                                      {"save_every", ">= 0"},
                                                      {"log_every", ">= 0"},
                                                      {"keep_last", ">= 0"},
                                                      {"val_fraction", "in [0, 1)"}};
    for (const ConfigSection* s : sections())
      for (const ConfigField& f : s->fields) {
        const auto it = expected.find(f.name);
        QCOMPARE(f.ruleText(), it == expected.end() ? std::string() : it->second);
      }
    // The choices, likewise.
    QCOMPARE(trainingConfigSection().find("lr_schedule")->choices,
             (std::vector<std::string>{"constant", "cosine"}));
    QCOMPARE(trainingConfigSection().find("mixed_precision")->choices,
             (std::vector<std::string>{"bf16", "fp16", "fp32"}));
    QCOMPARE(trainingConfigSection().find("device")->choices,
             (std::vector<std::string>{"auto", "cpu", "cuda"}));
    QCOMPARE(trainingConfigSection().find("world_adapts")->choices,
             (std::vector<std::string>{"gradient_accumulation_steps", "batch_size"}));
  }

  void modelKeysAreTheTables() {
    for (const ConfigField& f : modelConfigSection().fields) QVERIFY(isModelConfigKey(f.name));
    QVERIFY(!isModelConfigKey("max_steps"));
    QVERIFY(!isModelConfigKey("zeta"));
    // A flat (reference library) config takes the model's keys from the top level.
    json flat = smallModel();
    flat["rope_theta"] = 500000.0;
    flat["pretrain_max_steps"] = 7;
    const RunConfig rc = RunConfig::fromJson(flat);
    QCOMPARE(rc.model.ropeTheta, 500000.0);
    QCOMPARE(rc.training.maxSteps, int64_t(7));
    QVERIFY(rc.model.extra.empty());
    // And key=value overrides find their section by the tables.
    RunConfig o = RunConfig::fromJson(json{{"model", smallModel()}});
    applyOverride(o, "val_fraction=0.25");
    applyOverride(o, "dropout=0.5");
    applyOverride(o, "eval_batches=3");
    QCOMPARE(o.data.valFraction, 0.25);
    QCOMPARE(o.model.dropout, 0.5);
    QCOMPARE(o.training.evalBatches, int64_t(3));
  }

  void helpListsEveryField() {
    const std::string help = runConfigHelp();
    int listed = 0;
    for (const ConfigSection* s : sections()) {
      QVERIFY2(help.find("\n" + s->name + " (") != std::string::npos, s->name.c_str());
      for (const ConfigField& f : s->fields) {
        const std::string line = "  " + f.name + ": " + f.typeText() + ", " +
                                 (f.required ? "required" : "default " + f.defaultText());
        QVERIFY2(help.find(line) != std::string::npos, line.c_str());
        QVERIFY2(help.find("      " + f.help + "\n") != std::string::npos, f.help.c_str());
        QVERIFY(!f.help.empty());
        ++listed;
      }
    }
    QCOMPARE(listed, 21 + 29 + 4);
    // A few lines as a person reads them.
    QVERIFY(help.find("  vocab_size: int, required, > 0\n") != std::string::npos);
    QVERIFY(help.find("  rmsnorm_eps: float, default 1e-05, > 0\n") != std::string::npos);
    QVERIFY(help.find("  dropout: float, default 0.0, in [0, 1)\n") != std::string::npos);
    QVERIFY(help.find("  gqa_groups: int or null, default null\n") != std::string::npos);
    QVERIFY(help.find("  lr_schedule: constant | cosine, default \"constant\"\n") !=
            std::string::npos);
    QVERIFY(help.find("  run_name: text, default \"run\"\n") != std::string::npos);
  }

  // The training keys as RUN.json has always written them, typed in by hand
  // (MODEL.md's are in tst_model).
  void trainingKeysInRunJsonOrder() {
    const std::vector<std::string> expected{"run_name",
                                            "output_dir",
                                            "stage",
                                            "batch_size",
                                            "micro_batch_size",
                                            "gradient_accumulation_steps",
                                            "world_size",
                                            "world_adapts",
                                            "allreduce_bucket_mb",
                                            "allreduce_overlap",
                                            "dist_timeout_seconds",
                                            "seq_len",
                                            "learning_rate",
                                            "max_steps",
                                            "warmup_steps",
                                            "lr_schedule",
                                            "weight_decay",
                                            "beta1",
                                            "beta2",
                                            "eps",
                                            "max_grad_norm",
                                            "eval_every",
                                            "eval_batches",
                                            "save_every",
                                            "log_every",
                                            "keep_last",
                                            "seed",
                                            "mixed_precision",
                                            "device"};
    std::vector<std::string> names;
    for (const ConfigField& f : trainingConfigSection().fields) names.push_back(f.name);
    QCOMPARE(names, expected);
    names.clear();
    for (const ConfigField& f : dataConfigSection().fields) names.push_back(f.name);
    QCOMPARE(names, (std::vector<std::string>{"path", "tokenizer", "val_fraction", "uint32"}));
  }
};

QTEST_MAIN(TestConfig)
#include "tst_config.moc"
