#include "inspector/summarywidget.h"

#include <algorithm>

#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "inspector/tensortablemodel.h"
#include "textformat.h"

namespace ckpt {
namespace {

QString esc(const QString& s) {
  return s.toHtmlEscaped();
}

// Key/value pairs laid out `pairsPerRow` to a table row, labels dimmed;
// wide fields follow in a table of their own, one to a row (a shared table
// would stretch the short fields' columns to fit them).
// `labelWidth` (pixels, 0 for natural) lines up the two tables' labels.
QString fieldTable(const QList<SummaryField>& fields, int pairsPerRow, const QString& labelColor,
                   int labelWidth = 0) {
  const QString width = labelWidth > 0 ? QString(" width='%1'").arg(labelWidth) : QString();
  const QString label =
      QString("<td%1 style='color:%2; padding-right:8px; white-space:nowrap' nowrap>%3</td>")
          .arg(width, labelColor, "%1");
  const QString value = QStringLiteral("<td style='padding-right:24px'>%1</td>");
  QString shortRows, wideRows;
  int inRow = 0;
  for (const SummaryField& f : fields) {
    if (f.wide) {
      wideRows += "<tr>" + label.arg(esc(f.label)) + value.arg(esc(f.value)) + "</tr>";
      continue;
    }
    if (inRow == 0) shortRows += "<tr>";
    shortRows += label.arg(esc(f.label)) + value.arg(esc(f.value));
    if (++inRow == pairsPerRow) {
      shortRows += "</tr>";
      inRow = 0;
    }
  }
  if (inRow) shortRows += "</tr>";
  QString html;
  if (!shortRows.isEmpty())
    html += "<table cellspacing='0' cellpadding='2'>" + shortRows + "</table>";
  if (!wideRows.isEmpty())
    html += "<table cellspacing='0' cellpadding='2'>" + wideRows + "</table>";
  return html;
}

}  // namespace

SummaryWidget::SummaryWidget(QWidget* parent) : QWidget(parent) {
  m_title = new QLabel(this);
  QFont titleFont = m_title->font();
  titleFont.setPointSizeF(titleFont.pointSizeF() * 1.3);
  titleFont.setBold(true);
  m_title->setFont(titleFont);
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_subtitle = new QLabel(this);
  m_subtitle->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_subtitle->setWordWrap(true);

  m_details = new QTextBrowser(this);
  m_details->setOpenLinks(false);
  m_details->setFrameShape(QFrame::NoFrame);

  auto* tensorPanel = new QWidget(this);
  m_tensorHeading = new QLabel(tensorPanel);
  m_tensors = new TensorTableModel(this);
  m_tensorProxy = new QSortFilterProxyModel(this);
  m_tensorProxy->setSourceModel(m_tensors);
  m_tensorProxy->setSortRole(int(TensorTableModel::Role::SortKey));
  m_tensorView = new QTableView(tensorPanel);
  m_tensorView->setModel(m_tensorProxy);
  m_tensorView->setSortingEnabled(true);
  m_tensorView->sortByColumn(-1, Qt::AscendingOrder);  // file order until a header is clicked
  m_tensorView->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_tensorView->setAlternatingRowColors(true);
  m_tensorView->setWordWrap(false);
  m_tensorView->verticalHeader()->hide();
  m_tensorView->verticalHeader()->setDefaultSectionSize(m_tensorView->fontMetrics().height() + 6);
  m_tensorView->horizontalHeader()->setStretchLastSection(true);
  m_tensorView->horizontalHeader()->setHighlightSections(false);
  connect(m_tensorView->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) emit tensorSelected(m_tensorProxy->mapToSource(current).row());
          });
  auto* tensorLayout = new QVBoxLayout(tensorPanel);
  tensorLayout->setContentsMargins(0, 0, 0, 0);
  tensorLayout->addWidget(m_tensorHeading);
  tensorLayout->addWidget(m_tensorView);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_details);
  split->addWidget(tensorPanel);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({500, 260});  // the summary first; the table scrolls
  split->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 6, 6);
  layout->addWidget(m_title);
  layout->addWidget(m_subtitle);
  layout->addWidget(split, 1);

  showMessage(tr("No checkpoint selected"), {});
}

void SummaryWidget::showMessage(const QString& title, const QString& html) {
  m_path.clear();
  m_sections = {};
  m_title->setText(title);
  m_subtitle->clear();
  m_subtitle->hide();
  m_details->setHtml(html);
  m_tensors->setRows({});
  m_tensorHeading->setText(tr("Tensors"));
}

void SummaryWidget::showSummary(const CheckpointSummary& s) {
  m_path = s.path;
  m_title->setText(QFileInfo(s.path).fileName());
  // A checkpoint on another machine is named by its ssh:// location as it is.
  m_subtitle->setText(
      s.remote ? s.path
               : QDir::toNativeSeparators(QDir::cleanPath(QFileInfo(s.path).absoluteFilePath())));
  m_subtitle->show();
  const QString dim = palette().color(QPalette::PlaceholderText).name();

  if (!s.ok()) {
    m_details->setHtml(
        QString("<p style='color:#a00000'><b>%1</b></p><p style='white-space:pre-wrap'>%2</p>")
            .arg(esc(tr("Cannot read this file")), esc(s.error)));
    m_tensors->setRows({});
    m_tensorHeading->setText(tr("Tensors"));
    return;
  }

  m_sections = {s.fields, s.config, s.metadata, s.notes};
  renderDetails();

  m_tensors->setRows(s.tensors);
  m_tensorHeading->setText(
      tr("Tensors: %1, %2").arg(s.tensors.size()).arg(sizeText(s.tensorBytes)));
  QHeaderView* header = m_tensorView->horizontalHeader();
  // Column widths from the first rows: sizing over all 500+ tensors took
  // most of showing a summary on the GUI thread (measured ~10 ms).
  header->setResizeContentsPrecision(64);
  m_tensorView->verticalHeader()->setResizeContentsPrecision(64);
  for (int c = 0; c < int(TensorTableModel::Column::Note); ++c)
    m_tensorView->resizeColumnToContents(c);
  header->resizeSection(0, std::min(header->sectionSize(0), 360));
}

// Label/value pairs per row as the panel's width allows (a name of 20
// letters and a number take about 240 pixels): no sideways scrolling and
// no label broken in two at 1000x700, three config pairs a row when wide.
void SummaryWidget::renderDetails() {
  const int width = m_details->viewport()->width();
  m_pairs = std::clamp(width / 240, 1, 3);
  const QString dim = palette().color(QPalette::PlaceholderText).name();
  QString html =
      fieldTable(m_sections.fields, std::min(m_pairs, 2), dim,
                 m_details->fontMetrics().horizontalAdvance(QObject::tr("Metadata keys")) + 12);
  if (!m_sections.notes.isEmpty()) {
    html += "<p style='color:#8a5a00'>";
    for (const QString& n : m_sections.notes) html += "&#9888; " + esc(n) + "<br>";
    html += "</p>";
  }
  if (!m_sections.config.isEmpty())
    html += "<h4>" + esc(tr("Config")) + "</h4>" + fieldTable(m_sections.config, m_pairs, dim);
  if (!m_sections.metadata.isEmpty())
    html += "<h4>" + esc(tr("Metadata")) + "</h4>" +
            fieldTable(m_sections.metadata, std::min(m_pairs, 2), dim);
  m_details->setHtml(html);
}

void SummaryWidget::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (!m_path.isEmpty() && std::clamp(m_details->viewport()->width() / 240, 1, 3) != m_pairs)
    renderDetails();
}

QString SummaryWidget::text() const {
  QString t = m_title->text();
  if (!m_subtitle->text().isEmpty()) t += "\n" + m_subtitle->text();
  return t + "\n" + m_details->toPlainText();
}

}  // namespace ckpt
