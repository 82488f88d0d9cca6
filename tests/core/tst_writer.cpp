// The writer: every fixture rewritten and read back by our reader and by
// PyTorch (tests/python/check_written.py), a modern_llm checkpoint built in
// C++, crash safety, zip64 thresholds, big-endian input, integer encoding.
#include <QtTest>

#include <signal.h>
#include <sys/resource.h>

#include <dirent.h>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/torch_writer.h"
#include "ckpt/format/zip_archive.h"
#include "json_compare.h"

using namespace ckpt;
using ckpt::test::json;
using K = Value::Kind;

namespace {

const json& manifest() {
  static const json m = ckpt::test::readJsonFile(std::string(CKPT_FIXTURE_DIR) + "/manifest.json");
  return m;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool hasTempFile(const std::string& dir) {
  for (const std::string& n : listDir(dir))
    if (n.find(".tmp-") != std::string::npos) return true;
  return false;
}

struct PyResult {
  int exitCode = -1;
  QString output;
};

PyResult runPython(const QStringList& args, int timeoutMs = 600000) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("PYTHONDONTWRITEBYTECODE", "1");
  p.setProcessEnvironment(env);
  p.setProcessChannelMode(QProcess::MergedChannels);
  QStringList all{QString(CKPT_SOURCE_DIR) + "/tests/python/check_written.py"};
  all += args;
  p.start(CKPT_TORCH_PYTHON, all);
  PyResult r;
  if (!p.waitForStarted(30000)) {
    r.output = "could not start " + QString(CKPT_TORCH_PYTHON);
    return r;
  }
  p.waitForFinished(timeoutMs);
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.output = QString::fromUtf8(p.readAll());
  return r;
}

// Python's describe output: the last line that parses as JSON.
json describe(const std::string& path) {
  const PyResult r = runPython({"describe", QString::fromStdString(path)});
  if (r.exitCode != 0) throw std::runtime_error("describe failed: " + r.output.toStdString());
  const QStringList lines = r.output.split('\n', Qt::SkipEmptyParts);
  return json::parse(lines.back().toStdString());
}

// The tree with what valueToJson leaves out: kinds, tags (OrderedDict,
// NEWOBJ), dict attributes, and which containers are shared (a node met again
// is {"ref": n}, n = its first-visit number).
struct Structure {
  std::unordered_map<const Value*, int> seen;
  json encode(const Value* v) {
    if (!v) return nullptr;
    const bool trackable = v->kind == K::List || v->kind == K::Set || v->kind == K::Dict ||
                           v->kind == K::Object || v->kind == K::Tensor || v->kind == K::Bytes ||
                           (v->kind == K::Tuple && !v->items.empty());
    if (trackable) {
      auto [it, fresh] = seen.emplace(v, int(seen.size()));
      if (!fresh) return json{{"ref", it->second}};
    }
    json j;
    j["k"] = std::string(kindName(v->kind));
    switch (v->kind) {
      case K::None:
        break;
      case K::Bool:
        j["v"] = v->boolean;
        break;
      case K::Int:
        j["v"] = v->integer;
        break;
      case K::Float: {
        uint64_t bits;
        std::memcpy(&bits, &v->real, 8);
        j["bits"] = bits;
        break;
      }
      case K::BigInt:
      case K::Str:
      case K::Global:
        j["t"] = std::string(v->text);
        break;
      case K::Bytes: {
        std::string hex;
        for (unsigned char c : v->text)
          hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
        j["hex"] = hex;
        break;
      }
      case K::Tensor:
      case K::Storage:
        j["i"] = v->index;
        break;
      default:
        break;
    }
    if (v->kind == K::Dict || v->kind == K::Object) j["tag"] = v->tag;
    if (v->kind == K::Object) j["cls"] = std::string(v->text);
    if (!v->items.empty()) {
      json a = json::array();
      for (const Value* x : v->items) a.push_back(encode(x));
      j["items"] = a;
    }
    if (!v->listItems.empty()) {
      json a = json::array();
      for (const Value* x : v->listItems) a.push_back(encode(x));
      j["list"] = a;
    }
    if (!v->entries.empty()) {
      json a = json::array();
      for (const auto& e : v->entries)
        a.push_back(json::array({encode(e.first), encode(e.second)}));
      j["entries"] = a;
    }
    if (v->state) j["state"] = encode(v->state);
    if (v->callee) j["callee"] = encode(v->callee);
    return j;
  }
};

bool sameDouble(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 8) == 0;
}

// What tensorData gives for every element, exactly.
std::string valuesDiff(const CheckpointFile& a, const CheckpointFile& b, size_t i) {
  const TensorInfo& t = a.tensors()[i];
  if (t.isMeta || t.numel() == 0) return {};
  const TensorData da = a.tensorData(i), db = b.tensorData(i);
  if (da.numel() != db.numel()) return "element counts differ";
  const bool complex = dtypeIsComplex(t.dtype);
  for (uint64_t k = 0; k < da.numel(); ++k) {
    if (complex) {
      const auto x = da.complexAt(k), y = db.complexAt(k);
      if (!sameDouble(x.real(), y.real()) || !sameDouble(x.imag(), y.imag()))
        return "element " + std::to_string(k) + " differs";
    } else if (!sameDouble(da.at(k), db.at(k))) {
      return "element " + std::to_string(k) + " differs: " + std::to_string(da.at(k)) + " vs " +
             std::to_string(db.at(k));
    }
  }
  return {};
}

QString q(const std::string& s) {
  return QString::fromStdString(s);
}
QStringList q(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << QString::fromStdString(s);
  return out;
}

std::string safeName(std::string s) {
  for (char& c : s)
    if (c == '/') c = '_';
  return s;
}

template <typename T>
void putBytes(std::vector<uint8_t>& out, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  out.assign(p, p + v.size() * sizeof(T));
}

// A tree and the table and bytes it needs, built by a test.
struct Built {
  TreeBuilder b;
  TensorTable table;
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::vector<double>> values;  // per tensor, row-major, as float64

  int addStorage(DType dtype, std::vector<uint8_t> bytes) {
    StorageInfo s;
    s.key = "s" + std::to_string(table.storages.size());
    s.dtype = dtype;
    s.numel = bytes.size() / uint64_t(dtypeSize(dtype));
    s.location = "cpu";
    table.storages.push_back(s);
    data.push_back(std::move(bytes));
    return int(table.storages.size() - 1);
  }
  // A float32 tensor of `shape` with its own storage, values start, start+step, ...
  Value* f32(std::vector<int64_t> shape, float start, float step, bool parameter = false,
             int shareStorage = -1) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = start + step * float(i);
    TensorInfo t;
    t.dtype = DType::Float32;
    t.shape = shape;
    t.stride = contiguousStrides(shape);
    if (shareStorage >= 0) {
      t.storage = table.tensors[size_t(shareStorage)].storage;
      values.push_back(values[size_t(shareStorage)]);
    } else {
      std::vector<uint8_t> bytes;
      putBytes(bytes, v);
      t.storage = addStorage(DType::Float32, std::move(bytes));
      values.emplace_back(v.begin(), v.end());
    }
    t.isParameter = parameter;
    t.requiresGrad = parameter;
    table.tensors.push_back(t);
    return b.tensor(int64_t(table.tensors.size() - 1));
  }
  std::vector<StorageBytes> bytes() const {
    std::vector<StorageBytes> out;
    for (const auto& d : data) out.push_back({d.data(), d.size()});
    return out;
  }
  void write(const std::string& path, const Value* root) const {
    writeTorchFile(path, root, table, bytes());
  }
};

// The JSON describe_value (check_written.py) gives for what we built;
// tensors without data_ptr / storage_ptr (compared separately).
json expectedJson(const Value* v, const Built& built) {
  switch (v->kind) {
    case K::None:
      return nullptr;
    case K::Bool:
      return v->boolean;
    case K::Int:
      return v->integer;
    case K::BigInt:
      return v->text;
    case K::Float:
      if (std::isnan(v->real)) return json{{"$float", "nan"}};
      if (std::isinf(v->real)) return json{{"$float", v->real > 0 ? "inf" : "-inf"}};
      return v->real;
    case K::Str:
      return v->text;
    case K::List: {
      json a = json::array();
      for (const Value* x : v->items) a.push_back(expectedJson(x, built));
      return a;
    }
    case K::Tuple: {
      json a = json::array();
      for (const Value* x : v->items) a.push_back(expectedJson(x, built));
      return json{{"$tuple", a}};
    }
    case K::Dict: {
      json pairs = json::array();
      for (const auto& e : v->entries)
        pairs.push_back(json::array({expectedJson(e.first, built), expectedJson(e.second, built)}));
      if (v->tag != Value::kOrderedDict) return json{{"$dict", pairs}};
      json attrs = json::object();
      if (v->state)
        for (const auto& e : v->state->entries)
          attrs[std::string(e.first->text)] = expectedJson(e.second, built);
      return json{{"$odict", pairs}, {"$attrs", attrs}};
    }
    case K::Tensor: {
      const TensorInfo& t = built.table.tensors[size_t(v->index)];
      json j;
      j["dtype"] = std::string(dtypeName(t.dtype));
      j["shape"] = t.shape;
      j["stride"] = t.stride;
      j["storage_offset"] = t.storageOffset;
      j["requires_grad"] = t.requiresGrad;
      j["parameter"] = t.isParameter;
      j["values"] = built.values[size_t(v->index)];
      return json{{"$tensor", j}};
    }
    default:
      return json{{"unexpected", std::string(kindName(v->kind))}};
  }
}

// Drops data_ptr / storage_ptr from describe's tensors (kept aside).
void stripPointers(json& j) {
  if (j.is_object()) {
    if (j.contains("$tensor")) {
      j["$tensor"].erase("data_ptr");
      j["$tensor"].erase("storage_ptr");
      return;
    }
    for (auto& [k, v] : j.items()) stripPointers(v);
  } else if (j.is_array()) {
    for (auto& v : j) stripPointers(v);
  }
}

// Looks up key `k` in describe's {"$odict"/"$dict": [[k, v]...]}.
const json* member(const json& d, const json& key) {
  const json* pairs = d.contains("$odict")  ? &d["$odict"]
                      : d.contains("$dict") ? &d["$dict"]
                                            : nullptr;
  if (!pairs) return nullptr;
  for (const json& p : *pairs)
    if (p[0] == key) return &p[1];
  return nullptr;
}

// The modern_llm checkpoint layout (MODEL.md) with a tied lm_head, in small.
const Value* buildModernLlm(Built& m, bool withFloats) {
  TreeBuilder& b = m.b;
  Value* sd = b.orderedDict();
  const int64_t V = 8, D = 4;
  b.set(sd, "token_embed.weight", m.f32({V, D}, -1.0f, 0.0625f));
  const int64_t embed = int64_t(m.table.tensors.size() - 1);
  b.set(sd, "blocks.0.attn.q_proj.weight", m.f32({D, D}, 0.5f, -0.125f));
  b.set(sd, "blocks.0.attn_norm.weight", m.f32({D}, 1.0f, 0.0f));
  b.set(sd, "final_norm.weight", m.f32({D}, 1.0f, 0.25f));
  // The tie: its own tensor over token_embed's storage, as state_dict() gives.
  b.set(sd, "lm_head.weight", m.f32({V, D}, 0, 0, false, int(embed)));

  Value* opt = b.dict();
  Value* state = b.dict();
  const std::vector<std::vector<int64_t>> shapes = {{V, D}, {D, D}, {D}, {D}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    Value* s = b.dict();
    b.set(s, "step", m.f32({}, 10.0f, 0));
    b.set(s, "exp_avg", m.f32(shapes[i], 0.001f * float(i + 1), 0.0005f));
    b.set(s, "exp_avg_sq", m.f32(shapes[i], 1e-6f, 1e-7f));
    b.set(state, int64_t(i), s);
  }
  b.set(opt, "state", state);
  Value* groups = b.list();
  Value* g = b.dict();
  if (withFloats) {
    b.set(g, "lr", b.real(6e-4));
    b.set(g, "betas", b.tuple({b.real(0.9), b.real(0.999)}));
    b.set(g, "eps", b.real(1e-8));
    b.set(g, "weight_decay", b.real(0.01));
  }
  b.set(g, "amsgrad", b.boolean(false));
  b.set(g, "foreach", b.none());
  b.set(g, "maximize", b.boolean(false));
  b.set(g, "capturable", b.boolean(false));
  Value* params = b.list();
  for (int64_t i = 0; i < 4; ++i) b.append(params, b.integer(i));
  b.set(g, "params", params);
  b.append(groups, g);
  b.set(opt, "param_groups", groups);

  Value* config = b.dict();
  b.set(config, "vocab_size", b.integer(V));
  b.set(config, "d_model", b.integer(D));
  b.set(config, "n_layers", b.integer(1));
  b.set(config, "n_heads", b.integer(2));
  b.set(config, "ffn_hidden_size", b.integer(8));
  b.set(config, "max_seq_len", b.integer(16));
  if (withFloats) {
    b.set(config, "rmsnorm_eps", b.real(1e-5));
    b.set(config, "dropout", b.real(0.0));
    b.set(config, "rope_theta", b.real(10000.0));
  }
  b.set(config, "rope_scaling", b.none());
  b.set(config, "use_rope", b.boolean(true));
  b.set(config, "gqa_groups", b.none());
  b.set(config, "tie_embeddings", b.boolean(true));

  Value* meta = b.dict();
  b.set(meta, "step", b.integer(100));
  if (withFloats) b.set(meta, "loss", b.real(2.5));
  b.set(meta, "config", config);
  b.set(meta, "run_name", b.str("cpp-run \xc3\xa9"));
  b.set(meta, "stage", b.str("pretrain"));
  b.set(meta, "final", b.boolean(false));

  Value* root = b.dict();
  b.set(root, "model_state", sd);
  b.set(root, "optimizer", opt);
  b.set(root, "metadata", meta);
  for (const auto& e : meta->entries)
    b.set(root, e.first->text, e.second);  // metadata repeated at the top
  return root;
}

// Minimal little-endian field access for the zip header tests.
uint64_t le(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(uint8_t(s[at + size_t(i)])) << (8 * i);
  return v;
}
// The zip64 extra (id 1) payload in an extra-field block, "" when absent.
std::string zip64Extra(const std::string& extra) {
  for (size_t off = 0; off + 4 <= extra.size();) {
    const uint64_t id = le(extra, off, 2), len = le(extra, off + 2, 2);
    if (id == 1) return extra.substr(off + 4, len);
    off += 4 + len;
  }
  return {};
}

}  // namespace

class TestWriter : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  QStringList m_pairs;  // original, rewritten, ... for the Python check

  std::string tmp(const std::string& name) const { return m_dir.path().toStdString() + "/" + name; }

 private slots:
  void initTestCase() { QVERIFY(m_dir.isValid()); }

  // (a)(i) Every fixture: rewrite, read back, compare everything.
  void rewriteFixtures_data() {
    QTest::addColumn<QString>("file");
    for (const json& f : manifest()["fixtures"]) {
      const std::string name = f["file"].get<std::string>();
      QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
    QVERIFY(manifest()["fixtures"].size() >= 20);
  }
  void rewriteFixtures() {
    QFETCH(QString, file);
    const std::string src = std::string(CKPT_FIXTURE_DIR) + "/" + file.toStdString();
    const std::string dst = tmp("rw_" + safeName(file.toStdString()) + ".pt");
    std::unique_ptr<CheckpointFile> a, b;
    try {
      a = CheckpointFile::open(src);
      rewriteCheckpoint(*a, dst);
      b = CheckpointFile::open(dst);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY(b->format() == FileFormat::TorchZip);
    QVERIFY(!b->bigEndian());
    const auto problems = b->verify();
    QVERIFY2(problems.empty(), problems.empty() ? "" : problems.front().c_str());

    // The tree: the info --json encoding, then kinds, tags, attributes and sharing.
    const json ja = valueToJson(a->root()), jb = valueToJson(b->root());
    const std::string diff = ckpt::test::compareJson(ja, jb);
    QVERIFY2(diff.empty(), diff.c_str());
    QCOMPARE(QString::fromStdString(jb.dump()), QString::fromStdString(ja.dump()));
    const json sa = Structure().encode(a->root()), sb = Structure().encode(b->root());
    QVERIFY2(sa == sb, ("structure differs: " + ckpt::test::compareJson(sa, sb)).c_str());

    // The tensor table: all but storage keys, which are renumbered; the
    // storage a tensor views maps one to one.
    QCOMPARE(b->tensors().size(), a->tensors().size());
    std::unordered_map<int, int> fwd, back;
    for (size_t i = 0; i < a->tensors().size(); ++i) {
      const TensorInfo& x = a->tensors()[i];
      const TensorInfo& y = b->tensors()[i];
      const std::string where =
          file.toStdString() + " tensor " + std::to_string(i) + " " + joinPath(x.path);
      QVERIFY2(x.path == y.path, where.c_str());
      QVERIFY2(x.dtype == y.dtype, where.c_str());
      QVERIFY2(x.shape == y.shape, where.c_str());
      QVERIFY2(x.stride == y.stride, where.c_str());
      QVERIFY2(x.storageOffset == y.storageOffset, where.c_str());
      QVERIFY2(x.requiresGrad == y.requiresGrad, where.c_str());
      QVERIFY2(x.isParameter == y.isParameter, where.c_str());
      QVERIFY2(x.isMeta == y.isMeta, where.c_str());
      QVERIFY2(x.subclass == y.subclass, where.c_str());
      QVERIFY2(x.qscheme == y.qscheme, where.c_str());
      QVERIFY2(sameDouble(x.qscale, y.qscale) && x.qzeroPoint == y.qzeroPoint, where.c_str());
      QVERIFY2(y.error.empty(), (where + ": " + y.error).c_str());
      QVERIFY2((x.storage < 0) == (y.storage < 0), where.c_str());
      if (x.storage < 0) continue;
      QVERIFY2(fwd.emplace(x.storage, y.storage).first->second == y.storage,
               (where + ": storage sharing changed").c_str());
      QVERIFY2(back.emplace(y.storage, x.storage).first->second == x.storage,
               (where + ": storages merged").c_str());
      const StorageInfo& s = a->storages()[size_t(x.storage)];
      const StorageInfo& t = b->storages()[size_t(y.storage)];
      QVERIFY2(s.dtype == t.dtype && s.numel == t.numel && s.location == t.location &&
                   s.useCount == t.useCount,
               (where + ": storage " + s.key + " vs " + t.key).c_str());
      const std::string vd = valuesDiff(*a, *b, i);
      QVERIFY2(vd.empty(), (where + ": " + vd).c_str());
    }
    // Whole storages byte for byte (views leave parts no tensor shows).
    for (const auto& [sa_, sb_] : fwd) {
      const ByteRegion ra = a->storageBytes(size_t(sa_)), rb = b->storageBytes(size_t(sb_));
      QCOMPARE(ra.size, rb.size);
      QVERIFY2(ra.size == 0 || std::memcmp(ra.data, rb.data, ra.size) == 0,
               ("storage " + a->storages()[size_t(sa_)].key + " bytes differ").c_str());
    }
    // Keys are "0", "1", ... in order of first use.
    for (size_t k = 0; k < b->storages().size(); ++k)
      QCOMPARE(q(b->storages()[k].key), q(std::to_string(k)));
    QVERIFY(!hasTempFile(m_dir.path().toStdString()));
    m_pairs << QString::fromStdString(src) << QString::fromStdString(dst);
  }

  // (a)(ii) PyTorch loads every rewritten file equal to its original.
  void pythonLoadsRewritten() {
    QVERIFY(m_pairs.size() >= 40);
    const PyResult r = runPython(m_pairs);
    const QStringList lines = r.output.split('\n', Qt::SkipEmptyParts);
    int pass = 0;
    for (const QString& line : lines) {
      qInfo().noquote() << line;
      if (line.startsWith("PASS ")) ++pass;
    }
    // weights_only=True on the original agrees with what make_fixtures recorded.
    for (const json& f : manifest()["fixtures"]) {
      if (!f.contains("weights_only_ok")) continue;
      const QString name = QString::fromStdString(std::string(CKPT_FIXTURE_DIR) + "/" +
                                                  f["file"].get<std::string>());
      const QString want = f["weights_only_ok"].get<bool>() ? "original=ok" : "original=rejected";
      bool found = false;
      for (const QString& line : lines)
        if (line.startsWith("PASS " + name + " ") && line.contains(want)) found = true;
      QVERIFY2(found, qPrintable(name + " should say " + want));
    }
    QVERIFY2(r.exitCode == 0, qPrintable(r.output));
    QCOMPARE(pass, int(m_pairs.size() / 2));
  }

  // The Python check is not vacuous: files that differ from the original in
  // one byte, in storage sharing, or in a dict's type are caught.
  void pythonCheckerCatchesDifferences() {
    const std::string views = std::string(CKPT_FIXTURE_DIR) + "/views.pt";
    const std::string dtypes = std::string(CKPT_FIXTURE_DIR) + "/dtypes.pt";
    const auto v = CheckpointFile::open(views);
    TensorTable table{v->tensors(), v->storages()};
    std::vector<std::vector<uint8_t>> copies;
    for (size_t i = 0; i < table.storages.size(); ++i) {
      const ByteRegion r = v->storageBytes(i);
      copies.emplace_back(r.data, r.data + r.size);
    }
    auto spans = [&] {
      std::vector<StorageBytes> out;
      for (const auto& c : copies) out.push_back({c.data(), c.size()});
      return out;
    };
    // One value changed (a valid file: the CRC is computed over the change).
    const std::string flipped = tmp("neg_flipped.pt");
    copies[0][5] ^= 0x01;
    writeTorchFile(flipped, v->root(), table, spans());
    copies[0][5] ^= 0x01;
    // "transpose" gets a copy of base's storage: no longer shared.
    const std::string unshared = tmp("neg_unshared.pt");
    {
      TensorTable t2 = table;
      const int base = t2.tensors[1].storage;
      t2.storages.push_back(t2.storages[size_t(base)]);
      copies.push_back(copies[size_t(base)]);
      t2.tensors[1].storage = int(t2.storages.size() - 1);
      writeTorchFile(unshared, v->root(), t2, spans());
      copies.pop_back();
    }
    // dtypes.pt's OrderedDict written as a plain dict.
    const std::string plain = tmp("neg_plain.pt");
    const auto d = CheckpointFile::open(dtypes);
    ValueArena arena;
    Value* root = arena.make(K::Dict);
    *root = *d->root();
    root->tag = 0;
    std::vector<ByteRegion> regions;  // keeps the mappings alive while writing
    std::vector<StorageBytes> dbytes;
    for (size_t i = 0; i < d->storages().size(); ++i) {
      regions.push_back(d->storageBytes(i));
      dbytes.push_back({regions.back().data, regions.back().size});
    }
    writeTorchFile(plain, root, TensorTable{d->tensors(), d->storages()}, dbytes);
    const PyResult r =
        runPython({q(views), q(flipped), q(views), q(unshared), q(dtypes), q(plain)});
    QVERIFY2(r.exitCode == 1, qPrintable(r.output));
    const QStringList lines = r.output.split('\n', Qt::SkipEmptyParts);
    QVERIFY2(lines.size() >= 3, qPrintable(r.output));
    QVERIFY2(lines[0].startsWith("FAIL") && lines[0].contains("differ"), qPrintable(lines[0]));
    QVERIFY2(lines[1].startsWith("FAIL") && lines[1].contains("shared a storage in the original"),
             qPrintable(lines[1]));
    QVERIFY2(lines[2].startsWith("FAIL") && lines[2].contains("OrderedDict became builtins.dict"),
             qPrintable(lines[2]));
  }

  // A file opened metadata-only has no tensor table: refused clearly.
  void metadataOnlyRefused() {
    ReadOptions o;
    o.metadataOnly = true;
    const auto f =
        CheckpointFile::open(std::string(CKPT_FIXTURE_DIR) + "/runs/tiny/tiny_step100.pt", o);
    const std::string path = tmp("meta_only.pt");
    try {
      rewriteCheckpoint(*f, path);
      QFAIL("rewrote a metadata-only file");
    } catch (const FormatError& e) {
      QVERIFY2(std::string(e.what()).find("metadata-only") != std::string::npos, e.what());
    }
    QVERIFY(!QFile::exists(q(path)));
  }

  // (b) A modern_llm checkpoint built in C++: Python sees exactly what we built.
  void modernLlm_data() {
    QTest::addColumn<bool>("withFloats");
    QTest::newRow("with floats") << true;
    QTest::newRow("no floats (weights_only)") << false;
  }
  void modernLlm() {
    QFETCH(bool, withFloats);
    Built m;
    const Value* root = buildModernLlm(m, withFloats);
    const std::string path = tmp(withFloats ? "modern_llm_step100.pt" : "modern_llm_nofloat.pt");
    try {
      m.write(path, root);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    json got;
    try {
      got = describe(path);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    // The tie: lm_head.weight and token_embed.weight share their bytes.
    const json& value = got["value"];
    const json* sd = member(value, "model_state");
    QVERIFY(sd && sd->contains("$odict"));
    const json* head = member(*sd, "lm_head.weight");
    const json* embed = member(*sd, "token_embed.weight");
    const json* q = member(*sd, "blocks.0.attn.q_proj.weight");
    QVERIFY(head && embed && q);
    QVERIFY((*head)["$tensor"]["data_ptr"] == (*embed)["$tensor"]["data_ptr"]);
    QVERIFY((*head)["$tensor"]["storage_ptr"] == (*embed)["$tensor"]["storage_ptr"]);
    QVERIFY((*q)["$tensor"]["data_ptr"] != (*embed)["$tensor"]["data_ptr"]);

    json stripped = value;
    stripPointers(stripped);
    const json want = expectedJson(root, m);
    const std::string diff = ckpt::test::compareJson(want, stripped);
    QVERIFY2(diff.empty(), diff.c_str());

    const std::string wo = got["weights_only"].get<std::string>();
    qInfo().noquote() << "modern_llm" << (withFloats ? "with floats" : "without floats")
                      << "weights_only=True:" << QString::fromStdString(wo.substr(0, 160));
    if (!withFloats) {
      QCOMPARE(QString::fromStdString(wo), QString("ok"));
      QVERIFY2(got["weights_only_equal"].get<bool>(), got.dump().c_str());
    } else {
      // torch 1.13's restricted unpickler has no BINFLOAT.
      QVERIFY(wo.find("Unsupported operand 71") != std::string::npos);
    }

    // Our reader sees the same tree and the tie.
    const auto ck = CheckpointFile::open(path);
    QCOMPARE(QString::fromStdString(valueToJson(ck->root()).dump()),
             QString::fromStdString(valueToJson(root).dump()));
    const Value* rsd = ck->root()->get("model_state");
    QVERIFY(rsd && rsd->tag == Value::kOrderedDict && rsd->state && rsd->state->get("_metadata"));
    QVERIFY(rsd->state->get("_metadata")->tag == Value::kOrderedDict);
    const TensorInfo& th = ck->tensors()[size_t(rsd->get("lm_head.weight")->index)];
    const TensorInfo& te = ck->tensors()[size_t(rsd->get("token_embed.weight")->index)];
    QCOMPARE(th.storage, te.storage);
    QCOMPARE(ck->storages()[size_t(te.storage)].useCount, 2);
  }

  // Shared references and cycles through lists: the memo (BINPUT / BINGET),
  // which torch 1.13's weights_only unpickler accepts.
  void sharedAndCycles() {
    TreeBuilder b;
    Value* shared = b.list();
    b.append(shared, b.integer(1));
    Value* loop = b.list();
    b.append(loop, b.str("x"));
    b.append(loop, loop);
    Value* root = b.dict();
    b.set(root, "a", shared);
    b.set(root, "b", shared);
    b.set(root, "loop", loop);
    const std::string path = tmp("shared.pt");
    writeTorchFile(path, root, {}, {});
    const auto ck = CheckpointFile::open(path);
    QVERIFY(ck->root()->get("a") == ck->root()->get("b"));
    const Value* l = ck->root()->get("loop");
    QVERIFY(l && l->items.size() == 2 && l->items[1] == l);

    QProcess p;
    p.start(CKPT_TORCH_PYTHON, {"-c",
                                "import sys, torch\n"
                                "for wo in (False, True):\n"
                                "    d = torch.load(sys.argv[1], weights_only=wo)\n"
                                "    assert d['a'] is d['b'] and d['a'] == [1], d\n"
                                "    assert d['loop'][1] is d['loop'] and d['loop'][0] == 'x'\n"
                                "print('ok')\n",
                                QString::fromStdString(path)});
    QVERIFY(p.waitForFinished(120000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0 && out.trimmed() == "ok", qPrintable(out));

    // A cycle through a tuple cannot be pickled without Python's
    // POP_MARK trick: refused, and nothing is left behind.
    TreeBuilder c;
    Value* inner = c.list();
    const Value* t = c.tuple({inner});
    c.append(inner, t);
    const std::string bad = tmp("cycle.pt");
    try {
      writeTorchFile(bad, t, {}, {});
      QFAIL("a tuple cycle was written");
    } catch (const FormatError& e) {
      QVERIFY2(std::string(e.what()).find("cannot write a cycle") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).rfind(bad + ": ", 0) == 0, e.what());
    }
    QVERIFY(!QFile::exists(QString::fromStdString(bad)));
    QVERIFY(!hasTempFile(m_dir.path().toStdString()));
  }

  // Python's own encodings of ints, floats, strings, bytes, sets; objects.
  void scalarsAndObjects() {
    TreeBuilder b;
    Value* ints = b.list();
    const int64_t values[] = {0,
                              1,
                              255,
                              256,
                              65535,
                              65536,
                              -1,
                              -255,
                              -256,
                              INT32_MAX,
                              INT32_MIN,
                              int64_t(INT32_MAX) + 1,
                              int64_t(INT32_MIN) - 1,
                              1ll << 40,
                              -(1ll << 40),
                              INT64_MAX,
                              INT64_MIN,
                              127,
                              128,
                              -128,
                              -129,
                              32767,
                              32768,
                              -32768,
                              -32769};
    for (int64_t v : values) b.append(ints, b.integer(v));
    Value* bigs = b.list();
    for (const char* s :
         {"1180591620717411303424", "-1180591620717411303424", "18446744073709551616",
          "9223372036854775808", "-9223372036854775809", "340282366920938463463374607431768211455"})
      b.append(bigs, b.bigInt(s));
    Value* floats = b.list();
    for (double d : {0.0, -0.0, 0.1, 1e300, -5e-324, std::nan(""), HUGE_VAL, -HUGE_VAL})
      b.append(floats, b.real(d));
    Value* root = b.dict();
    b.set(root, "ints", ints);
    b.set(root, "bigs", bigs);
    b.set(root, "floats", floats);
    const char text[] =
        "h\xc3\xa9llo \xf0\x9f\x99\x82 \n\"q\" a\x00"
        "b";
    b.set(root, "str", b.str(std::string_view(text, sizeof text - 1)));
    b.set(root, "bytes", b.bytes(std::string_view("\x00\x01\x7f\x80\xff", 5)));
    b.set(root, "empty_bytes", b.bytes(""));
    Value* set = b.arena().make(K::Set);
    b.append(set, b.integer(3));
    b.append(set, b.str("s"));
    b.set(root, "set", set);
    b.set(root, "empty_tuple", b.tuple({}));
    b.set(root, "tuple5",
          b.tuple({b.integer(1), b.integer(2), b.integer(3), b.integer(4), b.none()}));
    b.set(root, "dtype", b.global("torch.bfloat16"));
    b.set(root, "path", b.object("pathlib.PosixPath", {b.str("runs"), b.str("a")}));
    Value* info = b.object("fixture_types.RunInfo", {}, /*newObj=*/true);
    Value* st = b.dict();
    b.set(st, "name", b.str("x"));
    b.set(st, "lr", b.real(0.1));
    b.set(st, "tags", b.tuple({b.str("a")}));
    info->state = st;
    b.set(root, "info", info);
    b.set(root, "device", b.object("torch.device", {b.str("cuda"), b.integer(1)}));
    Value* od = b.orderedDict();
    b.set(od, int64_t(5), b.str("five"));
    b.set(od, "z", b.integer(1));
    b.set(od, "z", b.integer(2));  // replaces
    b.set(root, "od", od);
    const std::string path = tmp("scalars.pt");
    writeTorchFile(path, root, {}, {});

    const auto ck = CheckpointFile::open(path);
    QCOMPARE(QString::fromStdString(Structure().encode(ck->root()).dump()),
             QString::fromStdString(Structure().encode(root).dump()));

    QProcess p;
    p.start(CKPT_TORCH_PYTHON,
            {"-c",
             "import sys, math, pathlib, collections, torch\n"
             "sys.path.insert(0, sys.argv[2])\n"
             "import check_written\n"  // registers fixture_types.RunInfo
             "d = torch.load(sys.argv[1], weights_only=False)\n"
             "vals = [0, 1, 255, 256, 65535, 65536, -1, -255, -256, 2**31-1, -2**31, 2**31, "
             "-2**31-1, 2**40, -2**40,"
             " 2**63-1, -2**63, 127, 128, -128, -129, 32767, 32768, -32768, -32769]\n"
             "assert d['ints'] == vals, d['ints']\n"
             "assert d['bigs'] == [2**70, -2**70, 2**64, 2**63, -2**63-1, 2**128-1], d['bigs']\n"
             "f = d['floats']\n"
             "assert f[:5] == [0.0, -0.0, 0.1, 1e300, -5e-324] and math.copysign(1, f[1]) < 0\n"
             "assert math.isnan(f[5]) and f[6] == math.inf and f[7] == -math.inf\n"
             "assert d['str'] == 'h\\u00e9llo \\U0001F642 \\n\"q\" a\\x00b', repr(d['str'])\n"
             "assert d['bytes'] == b'\\x00\\x01\\x7f\\x80\\xff' and type(d['bytes']) is bytes\n"
             "assert d['empty_bytes'] == b'' and type(d['empty_bytes']) is bytes\n"
             "assert d['set'] == {3, 's'} and type(d['set']) is set\n"
             "assert d['empty_tuple'] == () and d['tuple5'] == (1, 2, 3, 4, None)\n"
             "assert d['dtype'] is torch.bfloat16\n"
             "assert d['path'] == pathlib.PosixPath('runs/a') and type(d['path']) is "
             "pathlib.PosixPath\n"
             "assert d['info'] == check_written.RunInfo(name='x', lr=0.1, tags=('a',)), d['info']\n"
             "assert d['device'] == torch.device('cuda', 1)\n"
             "od = d['od']\n"
             "assert type(od) is collections.OrderedDict and list(od.items()) == [(5, 'five'), "
             "('z', 2)]\n"
             "assert type(od._metadata) is collections.OrderedDict and len(od._metadata) == 0\n"
             "print('ok')\n",
             QString::fromStdString(path), QString(CKPT_SOURCE_DIR) + "/tests/python"});
    QVERIFY(p.waitForFinished(120000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0 && out.trimmed().endsWith("ok"), qPrintable(out));
  }

  // Trees the writer must refuse, before any file exists.
  void refusals() {
    struct Case {
      const char* message;                        // expected in the error
      std::function<const Value*(Built&)> build;  // returns the root
    };
    auto oneTensor = [](Built& m, auto&& change) {
      Value* root = m.b.dict();
      m.b.set(root, "t", m.f32({2}, 0, 1));
      change(m.table.tensors[0]);
      return root;
    };
    const Case cases[] = {
        {"no entry in the tensor table",
         [](Built& m) {
           Value* root = m.b.dict();
           m.b.set(root, "t", m.b.tensor(5));
           return root;
         }},
        {"no storage class",
         [&](Built& m) { return oneTensor(m, [](TensorInfo& t) { t.dtype = DType::UInt16; }); }},
        {"per_channel_affine",
         [&](Built& m) {
           return oneTensor(m, [](TensorInfo& t) {
             t.dtype = DType::QInt8;
             t.qscheme = "per_channel_affine";
           });
         }},
        {"does not fit",
         [&](Built& m) { return oneTensor(m, [](TensorInfo& t) { t.storageOffset = 1; }); }},
        {"module.name",
         [](Built& m) {
           Value* root = m.b.dict();
           m.b.set(root, "g", m.b.global("nodot"));
           return root;
         }},
    };
    for (const Case& c : cases) {
      Built m;
      const Value* root = c.build(m);
      const std::string path = tmp("refused.pt");
      try {
        m.write(path, root);
        QFAIL(c.message);
      } catch (const FormatError& e) {
        QVERIFY2(std::string(e.what()).find(c.message) != std::string::npos, e.what());
        QVERIFY2(std::string(e.what()).rfind(path + ": ", 0) == 0, e.what());
      }
      QVERIFY(!QFile::exists(QString::fromStdString(path)));
    }
    QVERIFY(!hasTempFile(m_dir.path().toStdString()));
  }

  // (c) Crash safety.
  void crashSafety() {
    const std::string dir = m_dir.path().toStdString() + "/crash";
    QVERIFY(QDir().mkpath(QString::fromStdString(dir)));
    Built m;
    Value* root = m.b.dict();
    m.b.set(root, "w", m.f32({1024, 64}, 0, 1));  // 256 KiB
    const std::string target = dir + "/model.pt";

    // A missing directory.
    const std::string missing = dir + "/no/such/dir/model.pt";
    try {
      m.write(missing, root);
      QFAIL("wrote into a missing directory");
    } catch (const FormatError& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.rfind(missing + ": ", 0) == 0, e.what());
      QVERIFY2(msg.find("No such file or directory") != std::string::npos, e.what());
    }

    // An existing file survives a failure found before writing (a storage
    // whose bytes disagree with numel x element size).
    const std::string old = "previous contents, not a checkpoint";
    writeFile(target, old);
    {
      std::vector<StorageBytes> bytes = m.bytes();
      bytes[0].size -= 4;
      try {
        writeTorchFile(target, root, m.table, bytes);
        QFAIL("a short storage was written");
      } catch (const FormatError& e) {
        QVERIFY2(std::string(e.what()).find("need") != std::string::npos, e.what());
        QVERIFY2(std::string(e.what()).rfind(target + ": ", 0) == 0, e.what());
      }
      QCOMPARE(readFile(target), old);
      QCOMPARE(q(listDir(dir)), QStringList{"model.pt"});
    }

    // ... and a write that fails half way (a file size limit: EFBIG, as a
    // full disk gives ENOSPC): the temporary file is removed.
    {
      struct sigaction ign {
      }, prev{};
      ign.sa_handler = SIG_IGN;
      sigaction(SIGXFSZ, &ign, &prev);
      rlimit saved{};
      getrlimit(RLIMIT_FSIZE, &saved);
      rlimit small = saved;
      small.rlim_cur = 64 * 1024;
      QCOMPARE(setrlimit(RLIMIT_FSIZE, &small), 0);
      std::string msg;
      try {
        m.write(target, root);
      } catch (const FormatError& e) {
        msg = e.what();
      }
      setrlimit(RLIMIT_FSIZE, &saved);
      sigaction(SIGXFSZ, &prev, nullptr);
      QVERIFY2(msg.rfind(target + ": cannot write ", 0) == 0, msg.c_str());
      QVERIFY2(msg.find("File too large") != std::string::npos, msg.c_str());
      QCOMPARE(readFile(target), old);
      QCOMPARE(q(listDir(dir)), QStringList{"model.pt"});
    }

    // An unwritable directory. Tests run as root, where chmod 0555 does not
    // stop writes: a regular file stands where the directory should be
    // (ENOTDIR), and a path under /proc (which refuses new files).
    {
      writeFile(dir + "/notadir", "x");
      const std::string p = dir + "/notadir/model.pt";
      try {
        m.write(p, root);
        QFAIL("wrote below a regular file");
      } catch (const FormatError& e) {
        QVERIFY2(std::string(e.what()).rfind(p + ": cannot create temporary file", 0) == 0,
                 e.what());
        QVERIFY2(std::string(e.what()).find("Not a directory") != std::string::npos, e.what());
      }
      const std::string proc = "/proc/ckptscope_writer_test.pt";
      try {
        m.write(proc, root);
        QFAIL("wrote into /proc");
      } catch (const FormatError& e) {
        QVERIFY2(std::string(e.what()).rfind(proc + ": cannot create temporary file", 0) == 0,
                 e.what());
        qInfo() << "/proc:" << e.what();
      }
      QVERIFY(!QFile::exists(QString::fromStdString(proc)));
    }

    // Success replaces the old file, leaving nothing else.
    m.write(target, root);
    QCOMPARE(q(listDir(dir)), (QStringList{"model.pt", "notadir"}));
    const auto ck = CheckpointFile::open(target);
    QCOMPARE(ck->tensors().size(), size_t(1));
    QCOMPARE(ck->tensorData(0).at(1000), 1000.0);
    // The archive folder is the file's stem.
    QCOMPARE(q(std::string(ck->zip()->entries().front().name)), QString("model/data.pkl"));
  }

  void archiveName() {
    TreeBuilder b;
    Value* root = b.dict();
    const std::string p1 = tmp("caf\xc3\xa9.pt");
    writeTorchFile(p1, root, {}, {});
    QCOMPARE(q(std::string(CheckpointFile::open(p1)->zip()->entries().front().name)),
             QString("archive/data.pkl"));
    const std::string p2 = tmp("named.bin");
    WriteOptions o;
    o.archiveName = "custom";
    writeTorchFile(p2, root, {}, {}, o);
    QCOMPARE(q(std::string(CheckpointFile::open(p2)->zip()->entries().front().name)),
             QString("custom/data.pkl"));
    o.archiveName = "a/b";
    QVERIFY_THROWS_EXCEPTION(FormatError, writeTorchFile(p2, root, {}, {}, o));
  }

  // zip64: the size and offset thresholds, on the header bytes themselves.
  void zip64Thresholds() {
    using namespace writer::zip;
    const uint64_t limit = 0xFFFFFFFFull;
    QVERIFY(!needsZip64Sizes(limit - 1));
    QVERIFY(needsZip64Sizes(limit));
    QVERIFY(!needsZip64Offset(limit - 1));
    QVERIFY(needsZip64Offset(limit));
    const std::string name = "archive/data/0";
    for (uint64_t offset :
         {uint64_t(0), uint64_t(1), uint64_t(77), limit - 1, limit, uint64_t(5) << 32}) {
      for (uint64_t size : {uint64_t(0), uint64_t(100), limit - 1, limit, uint64_t(6) << 32}) {
        const std::string where =
            "offset " + std::to_string(offset) + " size " + std::to_string(size);
        const bool bigSize = size >= limit, bigOffset = offset >= limit;
        // Local header: data 64-byte aligned; zip64 sizes in its extra.
        const std::string lh = localHeader(name, offset, size);
        QVERIFY2(le(lh, 0, 4) == 0x04034b50, where.c_str());
        QVERIFY2((offset + lh.size()) % 64 == 0, where.c_str());
        QVERIFY2(le(lh, 6, 2) == 0x0808 && le(lh, 8, 2) == 0 && le(lh, 14, 4) == 0, where.c_str());
        const uint64_t nameLen = le(lh, 26, 2), extraLen = le(lh, 28, 2);
        QVERIFY2(30 + nameLen + extraLen == lh.size() && lh.substr(30, nameLen) == name,
                 where.c_str());
        const std::string lextra = lh.substr(30 + nameLen);
        const std::string lz = zip64Extra(lextra);
        QVERIFY2(lextra.find("FB") != std::string::npos, where.c_str());
        if (bigSize) {
          QVERIFY2(le(lh, 18, 4) == 0xFFFFFFFF && le(lh, 22, 4) == 0xFFFFFFFF, where.c_str());
          QVERIFY2(lz.size() == 16 && le(lz, 0, 8) == size && le(lz, 8, 8) == size, where.c_str());
        } else {
          QVERIFY2(le(lh, 18, 4) == 0 && le(lh, 22, 4) == 0 && lz.empty(), where.c_str());
        }
        // Data descriptor: 64-bit sizes exactly when the local header has zip64 sizes.
        const std::string dd = dataDescriptor(0x12345678, size);
        QVERIFY2(le(dd, 0, 4) == 0x08074b50 && le(dd, 4, 4) == 0x12345678, where.c_str());
        QVERIFY2(dd.size() == (bigSize ? 24u : 16u), where.c_str());
        QVERIFY2(le(dd, 8, bigSize ? 8 : 4) == size, where.c_str());
        // Central header: 0xFFFFFFFF placeholders and the zip64 extra, in order.
        const std::string ch = centralHeader(name, offset, size, 0xCAFEBABE);
        QVERIFY2(le(ch, 0, 4) == 0x02014b50 && le(ch, 16, 4) == 0xCAFEBABE, where.c_str());
        QVERIFY2(le(ch, 20, 4) == (bigSize ? 0xFFFFFFFF : size) &&
                     le(ch, 24, 4) == (bigSize ? 0xFFFFFFFF : size),
                 where.c_str());
        QVERIFY2(le(ch, 42, 4) == (bigOffset ? 0xFFFFFFFF : offset), where.c_str());
        const std::string cz = zip64Extra(ch.substr(46 + le(ch, 28, 2), le(ch, 30, 2)));
        QVERIFY2(cz.size() == (bigSize ? 16u : 0u) + (bigOffset ? 8u : 0u), where.c_str());
        if (bigSize) QVERIFY2(le(cz, 0, 8) == size && le(cz, 8, 8) == size, where.c_str());
        if (bigOffset) QVERIFY2(le(cz, bigSize ? 16 : 0, 8) == offset, where.c_str());
      }
    }
    // End records: the zip64 record and locator always; 0xFFFFFFFF in the
    // classic record when the directory starts past 4 GiB.
    for (uint64_t cdOffset : {uint64_t(1000), limit - 1, limit, uint64_t(9) << 32}) {
      const std::string e = endRecords(70000, cdOffset, 5000);
      QCOMPARE(e.size(), size_t(56 + 20 + 22));
      QCOMPARE(le(e, 0, 4), uint64_t(0x06064b50));
      QCOMPARE(le(e, 24, 8), uint64_t(70000));
      QCOMPARE(le(e, 40, 8), uint64_t(5000));
      QCOMPARE(le(e, 48, 8), cdOffset);
      QCOMPARE(le(e, 56, 4), uint64_t(0x07064b50));
      QCOMPARE(le(e, 64, 8), cdOffset + 5000);  // where the zip64 record is
      QCOMPARE(le(e, 76, 4), uint64_t(0x06054b50));
      QCOMPARE(le(e, 76 + 8, 2), uint64_t(0xFFFF));  // 70000 entries do not fit
      QCOMPARE(le(e, 76 + 16, 4), cdOffset >= limit ? uint64_t(0xFFFFFFFF) : cdOffset);
    }
  }

  // A big-endian torch zip (byteorder = big): the rewrite swaps to little.
  void bigEndianInput() {
    Built m;
    auto add = [&](DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> littleBytes,
                   std::vector<double> values) {
      const int w = dtypeIsComplex(dtype) ? dtypeSize(dtype) / 2 : dtypeSize(dtype);
      for (size_t i = 0; i + size_t(w) <= littleBytes.size(); i += size_t(w))
        std::reverse(littleBytes.begin() + long(i), littleBytes.begin() + long(i) + w);
      TensorInfo t;
      t.dtype = dtype;
      t.shape = shape;
      t.stride = contiguousStrides(shape);
      t.storage = m.addStorage(dtype, std::move(littleBytes));
      m.table.tensors.push_back(t);
      m.values.push_back(values);
      return m.b.tensor(int64_t(m.table.tensors.size() - 1));
    };
    std::vector<uint8_t> bytes;
    Value* root = m.b.dict();
    putBytes(bytes, std::vector<float>{1.5f, -2.0f, 3.25f, 1e30f, -0.0f, 7.0f});
    m.b.set(root, "f32",
            add(DType::Float32, {2, 3}, bytes, {1.5, -2.0, 3.25, double(1e30f), -0.0, 7.0}));
    putBytes(bytes, std::vector<int16_t>{-2, 300, 32767, -32768});
    m.b.set(root, "i16", add(DType::Int16, {4}, bytes, {-2, 300, 32767, -32768}));
    putBytes(bytes, std::vector<double>{1e300, -0.5, 2.0});
    m.b.set(root, "f64", add(DType::Float64, {3}, bytes, {1e300, -0.5, 2.0}));
    putBytes(bytes, std::vector<float>{1.0f, 2.0f, -3.0f, 0.5f});  // complex64: (1+2j), (-3+0.5j)
    m.b.set(root, "c64", add(DType::Complex64, {2}, bytes, {1.0, -3.0}));
    putBytes(bytes, std::vector<uint8_t>{1, 0, 1});
    m.b.set(root, "mask", add(DType::Bool, {3}, bytes, {1, 0, 1}));

    const std::string swapped = tmp("be_src.pt"), big = tmp("be_big.pt"),
                      out = tmp("be_rewritten.pt");
    m.write(swapped, root);
    const PyResult r = runPython(
        {"set-byteorder", QString::fromStdString(swapped), QString::fromStdString(big), "big"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.output));
    const auto be = CheckpointFile::open(big);
    QVERIFY(be->bigEndian());
    for (size_t i = 0; i < be->tensors().size(); ++i) {
      const TensorData d = be->tensorData(i);
      for (uint64_t k = 0; k < d.numel(); ++k) QVERIFY(sameDouble(d.at(k), m.values[i][k]));
    }
    QVERIFY(be->tensorData(3).complexAt(1) == std::complex<double>(-3.0, 0.5));
    rewriteCheckpoint(*be, out);
    const auto le_ = CheckpointFile::open(out);
    QVERIFY(!le_->bigEndian());
    for (size_t i = 0; i < le_->tensors().size(); ++i) QVERIFY(valuesDiff(*be, *le_, i).empty());

    json got = describe(out)["value"];
    stripPointers(got);
    // describe gives complex tensors as their real parts through .to(float64):
    // compare the rest, and check c64 in Python terms separately.
    const json* c64 = member(got, "c64");
    QVERIFY(c64);
    const std::string diff =
        ckpt::test::compareJson(expectedJson(root->get("f32"), m), *member(got, "f32"));
    QVERIFY2(diff.empty(), diff.c_str());
    for (const char* k : {"i16", "f64"}) {
      json want = expectedJson(root->get(k), m);
      json have = *member(got, k);
      QCOMPARE(QString::fromStdString(have["$tensor"]["values"].dump()),
               QString::fromStdString(want["$tensor"]["values"].dump()));
    }
    QCOMPARE(QString::fromStdString((*member(got, "mask"))["$tensor"]["dtype"].dump()),
             QString("\"bool\""));
  }
};

QTEST_GUILESS_MAIN(TestWriter)
#include "tst_writer.moc"
