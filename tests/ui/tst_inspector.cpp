// The checkpoint inspector: its item models, the parameter hierarchy and
// search, tensor statistics in the background against torch's numbers, the
// optimizer tab by MODEL.md's names, and an offscreen rendering.

#include <QAbstractItemModelTester>
#include <QDir>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeView>
#include <cmath>
#include <functional>

#include <qcustomplot.h>
#include "../core/run_process.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_data.h"
#include "inspector/inspectorwidget.h"
#include "inspector/metadatamodel.h"
#include "inspector/optimizermodel.h"
#include "inspector/parametermodel.h"
#include "inspector/summarywidget.h"
#include "inspector/tensortablemodel.h"
#include "inspector/tensorview.h"
#include "inspector/valuetablemodel.h"

using namespace ckpt;

namespace {

constexpr int kWaitMs = 20000;
const char* const kCheckpoint = "runs/tiny/tiny_step200.pt";

QString fixture(const QString& rel) {
  return QDir(CKPT_FIXTURE_DIR).filePath(rel);
}

double num(const QJsonValue& v) {
  return v.isNull() ? std::nan("") : v.toDouble();
}

bool near(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= tol;
}

// Statistics against stats_reference.py's EXPECT object.
void compareStats(const TensorStats& s, const QJsonObject& e) {
  QCOMPARE(s.count, uint64_t(e["count"].toInteger()));
  QCOMPARE(s.finite, uint64_t(e["finite"].toInteger()));
  QCOMPARE(s.zeros, uint64_t(e["zeros"].toInteger()));
  QCOMPARE(s.nans, uint64_t(e["nans"].toInteger()));
  QVERIFY(near(s.min, num(e["min"]), 0.0));
  QVERIFY(near(s.max, num(e["max"]), 0.0));
  const double scale = std::max(std::fabs(s.min), std::fabs(s.max));
  QVERIFY2(near(s.mean, num(e["mean"]), 1e-13 * scale),
           qPrintable(QString::number(s.mean, 'g', 17)));
  QVERIFY(near(s.std, num(e["std"]), 1e-11 * std::max(num(e["std"]), 1e-300) + 1e-13 * scale));
  QVERIFY(near(s.l2norm, num(e["norm"]), 1e-13 * num(e["norm"])));
}

// Every index of a model, depth first.
void walk(const QAbstractItemModel* m, const QModelIndex& parent,
          const std::function<void(const QModelIndex&)>& fn) {
  for (int r = 0; r < m->rowCount(parent); ++r) {
    const QModelIndex i = m->index(r, 0, parent);
    fn(i);
    walk(m, i, fn);
  }
}

}  // namespace

class TestInspector : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void cleanup();
  void modelsPassTester();
  void keepsSummaryApi();
  void parameterCountsMatchPython();
  void searchFilters();
  void selectingTensorComputesStats_data();
  void selectingTensorComputesStats();
  void selectionMovesOn();
  void valueTableLoadsLazily();
  void tensorTableSelects();
  void optimizerRowsByName();
  void metadataTree();
  void opaqueObjectsByClass();
  void unreadableTensorFails();
  void renderOffscreen();
  void renderDark();
  void largeTensorNoStall();

 private:
  void selectParameter(const QString& name);
  QTemporaryDir m_dir;
  QJsonObject m_ref;
  CheckpointSummary m_summary;
  std::unique_ptr<InspectorWidget> m_w;
};

void TestInspector::initTestCase() {
  QVERIFY(m_dir.isValid());
  const QString out = m_dir.filePath("ref.json");
  const auto r = ckpt::test::runProcess(
      CKPT_TORCH_PYTHON, {CKPT_SOURCE_DIR "/tests/python/stats_reference.py", "checkpoint",
                          fixture(kCheckpoint), out, QString::number(TensorView::kBins)});
  QVERIFY2(r.exitCode == 0, r.err.constData());
  QFile f(out);
  QVERIFY(f.open(QIODevice::ReadOnly));
  m_ref = QJsonDocument::fromJson(f.readAll()).object();
  QVERIFY(!m_ref["numel"].toObject().isEmpty());
  m_summary = summarizeCheckpoint(fixture(kCheckpoint));
  QVERIFY2(m_summary.ok(), qPrintable(m_summary.error));
  QVERIFY(m_summary.file && m_summary.metaTree && m_summary.paramTree);
}

void TestInspector::init() {
  m_w = std::make_unique<InspectorWidget>();
  m_w->resize(1100, 760);
  m_w->show();
  m_w->showSummary(m_summary);
}

void TestInspector::cleanup() {
  m_w.reset();
}

void TestInspector::selectParameter(const QString& name) {
  const QModelIndex src = m_w->parameterModel()->find(name);
  QVERIFY2(src.isValid(), qPrintable(name));
  const QModelIndex proxy = m_w->parameterProxy()->mapFromSource(src);
  QVERIFY(proxy.isValid());
  m_w->parameterView()->setCurrentIndex(proxy);
}

void TestInspector::modelsPassTester() {
  const auto mode = QAbstractItemModelTester::FailureReportingMode::QtTest;
  QAbstractItemModelTester t1(m_w->metadataModel(), mode);
  QAbstractItemModelTester t2(m_w->parameterModel(), mode);
  QAbstractItemModelTester t3(m_w->parameterProxy(), mode);
  QAbstractItemModelTester t4(m_w->optimizerModel(), mode);
  QAbstractItemModelTester t5(m_w->tensorView()->valueModel(), mode);
  QAbstractItemModelTester t6(m_w->tensorModel(), mode);
  // Changes while the testers watch: a search, stats arriving, a tensor, a reset.
  m_w->setParameterFilter("ffn");
  m_w->setParameterFilter({});
  QSignalSpy opt(m_w.get(), &InspectorWidget::optimizerStatsReady);
  m_w->computeOptimizerStats();
  QVERIFY(opt.wait(kWaitMs));
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  selectParameter("token_embed.weight");
  QVERIFY(ready.wait(kWaitMs));
  QSignalSpy loaded(m_w->tensorView()->valueModel(), &ValueTableModel::blockLoaded);
  (void)m_w->tensorView()->valueModel()->index(0, 0).data();
  QVERIFY(loaded.wait(kWaitMs));
  m_w->showMessage("nothing", {});
  m_w->showSummary(m_summary);
}

void TestInspector::keepsSummaryApi() {
  QCOMPARE(m_w->shownPath(), fixture(kCheckpoint));
  QVERIFY(m_w->text().contains("Step"));
  QCOMPARE(m_w->tensorModel()->rowCount(), int(m_summary.tensors.size()));
  m_w->showMessage("Scanning...", "<p>wait</p>");
  QVERIFY(m_w->shownPath().isEmpty());
  QCOMPARE(m_w->tensorModel()->rowCount(), 0);
  QCOMPARE(m_w->parameterModel()->rowCount(), 0);
  QCOMPARE(m_w->metadataModel()->rowCount(), 0);
}

void TestInspector::parameterCountsMatchPython() {
  const QJsonObject numel = m_ref["numel"].toObject();
  // Python: the de-duplicated list is the state dict minus the tied lm_head.weight (MODEL.md).
  QSet<QString> tied;
  for (const QString& k : numel.keys())
    if (!m_ref["optimizer"].toObject().contains(k)) tied << k;
  QCOMPARE(tied, QSet<QString>{"lm_head.weight"});
  auto expected = [&](const QString& prefix) {
    quint64 n = 0;
    for (const QString& k : numel.keys())
      if (!tied.contains(k) && (k == prefix || k.startsWith(prefix + '.')))
        n += quint64(numel[k].toInteger());
    return n;
  };
  int nodes = 0, leaves = 0;
  const ParameterModel* m = m_w->parameterModel();
  walk(m, {}, [&](const QModelIndex& i) {
    const QString name = i.data(int(ParameterModel::Role::FullName)).toString();
    const quint64 shown = m->index(i.row(), int(ParameterModel::Column::Parameters), i.parent())
                              .data(int(ParameterModel::Role::SortKey))
                              .toULongLong();
    const bool leaf = m->rowCount(i) == 0;
    ++nodes;
    if (leaf) {
      ++leaves;
      // A leaf shows its own numel, tied or not.
      QCOMPARE(shown, quint64(numel[name].toInteger()));
      QCOMPARE(i.data(int(ParameterModel::Role::TensorIndex)).toInt() >= 0, true);
    } else {
      QCOMPARE(shown, expected(name));
    }
  });
  QCOMPARE(leaves, numel.size());
  QVERIFY(nodes > leaves);
  quint64 total = 0;
  for (const QString& k : numel.keys())
    if (!tied.contains(k)) total += quint64(numel[k].toInteger());
  QCOMPARE(quint64(m->root()->parameters), total);
  // The tie is shown.
  const QModelIndex head = m->find("lm_head.weight");
  QCOMPARE(m->index(head.row(), int(ParameterModel::Column::Tied), head.parent()).data().toString(),
           QString("token_embed.weight"));
  // Hierarchy: blocks -> 0 -> attn -> q_proj -> weight.
  const QModelIndex q = m->find("blocks.0.attn.q_proj.weight");
  QVERIFY(q.isValid());
  QCOMPARE(q.parent().data().toString(), QString("q_proj"));
  QCOMPARE(q.parent().parent().parent().parent().data().toString(), QString("blocks"));
  QCOMPARE(m->index(q.row(), int(ParameterModel::Column::Shape), q.parent()).data().toString(),
           QString("[32, 32]"));
  QCOMPARE(m->index(q.row(), int(ParameterModel::Column::DType), q.parent()).data().toString(),
           QString("float32"));
}

void TestInspector::searchFilters() {
  QSortFilterProxyModel* p = m_w->parameterProxy();
  m_w->setParameterFilter("Q_PROJ");
  QStringList leaves;
  walk(p, {}, [&](const QModelIndex& i) {
    if (p->rowCount(i) == 0) leaves << i.data(int(ParameterModel::Role::FullName)).toString();
  });
  QCOMPARE(leaves, QStringList({"blocks.0.attn.q_proj.weight", "blocks.1.attn.q_proj.weight"}));
  m_w->setParameterFilter("no such parameter");
  QCOMPARE(p->rowCount(), 0);
  m_w->setParameterFilter({});
  QCOMPARE(p->rowCount(), m_w->parameterModel()->rowCount());
}

void TestInspector::selectingTensorComputesStats_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<bool>("heat");
  QTest::newRow("embedding") << "token_embed.weight" << true;
  QTest::newRow("q_proj") << "blocks.1.attn.q_proj.weight" << true;
  QTest::newRow("bias") << "blocks.0.ffn.gate.bias" << false;
  QTest::newRow("norm (constant)") << "final_norm.weight" << false;
}

void TestInspector::selectingTensorComputesStats() {
  QFETCH(QString, name);
  QFETCH(bool, heat);
  m_w->setCurrentTab(InspectorWidget::Tab::Parameters);
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  selectParameter(name);
  QVERIFY(ready.wait(kWaitMs));
  const int tensor = ready.last().at(0).toInt();
  QCOMPARE(tensor,
           m_w->parameterModel()->find(name).data(int(ParameterModel::Role::TensorIndex)).toInt());
  const auto& a = m_w->tensorView()->analysis();
  QVERIFY(a);
  const QJsonObject e = m_ref["tensors"].toObject()[name].toObject();
  compareStats(a->stats, e);
  const QJsonObject h = e["hist"].toObject();
  QCOMPARE(a->histogram.lo, h["lo"].toDouble());
  QCOMPARE(a->histogram.hi, h["hi"].toDouble());
  const QJsonArray counts = h["counts"].toArray();
  QCOMPARE(a->histogram.bins(), counts.size());
  for (int i = 0; i < counts.size(); ++i)
    QCOMPARE(a->histogram.counts[size_t(i)], uint64_t(counts[i].toInteger()));
  QCOMPARE(a->heatMap.rows > 0, heat);
  // The plots show it.
  auto* bars = qobject_cast<QCPBars*>(m_w->tensorView()->histogramPlot()->plottable(0));
  QVERIFY(bars);
  QCOMPARE(bars->data()->size(), TensorView::kBins);
  QVERIFY(m_w->tensorView()->statsText().contains("L2 norm"));
}

void TestInspector::selectionMovesOn() {
  // Three selections in a row without waiting: only the last one reports.
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  selectParameter("token_embed.weight");
  selectParameter("blocks.0.attn.k_proj.weight");
  selectParameter("blocks.1.ffn.proj.weight");
  QVERIFY(ready.wait(kWaitMs));
  QTest::qWait(200);  // any stale result would have arrived by now
  QCOMPARE(ready.count(), 1);
  const QString name = "blocks.1.ffn.proj.weight";
  QCOMPARE(ready.last().at(0).toInt(),
           m_w->parameterModel()->find(name).data(int(ParameterModel::Role::TensorIndex)).toInt());
  compareStats(m_w->tensorView()->analysis()->stats, m_ref["tensors"].toObject()[name].toObject());
}

void TestInspector::valueTableLoadsLazily() {
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  selectParameter("blocks.0.ffn.gate.weight");  // [128, 32]
  QVERIFY(ready.wait(kWaitMs));
  ValueTableModel* v = m_w->tensorView()->valueModel();
  QCOMPARE(v->rowCount(), 128);
  QCOMPARE(v->columnCount(), 32);
  // Not loaded until asked; then read in the background.
  QSignalSpy loaded(v, &ValueTableModel::blockLoaded);
  const QModelIndex cell = v->index(100, 7);
  if (!cell.data(int(ValueTableModel::Role::Value)).isValid()) QVERIFY(loaded.wait(kWaitMs));
  const int t = ready.last().at(0).toInt();
  const TensorData d = m_summary.file->tensorData(size_t(t));
  QCOMPARE(cell.data(int(ValueTableModel::Role::Value)).toDouble(), d.at(100 * 32 + 7));

  // A window of 40 rows over the 128: "go to row" moves it, headers keep the true row.
  QAbstractItemModelTester tester(v, QAbstractItemModelTester::FailureReportingMode::QtTest);
  v->setWindowRows(40);
  v->setTensor(m_w->tensorView()->valueModel() == v ? std::make_shared<const TensorData>(d)
                                                    : nullptr);
  QCOMPARE(v->rowCount(), 40);
  QCOMPARE(v->totalRows(), int64_t(128));
  m_w->tensorView()->goToRow(117);
  QVERIFY(v->firstRow() > 0);
  QVERIFY(v->firstRow() + v->rowCount() <= 128);
  const int r = int(117 - v->firstRow());
  QCOMPARE(v->headerData(r, Qt::Vertical).toString(), QString("117"));
  QCOMPARE(m_w->tensorView()->valueView()->currentIndex().row(), r);
  const QModelIndex far = v->index(r, 31);
  if (!far.data(int(ValueTableModel::Role::Value)).isValid()) QVERIFY(loaded.wait(kWaitMs));
  QCOMPARE(far.data(int(ValueTableModel::Role::Value)).toDouble(), d.at(117 * 32 + 31));
}

void TestInspector::tensorTableSelects() {
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  QTableView* table = m_w->summaryWidget()->tensorView();
  table->setCurrentIndex(table->model()->index(3, 0));
  QVERIFY(ready.wait(kWaitMs));
  QCOMPARE(ready.last().at(0).toInt(), 3);
}

void TestInspector::optimizerRowsByName() {
  QSignalSpy done(m_w.get(), &InspectorWidget::optimizerStatsReady);
  m_w->setCurrentTab(InspectorWidget::Tab::Optimizer);  // starts the job
  QVERIFY(done.wait(kWaitMs));
  const QJsonObject opt = m_ref["optimizer"].toObject();
  OptimizerModel* m = m_w->optimizerModel();
  QCOMPARE(m->rowCount(), opt.size());
  for (int r = 0; r < m->rowCount(); ++r) {
    const QString name = m->index(r, int(OptimizerModel::Column::Name)).data().toString();
    QVERIFY2(opt.contains(name), qPrintable(name));
    const QJsonObject e = opt[name].toObject();
    QCOMPARE(m->index(r, int(OptimizerModel::Column::Index)).data().toString().toInt(),
             e["index"].toInt());
    QCOMPARE(m->index(r, int(OptimizerModel::Column::Step))
                 .data(int(OptimizerModel::Role::SortKey))
                 .toDouble(),
             e["step"].toDouble());
    const auto& s = m->stats()[size_t(r)];
    QVERIFY(s.expAvg && s.expAvgSq);
    compareStats(*s.expAvg, e["exp_avg"].toObject());
    compareStats(*s.expAvgSq, e["exp_avg_sq"].toObject());
  }
  // MODEL.md order: state 0 is the embedding, state 1 block 0's sinks.
  QCOMPARE(m->index(0, 0).data().toString(), QString("token_embed.weight"));
  QCOMPARE(m->index(1, 0).data().toString(), QString("blocks.0.attn.sink_states"));
  // A v column of a row inspects that parameter's exp_avg_sq, any other column its exp_avg.
  QTableView* view = m_w->optimizerView();
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  view->setCurrentIndex(view->model()->index(2, int(OptimizerModel::Column::SqMean)));
  QVERIFY(ready.wait(kWaitMs));
  const QString name2 = m->index(2, 0).data().toString();
  QCOMPARE(ready.last().at(0).toInt(),
           m->index(2, 0).data(int(OptimizerModel::Role::ExpAvgSqTensor)).toInt());
  compareStats(m_w->tensorView()->analysis()->stats,
               opt[name2].toObject()["exp_avg_sq"].toObject());
  view->setCurrentIndex(view->model()->index(2, int(OptimizerModel::Column::Name)));
  QVERIFY(ready.wait(kWaitMs));
  QCOMPARE(ready.last().at(0).toInt(),
           m->index(2, 0).data(int(OptimizerModel::Role::ExpAvgTensor)).toInt());
  compareStats(m_w->tensorView()->analysis()->stats, opt[name2].toObject()["exp_avg"].toObject());
  QVERIFY(m_w->tensorView()->statsText().startsWith("exp_avg of " + name2));
}

void TestInspector::metadataTree() {
  const MetadataModel* m = m_w->metadataModel();
  QStringList top;
  for (int r = 0; r < m->rowCount(); ++r) top << m->index(r, 0).data().toString();
  for (const char* k : {"model_state", "optimizer", "metadata", "step", "loss"})
    QVERIFY2(top.contains(k), k);
  const int metaRow = int(top.indexOf("metadata"));
  const QModelIndex meta = m->index(metaRow, 0);
  QModelIndex config;
  for (int r = 0; r < m->rowCount(meta); ++r)
    if (m->index(r, 0, meta).data().toString() == "config") config = m->index(r, 0, meta);
  QVERIFY(config.isValid());
  QCOMPARE(m->rowCount(config), 21);  // every ModernLLMConfig field
  QCOMPARE(m->index(config.row(), int(MetadataModel::Column::Type), meta).data().toString(),
           QString("dict"));
  // A tensor node names its dtype and shape and selects the tensor.
  const QModelIndex ms = m->index(int(top.indexOf("model_state")), 0);
  const QModelIndex first = m->index(0, int(MetadataModel::Column::Value), ms);
  QCOMPARE(first.data().toString(), QString("float32 [96, 32]"));
  QVERIFY(first.data(int(MetadataModel::Role::TensorIndex)).toInt() >= 0);
}

void TestInspector::opaqueObjectsByClass() {
  const CheckpointSummary s = summarizeCheckpoint(fixture("pyobjects.pt"));
  QVERIFY(s.ok());
  m_w->showSummary(s);
  const MetadataModel* m = m_w->metadataModel();
  QModelIndex info;
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, 0).data().toString() == "info") info = m->index(r, 0);
  QVERIFY(info.isValid());
  QCOMPARE(m->index(info.row(), int(MetadataModel::Column::Type)).data().toString(),
           QString("object"));
  QVERIFY(m->index(info.row(), int(MetadataModel::Column::Value))
              .data()
              .toString()
              .contains("RunInfo"));
  // Its state (the dataclass fields) as children.
  QStringList children;
  walk(m, info, [&](const QModelIndex& i) { children << i.data().toString(); });
  QVERIFY2(children.contains("state") && children.contains("lr"), qPrintable(children.join(",")));
  QCOMPARE(m_w->parameterModel()->rowCount(), 0);  // no model state: no crash, no rows
}

void TestInspector::unreadableTensorFails() {
  // dtypes.pt's meta tensors have no bytes: a message, not a crash or a hang.
  const CheckpointSummary s = summarizeCheckpoint(fixture("dtypes.pt"));
  QVERIFY(s.ok());
  m_w->showSummary(s);
  int meta = -1;
  for (size_t i = 0; i < s.tensors.size(); ++i)
    if (s.tensors[i].name == "meta") meta = int(i);
  QVERIFY(meta >= 0);
  QSignalSpy failed(m_w->tensorView(), &TensorView::statsFailed);
  m_w->inspectTensor(meta);
  QVERIFY(failed.wait(kWaitMs));
  QVERIFY(!m_w->tensorView()->analysis());
  QVERIFY(m_w->tensorView()->statsText().contains("Cannot read"));
  // A readable one of the same file still works afterwards (bfloat16 with NaN/Inf).
  int bf16 = -1;
  for (size_t i = 0; i < s.tensors.size(); ++i)
    if (s.tensors[i].name == "bfloat16") bf16 = int(i);
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  m_w->inspectTensor(bf16);
  QVERIFY(ready.wait(kWaitMs));
  QCOMPARE(m_w->tensorView()->analysis()->stats.nans, uint64_t(1));
}

void TestInspector::renderOffscreen() {
  const QString dir = QDir(CKPT_BINARY_DIR).filePath("tests/ui/inspector-shots");
  QDir().mkpath(dir);
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  m_w->setCurrentTab(InspectorWidget::Tab::Tensor);
  QApplication::processEvents();
  selectParameter("token_embed.weight");
  QVERIFY(ready.wait(kWaitMs));
  QSignalSpy loaded(m_w->tensorView()->valueModel(), &ValueTableModel::blockLoaded);
  QApplication::processEvents();
  loaded.wait(2000);
  QApplication::processEvents();
  QImage tensorShot = m_w->grab().toImage();
  QVERIFY(tensorShot.save(dir + "/tensor.png"));
  m_w->setCurrentTab(InspectorWidget::Tab::Parameters);
  QVERIFY(m_w->grab().save(dir + "/parameters.png"));
  QSignalSpy done(m_w.get(), &InspectorWidget::optimizerStatsReady);
  m_w->setCurrentTab(InspectorWidget::Tab::Optimizer);
  QVERIFY(done.wait(kWaitMs));
  QVERIFY(m_w->grab().save(dir + "/optimizer.png"));
  m_w->setCurrentTab(InspectorWidget::Tab::Metadata);
  QVERIFY(m_w->grab().save(dir + "/metadata.png"));
  // Not blank: the tensor page has many colours (heat map, bars, text).
  QSet<QRgb> colours;
  for (int y = 0; y < tensorShot.height(); y += 4)
    for (int x = 0; x < tensorShot.width(); x += 4) colours.insert(tensorShot.pixel(x, y));
  QVERIFY2(colours.size() > 50, qPrintable(QString::number(colours.size())));
}

void TestInspector::renderDark() {
  // Plots take their colours from the palette: readable on a dark one too.
  const QPalette saved = QApplication::palette();
  QPalette dark;
  dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
  dark.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
  dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
  dark.setColor(QPalette::AlternateBase, QColor(0x26, 0x26, 0x26));
  dark.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
  dark.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
  dark.setColor(QPalette::ButtonText, QColor(0xe0, 0xe0, 0xe0));
  dark.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
  InspectorWidget w;  // made light, switched to dark: the plots follow
  w.resize(1100, 760);
  w.show();
  QApplication::setPalette(dark);
  w.showSummary(m_summary);
  w.setCurrentTab(InspectorWidget::Tab::Tensor);
  QSignalSpy ready(w.tensorView(), &TensorView::statsReady);
  w.inspectTensor(w.parameterModel()
                      ->find("blocks.0.ffn.gate.weight")
                      .data(int(ParameterModel::Role::TensorIndex))
                      .toInt());
  QVERIFY(ready.wait(kWaitMs));
  QSignalSpy loaded(w.tensorView()->valueModel(), &ValueTableModel::blockLoaded);
  QApplication::processEvents();
  loaded.wait(2000);
  const QString dir = QDir(CKPT_BINARY_DIR).filePath("tests/ui/inspector-shots");
  const QImage shot = w.grab().toImage();
  QVERIFY(shot.save(dir + "/tensor-dark.png"));
  // The histogram's background is the dark base colour.
  QCustomPlot* hist = w.tensorView()->histogramPlot();
  const QPoint corner = hist->mapTo(&w, QPoint(3, 3));
  QCOMPARE(shot.pixelColor(corner), dark.color(QPalette::Base));
  QApplication::setPalette(saved);
}

// A real checkpoint's 38.6M-element embedding (bench/run_bench.sh writes
// one): the time to statistics and the longest the GUI thread went without
// running its event loop meanwhile. Only when CKPT_INSPECTOR_BIG names the file.
void TestInspector::largeTensorNoStall() {
  const QString path = qEnvironmentVariable("CKPT_INSPECTOR_BIG");
  if (path.isEmpty()) QSKIP("set CKPT_INSPECTOR_BIG to a large checkpoint (build/bench-data/*.pt)");
  QElapsedTimer clock;
  clock.start();
  const CheckpointSummary s = summarizeCheckpoint(path);
  QVERIFY2(s.ok(), qPrintable(s.error));
  const qint64 summaryMs = clock.elapsed();
  clock.restart();
  m_w->showSummary(s);
  const qint64 showMs = clock.elapsed();
  m_w->setCurrentTab(InspectorWidget::Tab::Tensor);
  QApplication::processEvents();

  // Ticks every 5 ms; the longest gap between two is the worst stall.
  qint64 worst = 0, last = 0;
  QElapsedTimer ticks;
  QTimer timer;
  timer.setInterval(5);
  connect(&timer, &QTimer::timeout, this, [&] {
    const qint64 now = ticks.elapsed();
    worst = std::max(worst, now - last);
    last = now;
  });
  QSignalSpy ready(m_w->tensorView(), &TensorView::statsReady);
  QSignalSpy opt(m_w.get(), &InspectorWidget::optimizerStatsReady);
  ticks.start();
  timer.start();
  clock.restart();
  selectParameter("token_embed.weight");
  QVERIFY(ready.wait(60000));
  const qint64 statsMs = clock.elapsed();
  QSignalSpy loaded(m_w->tensorView()->valueModel(), &ValueTableModel::blockLoaded);
  loaded.wait(3000);
  QApplication::processEvents();
  const qint64 worstStats = worst;
  timer.stop();  // grab() below renders the whole window: not a stall a user sees
  const QString dir = QDir(CKPT_BINARY_DIR).filePath("tests/ui/inspector-shots");
  QDir().mkpath(dir);
  QVERIFY(m_w->grab().save(dir + "/tensor-large.png"));
  // The heat map follows the plot's size: fewer cells in a smaller window.
  const int rowsBefore = m_w->tensorView()->analysis()->heatMap.rows;
  QSignalSpy resampled(m_w->tensorView(), &TensorView::heatMapResampled);
  m_w->resize(1100, 520);
  QVERIFY(resampled.wait(kWaitMs));
  const int rowsAfter = m_w->tensorView()->analysis()->heatMap.rows;
  QVERIFY2(rowsAfter < rowsBefore, qPrintable(QString("%1 -> %2").arg(rowsBefore).arg(rowsAfter)));
  QCOMPARE(rowsAfter, std::clamp(m_w->tensorView()->heatMapPlot()->height(), 128, 1024));
  clock.restart();
  worst = 0;
  last = ticks.elapsed();
  timer.start();
  m_w->computeOptimizerStats();
  QVERIFY(opt.wait(120000));
  const qint64 optMs = clock.elapsed();
  timer.stop();
  qInfo(
      "summary %lld ms (pool thread), showSummary %lld ms (GUI), stats+histogram+heat map of %s: "
      "%lld ms, "
      "optimizer statistics: %lld ms; worst GUI-thread gap: %lld ms (tensor, display included), "
      "%lld ms (optimizer)",
      summaryMs, showMs, qPrintable(m_w->tensorView()->statsText().section('\n', 1, 1)), statsMs,
      optMs, worstStats, worst);
  // The goal is 50 ms. A shared, loaded machine can deschedule the GUI
  // thread for longer than that on its own, so the test fails only on what a
  // computation on the GUI thread would cost (the statistics take ~200 ms).
  if (std::max(worst, worstStats) > 50) qWarning("GUI-thread gap over 50 ms (machine load?)");
  QVERIFY2(std::max(worst, worstStats) < 150,
           "GUI thread stalled");  // 5 ms ticks on a loaded 2-core machine: some slack
}

QTEST_MAIN(TestInspector)
#include "tst_inspector.moc"
