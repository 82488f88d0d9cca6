#pragma once

#include <QHash>
#include <QList>
#include <QStringList>
#include <QVariant>
#include <QWidget>
#include <nlohmann/json.hpp>

class QGridLayout;
class QLabel;

namespace ckpt {

struct ConfigSection;

// The fields of a run config as a form: one editor per JSON key, labelled
// with the key itself (the names modern_llm users know, and the names the
// config's error messages use). It only collects values; the panel
// validates them with ModelConfig/RunConfig, which need no LibTorch.
class ConfigForm : public QWidget {
  Q_OBJECT

 public:
  enum class Kind {
    Int,             // QSpinBox
    Double,          // QLineEdit: "3e-4" reads better than a spin box
    OptionalInt,     // QLineEdit, empty -> null (None)
    OptionalDouble,  // QLineEdit, empty -> null (None)
    Bool,            // QCheckBox
    Choice,          // QComboBox of `choices`
    Text,            // QLineEdit
  };
  struct Field {
    QString section;  // "model", "training", ...
    QString key;      // the JSON key
    Kind kind = Kind::Int;
    QVariant defaultValue;
    QString tip;
    QStringList choices = {};
    int minimum = 0;  // Int only
  };

  explicit ConfigForm(QWidget* parent = nullptr);

  // The form's rows of a config section (ckpt/config/config_schema.h): the
  // fields it marks for the form, in its order, with the form's defaults,
  // and the help and rule as tooltip.
  static QList<Field> fieldsOf(const ConfigSection& section);

  // Adds a titled group of fields, laid out in `columns` label/editor pairs,
  // under `header` (other widgets of the group, e.g. path pickers) if given.
  void addGroup(const QString& title, const QList<Field>& fields, int columns = 2,
                QWidget* header = nullptr);

  // {key: value} of one section, typed for ModelConfig/TrainingConfig::update.
  // Throws ConfigError naming the key when a text field is not a number.
  [[nodiscard]] nlohmann::ordered_json sectionJson(const QString& section) const;

  // Values as text-like variants, for QSettings and tests.
  [[nodiscard]] QVariant value(const QString& key) const;
  void setValue(const QString& key, const QVariant& value);
  [[nodiscard]] QVariantMap values() const;
  void setValues(const QVariantMap& values);  // unknown keys are ignored
  void resetToDefaults();

  [[nodiscard]] QWidget* editor(const QString& key) const { return m_editors.value(key); }
  [[nodiscard]] QStringList keys() const { return m_order; }
  // Marks the editors of `keys` as wrong (a red label and a tinted editor,
  // the message as tooltip); an empty list clears the marks. No style
  // sheet on spin boxes: it would take their arrows away.
  void markInvalid(const QStringList& keys, const QString& message);
  [[nodiscard]] QStringList markedKeys() const { return m_marked; }

  // Lays every group out in `columns` label/editor pairs (at most what
  // each group was added with): the panel reflows a narrow form to one.
  void setColumns(int columns);
  [[nodiscard]] int columns() const { return m_columns; }
  // The width the form needs with `columns` columns.
  [[nodiscard]] int minimumWidthFor(int columns);

 signals:
  void edited();

 private:
  struct Group {
    QGridLayout* grid = nullptr;
    QList<QPair<QLabel*, QWidget*>> rows;
    int maxColumns = 2;
  };
  void layOut(Group& group, int columns);

  QList<Group> m_groups;
  int m_columns = 2;
  QHash<QString, QLabel*> m_labels;
  QHash<QString, QWidget*> m_editors;
  QHash<QString, Field> m_fields;
  QStringList m_order;
  QStringList m_marked;
};

}  // namespace ckpt
