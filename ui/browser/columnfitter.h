#pragma once

#include <QObject>

class QAbstractItemModel;
class QModelIndex;
class QTreeView;

namespace ckpt {

// Keeps a tree's columns as wide as their widest text, so that no name is
// cut (a run's files differ only at their ends), without Qt's
// ResizeToContents: that measures up to 1,000 rows of every column each
// time the view lays itself out (a fifth of the app's time while 50,000
// checkpoints were listed), and cuts a wider name further down.
//
// Rows a model adds or changes are measured once (the model under the
// view's proxy, if any, so hidden rows count): the longest texts of each
// column, by the view's own delegate, plus the indentation of their depth.
// Columns only grow then. A reset measures every row again and may narrow
// them. A column the user drags keeps its width until rows need more.
class ColumnFitter : public QObject {
  Q_OBJECT

 public:
  explicit ColumnFitter(QTreeView* view);

  // Every row measured again, the columns set to what they need.
  void fitAll();

 private:
  void watch(QAbstractItemModel* model);
  // Rows first..last of `parent` and all below them; widens the columns
  // that need it (or sets every column, when `exact`).
  // Rows first..last of `parent` (and the rows below them, unless not
  // `withChildren`).
  void fitRows(const QModelIndex& parent, int first, int last, bool exact,
               bool withChildren = true);

  QTreeView* m_view = nullptr;
  QAbstractItemModel* m_model = nullptr;
};

}  // namespace ckpt
