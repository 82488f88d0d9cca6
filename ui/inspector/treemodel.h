#pragma once

#include <QAbstractItemModel>
#include <memory>

namespace ckpt {

// The index/parent plumbing of a read-only tree model, written once. Node is
// a plain struct with `children` (a std::vector<Node>), `parent` (const
// Node*) and `row`, built and linked before it is handed over (off the GUI
// thread is fine: the model only reads it). Concrete models supply columns,
// data and headers.
template <typename Node>
class TreeModel : public QAbstractItemModel {
 public:
  using QAbstractItemModel::QAbstractItemModel;

  void setTree(std::shared_ptr<const Node> root) {
    beginResetModel();
    m_root = std::move(root);
    endResetModel();
  }
  [[nodiscard]] const Node* root() const { return m_root.get(); }
  // The node behind `index`; the root for an invalid index (nullptr when empty).
  [[nodiscard]] const Node* node(const QModelIndex& index) const {
    return index.isValid() ? static_cast<const Node*>(index.internalPointer()) : m_root.get();
  }
  [[nodiscard]] QModelIndex indexOf(const Node* n, int column = 0) const {
    if (!n || n == m_root.get()) return {};
    return createIndex(n->row, column, const_cast<Node*>(n));
  }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override {
    const Node* p = node(parent);
    if (!p || row < 0 || column < 0 || column >= columnCount(parent) ||
        size_t(row) >= p->children.size())
      return {};
    return createIndex(row, column, const_cast<Node*>(&p->children[size_t(row)]));
  }
  QModelIndex parent(const QModelIndex& child) const override {
    if (!child.isValid()) return {};
    return indexOf(node(child)->parent);
  }
  int rowCount(const QModelIndex& parent = {}) const override {
    if (parent.column() > 0) return 0;
    const Node* p = node(parent);
    return p ? int(p->children.size()) : 0;
  }

 private:
  std::shared_ptr<const Node> m_root;
};

}  // namespace ckpt
