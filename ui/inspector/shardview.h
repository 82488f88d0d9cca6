#pragma once

#include <QAbstractTableModel>
#include <QWidget>
#include <memory>
#include <vector>

#include "ckpt/remote/shards_wire.h"

class QLabel;
class QTableView;

namespace ckpt {

// The colour a rank's chunks have in the Shards tab (its picture and the
// swatches of the chunk table); `key` is the rank, or the part's index when
// the layout has no ranks (Hugging Face shards).
[[nodiscard]] QColor shardColour(int key);
// What a missing or unreadable chunk is drawn with.
[[nodiscard]] QColor missingShardColour();

// The logical tensors of a sharded checkpoint: global shape and dtype, how
// many chunks, complete or not (ShardListing::tensors, in that order: row i is
// tensor i of the CheckpointFile).
class ShardTensorModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Column { Name, Status, DType, Shape, Chunks, Count };
  explicit ShardTensorModel(QObject* parent = nullptr);
  void setShards(const ShardListing* shards);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  const ShardListing* m_shards = nullptr;
};

// One logical tensor's chunks: which rank and file, offsets and sizes in the
// global shape, and whether its file is there. Present chunks and those of
// missing or unreadable parts (LogicalTensor::missing), in rank order.
class ShardChunkModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Column { Rank, File, Offsets, Sizes, Elements, State, Count };
  struct Row {
    ShardChunk chunk;
    bool missing = false;
  };
  explicit ShardChunkModel(QObject* parent = nullptr);
  void setTensor(const ShardListing* shards, int tensor);
  [[nodiscard]] const std::vector<Row>& rows() const { return m_rows; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  const ShardListing* m_shards = nullptr;
  std::vector<Row> m_rows;
};

// A small picture of how a tensor is split: its global shape as a box (dim 0
// down, dim 1 across; a vector across; further dimensions not drawn), each
// chunk in its rank's colour, chunks whose file is missing hatched red,
// what no chunk covers hatched grey.
class ShardSplitPicture : public QWidget {
  Q_OBJECT

 public:
  explicit ShardSplitPicture(QWidget* parent = nullptr);
  void setTensor(const ShardListing* shards, int tensor);
  // Where the global shape is drawn, in widget coordinates.
  [[nodiscard]] QRect area() const;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // tool tips: the chunk under the mouse

 private:
  [[nodiscard]] QRectF chunkRect(const ShardChunk& c) const;
  [[nodiscard]] QString chunkLabel(const ShardChunk& c, bool missing) const;
  const ShardListing* m_shards = nullptr;
  int m_tensor = -1;
};

// The Shards tab of the inspector: for a checkpoint written by many ranks,
// every logical tensor and, for the one picked, its layout across ranks.
// Everything comes from a ShardListing (no bytes are read): the local file's
// ShardSet, or a host's `shards` answer for a checkpoint there.
class ShardView : public QWidget {
  Q_OBJECT

 public:
  explicit ShardView(QWidget* parent = nullptr);
  // A checkpoint here (listShards of its ShardSet) or on a host (its
  // agent's `shards` answer): both are shown alike. Null clears it. Shows
  // the layout of the first incomplete tensor (else the first) at once.
  void setListing(std::shared_ptr<const ShardListing> listing);
  // Why there is nothing to show of a sharded checkpoint (a host's answer
  // that was refused, an agent older than `shards`): the heading says it.
  void showProblem(const QString& text);
  // Shows the layout of logical tensor `index`.
  void showTensor(int index);
  [[nodiscard]] int tensorIndex() const { return m_tensor; }

  [[nodiscard]] QTableView* tensorView() const { return m_tensorView; }
  [[nodiscard]] QTableView* chunkView() const { return m_chunkView; }
  [[nodiscard]] ShardTensorModel* tensorModel() const { return m_tensors; }
  [[nodiscard]] ShardChunkModel* chunkModel() const { return m_chunks; }
  [[nodiscard]] ShardSplitPicture* picture() const { return m_picture; }
  [[nodiscard]] QLabel* heading() const { return m_heading; }
  [[nodiscard]] QLabel* detail() const { return m_detail; }

 private:
  std::shared_ptr<const ShardListing> m_listing;
  const ShardListing* m_shards = nullptr;
  int m_tensor = -1;
  QLabel* m_heading = nullptr;
  QLabel* m_detail = nullptr;
  QTableView* m_tensorView = nullptr;
  QTableView* m_chunkView = nullptr;
  ShardTensorModel* m_tensors = nullptr;
  ShardChunkModel* m_chunks = nullptr;
  ShardSplitPicture* m_picture = nullptr;
};

}  // namespace ckpt
