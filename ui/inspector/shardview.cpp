#include "inspector/shardview.h"

#include <QBrush>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <array>

#include "textformat.h"

namespace ckpt {
namespace {

QString dimsString(const Dims& d) {
  QStringList parts;
  for (size_t i = 0; i < d.size(); ++i) parts << QString::number(d[i]);
  return "[" + parts.join(", ") + "]";
}

uint64_t elementsOf(const Dims& d) {
  uint64_t n = 1;
  for (size_t i = 0; i < d.size(); ++i) n *= uint64_t(std::max<int64_t>(d[i], 0));
  return n;
}

// The colour key of a chunk: its rank, else its part.
int keyOf(const ShardListing& s, const ShardChunk& c) {
  const int rank = s.parts[size_t(c.part)].rank;
  return rank >= 0 ? rank : c.part;
}

QString partName(const ShardListing& s, int part) {
  const ShardPart& p = s.parts[size_t(part)];
  return p.rank >= 0 ? QObject::tr("rank %1").arg(p.rank) : fromStd(p.file);
}

// "missing" / "unreadable" / "" for a part that is fine.
QString partState(const ShardPart& p) {
  if (!p.present) return QObject::tr("missing");
  return p.error.empty() ? QString() : QObject::tr("unreadable");
}

// The columns of a table of small cells: no word wrap, rows as high as the text.
void setUpTable(QTableView* v) {
  v->setAlternatingRowColors(true);
  v->setSelectionBehavior(QAbstractItemView::SelectRows);
  v->setSelectionMode(QAbstractItemView::SingleSelection);
  v->setWordWrap(false);
  v->verticalHeader()->hide();
  v->verticalHeader()->setDefaultSectionSize(v->fontMetrics().height() + 6);
  v->horizontalHeader()->setStretchLastSection(true);
}

}  // namespace

QColor shardColour(int key) {
  // Tableau 10 without its red (red says "missing").
  static const std::array<QColor, 9> palette{
      QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
      QColor(0xb0, 0x7a, 0xa1), QColor(0xed, 0xc9, 0x48), QColor(0x76, 0xb7, 0xb2),
      QColor(0xff, 0x9d, 0xa7), QColor(0x9c, 0x75, 0x5f), QColor(0xba, 0xb0, 0xac)};
  if (key < 0) key = 0;
  if (size_t(key) < palette.size()) return palette[size_t(key)];
  return QColor::fromHsv(int((uint64_t(key) * 47) % 360), 130, 210);
}

QColor missingShardColour() {
  return QColor(0xf4, 0xc7, 0xc3);
}

// ---- ShardTensorModel --------------------------------------------------------

ShardTensorModel::ShardTensorModel(QObject* parent) : QAbstractTableModel(parent) {}

void ShardTensorModel::setShards(const ShardListing* shards) {
  beginResetModel();
  m_shards = shards;
  endResetModel();
}

int ShardTensorModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_shards ? 0 : int(m_shards->tensors.size());
}

int ShardTensorModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(Column::Count);
}

QVariant ShardTensorModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Name:
      return tr("Tensor");
    case Column::DType:
      return tr("DType");
    case Column::Shape:
      return tr("Global shape");
    case Column::Chunks:
      return tr("Chunks");
    case Column::Status:
      return tr("Status");
    case Column::Count:
      break;
  }
  return {};
}

QVariant ShardTensorModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const LogicalTensor& t = m_shards->tensors[size_t(index.row())];
  const Column column = Column(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Column::Name:
          return fromStd(t.name);
        case Column::DType:
          return t.shape.size() || !t.chunks.empty() ? QString(dtypeName(t.dtype).data()) : "?";
        case Column::Shape:
          return t.shape.size() || !t.chunks.empty() ? dimsString(t.shape) : "?";
        case Column::Chunks: {
          QString s = QString::number(t.chunks.size() + t.missing.size());
          if (!t.missing.empty()) s += tr(" (%1 missing)").arg(t.missing.size());
          if (t.replicas) s += tr(", %1 replicas").arg(t.replicas);
          return s;
        }
        case Column::Status:
          if (t.incomplete()) return tr("incomplete");
          return t.flat ? tr("complete (flat buffer)") : tr("complete");
        case Column::Count:
          break;
      }
      return {};
    case Qt::ToolTipRole:
      return t.incomplete() ? fromStd(t.name) + "\n" + fromStd(t.error) : fromStd(t.name);
    case Qt::ForegroundRole:
      return t.incomplete() ? QVariant(QBrush(Qt::darkRed)) : QVariant();
    default:
      return {};
  }
}

// ---- ShardChunkModel ---------------------------------------------------------

ShardChunkModel::ShardChunkModel(QObject* parent) : QAbstractTableModel(parent) {}

void ShardChunkModel::setTensor(const ShardListing* shards, int tensor) {
  beginResetModel();
  m_shards = shards;
  m_rows.clear();
  if (shards && tensor >= 0 && size_t(tensor) < shards->tensors.size()) {
    const LogicalTensor& t = shards->tensors[size_t(tensor)];
    for (const ShardChunk& c : t.chunks) m_rows.push_back(Row{c, false});
    for (const ShardChunk& c : t.missing) m_rows.push_back(Row{c, true});
    // In rank (or file) order, then by where they start.
    std::stable_sort(m_rows.begin(), m_rows.end(), [shards](const Row& a, const Row& b) {
      const int ka = keyOf(*shards, a.chunk), kb = keyOf(*shards, b.chunk);
      if (ka != kb) return ka < kb;
      return a.chunk.offsets.vec() < b.chunk.offsets.vec();
    });
  }
  endResetModel();
}

int ShardChunkModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int ShardChunkModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(Column::Count);
}

QVariant ShardChunkModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (Column(section)) {
    case Column::Rank:
      return tr("Rank");
    case Column::File:
      return tr("File");
    case Column::Offsets:
      return tr("Offsets");
    case Column::Sizes:
      return tr("Sizes");
    case Column::Elements:
      return tr("Elements");
    case Column::State:
      return tr("State");
    case Column::Count:
      break;
  }
  return {};
}

QVariant ShardChunkModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const Row& r = m_rows[size_t(index.row())];
  const ShardPart& p = m_shards->parts[size_t(r.chunk.part)];
  const bool known = r.chunk.sizes.size() || r.chunk.offsets.size() || !r.missing;
  const Column column = Column(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case Column::Rank:
          return p.rank >= 0 ? QString::number(p.rank) : QStringLiteral("-");
        case Column::File:
          return fromStd(p.file);
        case Column::Offsets:
          return known ? dimsString(r.chunk.offsets) : QStringLiteral("?");
        case Column::Sizes:
          return known ? dimsString(r.chunk.sizes) : QStringLiteral("?");
        case Column::Elements:
          return known ? groupedNumber(elementsOf(r.chunk.sizes)) : QStringLiteral("?");
        case Column::State: {
          if (r.missing) return partState(p).isEmpty() ? tr("missing") : partState(p);
          if (r.chunk.sourceOffset)
            return tr("present (from element %1 of a flat buffer)").arg(r.chunk.sourceOffset);
          return tr("present");
        }
        case Column::Count:
          break;
      }
      return {};
    case Qt::DecorationRole:
      if (column == Column::Rank)
        return r.missing ? missingShardColour() : shardColour(keyOf(*m_shards, r.chunk));
      return {};
    case Qt::ToolTipRole:
      if (r.missing)
        return p.error.empty() ? tr("%1 cannot be read").arg(fromStd(p.file)) : fromStd(p.error);
      return fromStd(p.path);
    case Qt::ForegroundRole:
      return r.missing ? QVariant(QBrush(Qt::darkRed)) : QVariant();
    case Qt::TextAlignmentRole:
      if (column == Column::Elements || column == Column::Rank)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    default:
      return {};
  }
}

// ---- ShardSplitPicture -------------------------------------------------------

ShardSplitPicture::ShardSplitPicture(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

QSize ShardSplitPicture::sizeHint() const {
  return {400, 5 * fontMetrics().height() + 8};
}
QSize ShardSplitPicture::minimumSizeHint() const {
  return {120, 5 * fontMetrics().height() + 8};
}

void ShardSplitPicture::setTensor(const ShardListing* shards, int tensor) {
  m_shards = shards;
  m_tensor = shards && tensor >= 0 && size_t(tensor) < shards->tensors.size() ? tensor : -1;
  update();
}

QRect ShardSplitPicture::area() const {
  return rect().adjusted(2, 2, -3, -3);
}

// Dim 0 down and dim 1 across (a vector: dim 0 across; a scalar: the whole box).
QRectF ShardSplitPicture::chunkRect(const ShardChunk& c) const {
  const LogicalTensor& t = m_shards->tensors[size_t(m_tensor)];
  const QRectF a = area();
  const size_t nd = t.shape.size();
  if (c.offsets.size() != nd || c.sizes.size() != nd) return {};
  const auto span = [](int64_t off, int64_t size, int64_t total, double from, double length) {
    if (total <= 0) return std::pair<double, double>(from, 0);
    return std::pair<double, double>(from + length * double(off) / double(total),
                                     length * double(size) / double(total));
  };
  double x = a.left(), w = a.width(), y = a.top(), h = a.height();
  if (nd == 1) {
    std::tie(x, w) = span(c.offsets[0], c.sizes[0], t.shape[0], a.left(), a.width());
  } else if (nd >= 2) {
    std::tie(y, h) = span(c.offsets[0], c.sizes[0], t.shape[0], a.top(), a.height());
    std::tie(x, w) = span(c.offsets[1], c.sizes[1], t.shape[1], a.left(), a.width());
  }
  return {x, y, w, h};
}

QString ShardSplitPicture::chunkLabel(const ShardChunk& c, bool missing) const {
  const QString who = partName(*m_shards, c.part);
  return missing ? tr("%1 missing").arg(who) : who;
}

void ShardSplitPicture::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QRect a = area();
  p.fillRect(a, palette().base());
  if (m_tensor < 0) return;
  const LogicalTensor& t = m_shards->tensors[size_t(m_tensor)];
  // What no chunk covers: hatched grey (it shows through gaps of an incomplete tensor).
  p.fillRect(a, QBrush(palette().mid().color(), Qt::BDiagPattern));
  const auto draw = [&](const ShardChunk& c, bool missing) {
    const QRectF r = chunkRect(c);
    if (r.width() <= 0 || r.height() <= 0) return;  // a 0-size chunk: nothing to draw
    const QColor fill = missing ? missingShardColour() : shardColour(keyOf(*m_shards, c));
    p.fillRect(r, fill);
    if (missing) p.fillRect(r, QBrush(QColor(0xc0, 0x20, 0x20), Qt::BDiagPattern));
    p.setPen(QPen(missing ? QColor(0xc0, 0x20, 0x20) : fill.darker(160), 1,
                  missing ? Qt::DashLine : Qt::SolidLine));
    p.drawRect(r.adjusted(0, 0, -1, -1));
    const QString label = chunkLabel(c, missing);
    if (p.fontMetrics().horizontalAdvance(label) + 4 <= r.width() &&
        p.fontMetrics().height() <= r.height()) {
      p.setPen(missing ? QColor(0x80, 0, 0) : QColor(Qt::black));
      p.drawText(r, Qt::AlignCenter, label);
    }
  };
  for (const ShardChunk& c : t.chunks) draw(c, false);
  for (const ShardChunk& c : t.missing) draw(c, true);
  p.setPen(palette().text().color());
  p.drawRect(a.adjusted(0, 0, -1, -1));
}

bool ShardSplitPicture::event(QEvent* e) {
  if (e->type() != QEvent::ToolTip || m_tensor < 0) return QWidget::event(e);
  const auto* help = static_cast<QHelpEvent*>(e);
  const LogicalTensor& t = m_shards->tensors[size_t(m_tensor)];
  QString tip;
  const auto look = [&](const ShardChunk& c, bool missing) {
    if (tip.isEmpty() && chunkRect(c).contains(help->pos()))
      tip = tr("%1: %2, offsets %3, sizes %4")
                .arg(chunkLabel(c, missing), fromStd(m_shards->parts[size_t(c.part)].file),
                     dimsString(c.offsets), dimsString(c.sizes));
  };
  for (const ShardChunk& c : t.chunks) look(c, false);
  for (const ShardChunk& c : t.missing) look(c, true);
  if (tip.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(help->globalPos(), tip, this);
  return true;
}

// ---- ShardView ---------------------------------------------------------------

ShardView::ShardView(QWidget* parent) : QWidget(parent) {
  m_heading = new QLabel(this);
  m_heading->setWordWrap(true);
  m_heading->setTextFormat(Qt::RichText);
  m_tensors = new ShardTensorModel(this);
  m_tensorView = new QTableView(this);
  m_tensorView->setModel(m_tensors);
  setUpTable(m_tensorView);

  auto* lower = new QWidget(this);
  m_detail = new QLabel(lower);
  m_detail->setWordWrap(true);
  m_detail->setTextFormat(Qt::RichText);
  m_picture = new ShardSplitPicture(lower);
  m_chunks = new ShardChunkModel(this);
  m_chunkView = new QTableView(lower);
  m_chunkView->setModel(m_chunks);
  setUpTable(m_chunkView);
  auto* lowerLayout = new QVBoxLayout(lower);
  lowerLayout->setContentsMargins(0, 0, 0, 0);
  lowerLayout->addWidget(m_detail);
  lowerLayout->addWidget(m_picture);
  lowerLayout->addWidget(m_chunkView, 1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->setChildrenCollapsible(false);
  split->addWidget(m_tensorView);
  split->addWidget(lower);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(m_heading);
  layout->addWidget(split, 1);

  // A click or the keyboard on a row shows that tensor's layout.
  connect(m_tensorView, &QAbstractItemView::clicked, this,
          [this](const QModelIndex& i) { showTensor(i.row()); });
  connect(m_tensorView->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& i) {
            if (i.isValid()) showTensor(i.row());
          });
}

void ShardView::showProblem(const QString& text) {
  setListing(nullptr);
  m_detail->clear();
  m_heading->setText("<span style='color:#a00000'>" + text.toHtmlEscaped() + "</span>");
  m_heading->setToolTip(text);
}

void ShardView::setListing(std::shared_ptr<const ShardListing> listing) {
  m_listing = std::move(listing);
  m_shards = m_listing.get();
  m_tensor = -1;
  m_tensors->setShards(m_shards);
  m_chunks->setTensor(nullptr, -1);
  m_picture->setTensor(nullptr, -1);
  m_detail->setText(m_shards ? tr("Pick a tensor to see how it is split across ranks.")
                             : QString());
  if (!m_shards) {
    m_heading->clear();
    m_heading->setToolTip({});
    return;
  }
  const ShardListing& s = *m_shards;
  size_t incomplete = 0;
  for (const LogicalTensor& t : s.tensors) incomplete += t.incomplete() ? 1 : 0;
  QString html = "<b>" + fromStd(s.summary()).toHtmlEscaped() +
                 "</b>: " + countText(s.tensors.size(), "logical tensor", "logical tensors");
  if (incomplete) html += tr(", <span style='color:#a00000'>%1 incomplete</span>").arg(incomplete);
  QStringList gone;
  for (const ShardPart& p : s.parts)
    if (!partState(p).isEmpty())
      gone << (p.rank >= 0
                   ? tr("%1 (rank %2, %3)").arg(fromStd(p.file)).arg(p.rank).arg(partState(p))
                   : tr("%1 (%2)").arg(fromStd(p.file), partState(p)));
  if (!gone.isEmpty())
    html +=
        "<br><span style='color:#a00000'>" +
        tr("Cannot be read: %1. Tensors with a chunk there are incomplete; the others can be read.")
            .arg(gone.join(", "))
            .toHtmlEscaped() +
        "</span>";
  m_heading->setText(html);
  m_heading->setToolTip([&] {
    QStringList lines;
    for (const ShardPart& p : s.parts)
      if (!p.error.empty()) lines << fromStd(p.error);
    for (const std::string& n : s.notes) lines << fromStd(n);
    return lines.join("\n");
  }());
  m_tensorView->resizeColumnsToContents();
  m_tensorView->setColumnWidth(0, std::min(m_tensorView->columnWidth(0), 320));
  // Something to look at before a click: what is wrong first. Not a pick of
  // the person's, so the Tensor tab is not told (its signals are held).
  int first = 0;
  for (size_t i = 0; i < s.tensors.size(); ++i)
    if (s.tensors[i].incomplete()) {
      first = int(i);
      break;
    }
  if (!s.tensors.empty()) {
    const QSignalBlocker hold(m_tensorView->selectionModel());
    showTensor(first);
    m_tensorView->scrollTo(m_tensors->index(first, 0));
    m_tensorView->viewport()->update();
  }
}

void ShardView::showTensor(int index) {
  if (!m_shards || index < 0 || size_t(index) >= m_shards->tensors.size()) return;
  m_tensor = index;
  const LogicalTensor& t = m_shards->tensors[size_t(index)];
  if (m_tensorView->selectionModel()->currentIndex().row() != index)
    m_tensorView->selectionModel()->setCurrentIndex(
        m_tensors->index(index, 0),
        QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  m_chunks->setTensor(m_shards, index);
  m_picture->setTensor(m_shards, index);
  // A tensor whose only file is missing (a Hugging Face shard) has no known shape.
  const bool known = t.shape.size() || !t.chunks.empty();
  QString html = "<b>" + fromStd(t.name).toHtmlEscaped() + "</b> " +
                 (known ? QString(dtypeName(t.dtype).data()) + " " + dimsString(t.shape)
                        : tr("(shape unknown)")) +
                 ": " + countText(t.chunks.size() + t.missing.size(), "chunk", "chunks");
  if (t.replicas) html += tr(" (stored once, %1 more copies on other ranks)").arg(t.replicas);
  if (t.shape.size() >= 2)
    html += tr("; picture: dim 0 down, dim 1 across");
  else if (t.shape.size() == 1)
    html += tr("; picture: dim 0 across");
  if (t.incomplete())
    html += "<br><span style='color:#a00000'>" +
            tr("Incomplete: %1").arg(fromStd(t.error)).toHtmlEscaped() + "</span>";
  m_detail->setText(html);
  m_chunkView->resizeColumnsToContents();
}

}  // namespace ckpt
