// The inspector's Shards tab on checkpoints written by many ranks, driven as
// a person does: a click on the checkpoint's row in the browser, on the
// Shards tab, on a tensor's row. What it shows (chunk offsets, sizes, files,
// the colours of the split picture, the incomplete tensors of a missing
// rank) is checked against what make_sharded.py wrote (manifest.json: the
// chunks it pickled into .metadata), not against our reader.

#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMap>
#include <QRegularExpression>
#include <QTableView>
#include <QTemporaryDir>
#include <tuple>

#include "gestures.h"
#include "inspector/inspectorwidget.h"
#include "inspector/shardview.h"
#include "inspector/tensorview.h"

using namespace ckpt;

namespace {

QString cell(const QAbstractItemModel* m, int row, int column) {
  return m->index(row, column).data(Qt::DisplayRole).toString();
}

QString dimsText(const QJsonArray& a) {
  QStringList parts;
  for (const QJsonValue& v : a) parts << QString::number(v.toInteger());
  return "[" + parts.join(", ") + "]";
}

bool copyTree(const QString& from, const QString& to) {
  if (!QDir().mkpath(to)) return false;
  for (const QFileInfo& f :
       QDir(from).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden)) {
    const QString target = to + "/" + f.fileName();
    if (f.isDir() ? !copyTree(f.filePath(), target) : !QFile::copy(f.filePath(), target))
      return false;
  }
  return true;
}

bool reddish(const QColor& c) {
  return c.red() > c.green() + 30 && c.red() > c.blue() + 30;
}

}  // namespace

class TestShardView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void unevenSplit();
  void missingRank();
  void deepSpeedMissingRank();

 private:
  // Opens the scratch folder, clicks the row of `folder` and the Shards tab.
  void openShards(MainWindow& w, const QString& folder);
  // Clicks the row of logical tensor `name` in the Shards tab; its row.
  int clickTensor(ShardView* v, const QString& name);
  // The chunk table and picture of the tensor shown against the manifest's chunks.
  void compareChunks(ShardView* v, const QJsonObject& tensor, const QJsonArray& chunks,
                     const QString& missingFile);

  QTemporaryDir m_dir;
  QJsonObject m_layouts;
};

void TestShardView::initTestCase() {
  QVERIFY(m_dir.isValid());
  const QString root = QDir(CKPT_FIXTURE_DIR).filePath("sharded");
  QFile f(root + "/manifest.json");
  QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName()));
  m_layouts = QJsonDocument::fromJson(f.readAll()).object()["layouts"].toObject();
  QVERIFY(m_layouts.contains("dcp_ws3") && m_layouts.contains("hostile/dcp_missing"));
  QVERIFY(copyTree(root + "/dcp_ws3", m_dir.filePath("run/dcp_ws3")));
  QVERIFY(copyTree(root + "/hostile/dcp_missing", m_dir.filePath("run/dcp_missing")));
  QVERIFY(copyTree(root + "/hostile/ds_missing/global_step1000", m_dir.filePath("run/ds_missing")));
  QVERIFY(QFile::copy(root + "/reference.pt", m_dir.filePath("run/reference.pt")));
}

void TestShardView::openShards(MainWindow& w, const QString& folder) {
  QVERIFY(openWindow(w, {m_dir.path()}, {1000, 700}));
  // A single file first: it has no Shards tab.
  clickRow(w, m_dir.filePath("run/reference.pt"));
  QTRY_VERIFY(w.inspector()->shownPath().endsWith("reference.pt"));
  QTabWidget* tabs = w.inspector()->tabs();
  QVERIFY(!tabs->isTabVisible(int(InspectorWidget::Tab::Shards)));

  clickRow(w, folder);
  QTRY_VERIFY2(w.inspector()->shownPath() == folder, qPrintable(w.inspector()->shownPath()));
  QVERIFY(tabs->isTabVisible(int(InspectorWidget::Tab::Shards)));
  clickTab(tabs, "Shards");
  QCOMPARE(tabs->currentIndex(), int(InspectorWidget::Tab::Shards));
  QVERIFY(w.inspector()->shardView()->isVisible());
}

int TestShardView::clickTensor(ShardView* v, const QString& name) {
  QTableView* view = v->tensorView();
  const QAbstractItemModel* m = view->model();
  for (int r = 0; r < m->rowCount(); ++r) {
    if (cell(m, r, int(ShardTensorModel::Column::Name)) != name) continue;
    const QModelIndex i = m->index(r, 0);
    view->scrollTo(i);
    const QRect rect = view->visualRect(i);
    if (rect.isEmpty()) return -1;
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, rect.center());
    return r;
  }
  return -1;
}

void TestShardView::compareChunks(ShardView* v, const QJsonObject& tensor, const QJsonArray& chunks,
                                  const QString& missingFile) {
  const QString name = "model." + tensor["name"].toString();
  const int row = clickTensor(v, name);
  QVERIFY2(row >= 0, qPrintable(name + " is not listed"));
  QCOMPARE(v->tensorIndex(), row);
  QVERIFY2(v->detail()->text().contains(name), qPrintable(v->detail()->text()));
  const QAbstractItemModel* tm = v->tensorModel();
  QCOMPARE(cell(tm, row, int(ShardTensorModel::Column::DType)), tensor["dtype"].toString());
  QCOMPARE(cell(tm, row, int(ShardTensorModel::Column::Shape)),
           dimsText(tensor["shape"].toArray()));
  const bool incomplete = tensor["incomplete"].toBool();
  QCOMPARE(cell(tm, row, int(ShardTensorModel::Column::Status)),
           incomplete ? QStringLiteral("incomplete") : QStringLiteral("complete"));
  if (incomplete)
    QVERIFY2(v->detail()->text().contains("Incomplete"), qPrintable(v->detail()->text()));

  // The chunk rows: rank, file, offsets, sizes as the writer placed them.
  const QAbstractItemModel* cm = v->chunkView()->model();
  QCOMPARE(cm->rowCount(), int(chunks.size()));
  using C = ShardChunkModel::Column;
  const QJsonArray shape = tensor["shape"].toArray();
  const QImage image = v->picture()->grab().toImage();
  const QRect area = v->picture()->area();
  QList<QColor> seen;
  for (int i = 0; i < chunks.size(); ++i) {
    const QJsonObject c = chunks[i].toObject();
    const QString file = c["file"].toString();
    const bool missing = file == missingFile;
    QCOMPARE(cell(cm, i, int(C::Rank)), QString::number(c["rank"].toInt()));
    QCOMPARE(cell(cm, i, int(C::File)), file);
    QCOMPARE(cell(cm, i, int(C::Offsets)), dimsText(c["offsets"].toArray()));
    QCOMPARE(cell(cm, i, int(C::Sizes)), dimsText(c["sizes"].toArray()));
    QCOMPARE(cell(cm, i, int(C::State)),
             missing ? QStringLiteral("missing") : QStringLiteral("present"));
    const QColor swatch = cm->index(i, int(C::Rank)).data(Qt::DecorationRole).value<QColor>();
    QVERIFY(swatch.isValid());

    // In the picture (dim 0 down, dim 1 across; a vector across), the
    // chunk's region has its swatch's colour, a missing one is red.
    const QJsonArray off = c["offsets"].toArray(), size = c["sizes"].toArray();
    double x = area.left(), y = area.top(), w = area.width(), h = area.height();
    const auto place = [](double from, double length, qint64 o, qint64 s, qint64 total) {
      return std::pair<double, double>(from + length * double(o) / double(total),
                                       length * double(s) / double(total));
    };
    if (shape.size() == 1)
      std::tie(x, w) = place(area.left(), area.width(), off[0].toInteger(), size[0].toInteger(),
                             shape[0].toInteger());
    if (shape.size() >= 2) {
      std::tie(y, h) = place(area.top(), area.height(), off[0].toInteger(), size[0].toInteger(),
                             shape[0].toInteger());
      std::tie(x, w) = place(area.left(), area.width(), off[1].toInteger(), size[1].toInteger(),
                             shape[1].toInteger());
    }
    if (w < 8 || h < 8) continue;  // a 0-size chunk (listed above) is not drawn
    const QColor pixel = image.pixelColor(int(x) + 3, int(y) + 3);
    if (missing) {
      QVERIFY2(reddish(pixel), qPrintable(name + " " + file + ": " + pixel.name()));
    } else {
      QCOMPARE(pixel.name(), swatch.name());
      for (const QColor& other : seen) QVERIFY(other != pixel);  // each rank its own colour
      seen << pixel;
    }
  }
}

// World size 3, uneven: token_embed's 10 rows as 4, 4, 2; sink_states' 2 rows
// as 1, 1, 0 (an empty chunk on rank 2); scale and position_ids on rank 0 only.
void TestShardView::unevenSplit() {
  MainWindow w;
  const QString folder = m_dir.filePath("run/dcp_ws3");
  openShards(w, folder);
  if (QTest::currentTestFailed()) return;
  ShardView* v = w.inspector()->shardView();
  const QJsonObject layout = m_layouts["dcp_ws3"].toObject();
  const QJsonArray tensors = layout["tensors"].toArray();
  QCOMPARE(v->tensorModel()->rowCount(), int(tensors.size()));
  QVERIFY2(v->heading()->text().contains("sharded: DCP, 3 ranks, 4 files"),
           qPrintable(v->heading()->text()));
  QVERIFY(!v->heading()->text().contains("incomplete"));
  const QJsonObject chunks = layout["chunks"].toObject();
  for (const QJsonValue& t : tensors) {
    const QString key = "model." + t["name"].toString();
    compareChunks(v, t.toObject(), chunks[key].toArray(), QString());
    if (QTest::currentTestFailed()) return;
  }
  // The empty chunk is a row of its own: rank 2, sizes [0, 6].
  QVERIFY(clickTensor(v, "model.blocks.0.attn.sink_states") >= 0);
  QCOMPARE(cell(v->chunkModel(), 2, int(ShardChunkModel::Column::Sizes)), QStringLiteral("[0, 6]"));
  QCOMPARE(cell(v->chunkModel(), 2, int(ShardChunkModel::Column::Elements)), QStringLiteral("0"));
  // Picking a tensor there also shows it in the Tensor tab.
  QTRY_COMPARE(w.inspector()->tensorView()->tensorIndex(), v->tensorIndex());
}

// Rank 1's file is gone: the tensors with a chunk there are incomplete and
// show that chunk as missing; the others are complete and still listed.
void TestShardView::missingRank() {
  MainWindow w;
  const QString folder = m_dir.filePath("run/dcp_missing");
  openShards(w, folder);
  if (QTest::currentTestFailed()) return;
  ShardView* v = w.inspector()->shardView();
  const QJsonObject layout = m_layouts["hostile/dcp_missing"].toObject();
  const QString missing = layout["missing"].toString();
  QCOMPARE(missing, QStringLiteral("__1_0.distcp"));
  const QJsonArray tensors = layout["tensors"].toArray();
  QCOMPARE(v->tensorModel()->rowCount(), int(tensors.size()));
  int incomplete = 0;
  for (const QJsonValue& t : tensors) incomplete += t["incomplete"].toBool() ? 1 : 0;
  QVERIFY(incomplete > 0 && incomplete < tensors.size());
  const QString heading = v->heading()->text();
  QVERIFY2(heading.contains(QString("%1 incomplete").arg(incomplete)), qPrintable(heading));
  QVERIFY2(heading.contains(missing + " (rank 1, missing)"), qPrintable(heading));
  const QJsonObject chunks = layout["chunks"].toObject();
  for (const QJsonValue& t : tensors) {
    const QString key = "model." + t["name"].toString();
    compareChunks(v, t.toObject(), chunks[key].toArray(), missing);
    if (QTest::currentTestFailed()) return;
  }
  // An incomplete row is drawn in red.
  const int row = clickTensor(v, "model.token_embed.weight");
  QVERIFY(row >= 0);
  const QVariant fg = v->tensorModel()->index(row, 0).data(Qt::ForegroundRole);
  QVERIFY(fg.isValid() && reddish(fg.value<QBrush>().color()));

  // Another sharded checkpoint keeps the Shards tab in front; a single file
  // has none and goes back to the Summary.
  QTabWidget* tabs = w.inspector()->tabs();
  const QString other = m_dir.filePath("run/dcp_ws3");
  clickRow(w, other);
  QTRY_COMPARE(w.inspector()->shownPath(), other);
  QCOMPARE(tabs->currentIndex(), int(InspectorWidget::Tab::Shards));
  QVERIFY2(v->heading()->text().startsWith("<b>sharded: DCP, 3 ranks, 4 files</b>"),
           qPrintable(v->heading()->text()));
  clickRow(w, m_dir.filePath("run/reference.pt"));
  QTRY_VERIFY(w.inspector()->shownPath().endsWith("reference.pt"));
  QCOMPARE(tabs->currentIndex(), int(InspectorWidget::Tab::Summary));
  QVERIFY(!tabs->isTabVisible(int(InspectorWidget::Tab::Shards)));
}

// DeepSpeed ZeRO-2 at 3 ranks without rank 1's optimizer file: each fp32
// master's elements that file held are listed as missing chunks (as DCP's
// and FSDP's are), the other ranks' still present. How many elements each
// rank's file holds of each master is what deepspeed_fixtures.py computed
// from its partitioning (manifest rank_elements), not our reader.
void TestShardView::deepSpeedMissingRank() {
  MainWindow w;
  const QString folder = m_dir.filePath("run/ds_missing");
  openShards(w, folder);
  if (QTest::currentTestFailed()) return;
  ShardView* v = w.inspector()->shardView();
  const QJsonObject layout = m_layouts["hostile/ds_missing/global_step1000"].toObject();
  const QString missing = layout["missing"].toString();
  QCOMPARE(missing, QStringLiteral("zero_pp_rank_1_mp_rank_00_optim_states.pt"));
  const QString heading = v->heading()->text();
  QVERIFY2(heading.contains(missing + " (rank 1, missing)"), qPrintable(heading));
  const QJsonObject shares = layout["rank_elements"].toObject();
  QVERIFY(shares.size() >= 8);
  int withMissing = 0;
  using C = ShardChunkModel::Column;
  for (auto it = shares.begin(); it != shares.end(); ++it) {
    const QString name = it.key();
    const QJsonObject share = it.value().toObject();
    const int row = clickTensor(v, name);
    QVERIFY2(row >= 0, qPrintable(name + " is not listed"));
    QCOMPARE(v->tensorIndex(), row);
    const bool incomplete = share.contains(missing);
    withMissing += incomplete ? 1 : 0;
    QCOMPARE(cell(v->tensorModel(), row, int(ShardTensorModel::Column::Status)),
             incomplete ? QStringLiteral("incomplete") : QStringLiteral("complete"));
    // Elements per file, and in which state, as the chunk rows say.
    const QAbstractItemModel* cm = v->chunkView()->model();
    QMap<QString, qint64> elements;
    for (int i = 0; i < cm->rowCount(); ++i) {
      const QString file = cell(cm, i, int(C::File));
      const QString state = cell(cm, i, int(C::State));
      QVERIFY2(file == missing ? state == "missing" : state.startsWith("present"),
               qPrintable(name + ": " + file + " " + state));
      QCOMPARE(cell(cm, i, int(C::Rank)), file.section('_', 3, 3));
      elements[file] +=
          cell(cm, i, int(C::Elements)).remove(QRegularExpression("[^0-9]")).toLongLong();
    }
    QCOMPARE(elements.size(), share.size());
    for (auto f = share.begin(); f != share.end(); ++f)
      QVERIFY2(elements.value(f.key()) == f.value().toInteger(),
               qPrintable(QString("%1: %2 holds %3 elements, %4 listed")
                              .arg(name, f.key())
                              .arg(f.value().toInteger())
                              .arg(elements.value(f.key()))));
  }
  QVERIFY(withMissing > 0 && withMissing < shares.size());

  // token_embed.weight (10 x 6): rank 1's last 4 elements of row 9 are
  // missing; the picture draws that run red where a person looks.
  QVERIFY(clickTensor(v, "model.token_embed.weight") >= 0);
  const QImage image = v->picture()->grab().toImage();
  const QRect area = v->picture()->area();
  const double rowH = area.height() / 10.0, colW = area.width() / 6.0;
  const QColor gone = image.pixelColor(int(area.left() + 2 * colW + colW / 2),
                                       int(area.top() + 9 * rowH + rowH / 2));
  QVERIFY2(reddish(gone), qPrintable(gone.name()));
  const QColor kept = image.pixelColor(int(area.left() + colW / 2), int(area.top() + rowH / 2));
  QVERIFY2(!reddish(kept), qPrintable(kept.name()));
}

QTEST_MAIN(TestShardView)
#include "tst_shardview.moc"
