#pragma once
// The Curves tab's legend beside the chart: one row per group (its runs
// below it, shown when the row is expanded) or per run, each with its
// colour and a check box that shows or hides it, a search box that keeps
// the rows whose name holds the text, and the row under the mouse or the
// curve under the mouse highlighted. A list widget rather than QCustomPlot's
// legend: it scrolls, so 1,000 runs stay readable.

#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

namespace ckpt {

// A row: a group (index into the view's groups) or a run (into its runs).
struct LegendKey {
  bool group = false;
  int index = -1;
  friend bool operator==(const LegendKey&, const LegendKey&) = default;
};

struct LegendEntry {
  LegendKey key;
  QString label;
  QString toolTip;  // empty: the label
  QColor colour;
  bool visible = true;
  bool expanded = false;
  std::vector<LegendEntry> children;  // a group's runs
};

class CurvesLegend : public QWidget {
  Q_OBJECT

 public:
  explicit CurvesLegend(QWidget* parent = nullptr);

  // Replaces the rows (the search text stays and applies). `heading`: the
  // key the group rows give the value of ("learning_rate"), shown above
  // them; empty: no heading.
  void setEntries(const std::vector<LegendEntry>& entries, const QString& heading = {});
  // Highlights (selects and scrolls to) the row of `key`; nothing for index -1.
  void setHighlighted(const LegendKey& key);
  [[nodiscard]] QTreeWidget* tree() const { return m_tree; }
  [[nodiscard]] QLineEdit* search() const { return m_search; }
  // The row of `key`; nullptr when there is none.
  [[nodiscard]] QTreeWidgetItem* item(const LegendKey& key) const;
  // Rows shown (not filtered out by the search), top level and their children.
  [[nodiscard]] int shownRows() const;

 signals:
  void visibilityToggled(ckpt::LegendKey key, bool visible);
  void expandedChanged(ckpt::LegendKey key, bool expanded);
  // The mouse is over a row; index -1: over none.
  void hovered(ckpt::LegendKey key);

 private:
  void applySearch();
  bool eventFilter(QObject* watched, QEvent* event) override;

  QLineEdit* m_search = nullptr;
  QTreeWidget* m_tree = nullptr;
  bool m_filling = false;  // setEntries: no signals for the rows it makes
};

}  // namespace ckpt
