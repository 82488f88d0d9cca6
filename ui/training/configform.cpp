#include "training/configform.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "ckpt/config/config_schema.h"
#include "ckpt/config/model_config.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

const char* kInvalidStyle = "border: 1px solid #d03030;";

QVariant variantOf(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return qlonglong(v.get<int64_t>());
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  return {};
}

ConfigForm::Kind kindOf(FieldType type) {
  switch (type) {
    case FieldType::Int:
      return ConfigForm::Kind::Int;
    case FieldType::Float:
      return ConfigForm::Kind::Double;
    case FieldType::OptionalInt:
      return ConfigForm::Kind::OptionalInt;
    case FieldType::OptionalFloat:
      return ConfigForm::Kind::OptionalDouble;
    case FieldType::Bool:
      return ConfigForm::Kind::Bool;
    case FieldType::Choice:
      return ConfigForm::Kind::Choice;
    case FieldType::Text:
    case FieldType::Json:
      break;
  }
  return ConfigForm::Kind::Text;
}

}  // namespace

QList<ConfigForm::Field> ConfigForm::fieldsOf(const ConfigSection& section) {
  QList<Field> out;
  for (const ConfigField& f : section.fields) {
    if (!f.inForm) continue;
    Field field;
    field.section = QString::fromStdString(section.name);
    field.key = QString::fromStdString(f.name);
    field.kind = kindOf(f.type);
    field.defaultValue = variantOf(f.formDefault);
    field.tip = QString::fromStdString(f.describe());
    for (const std::string& c : f.choices) field.choices << QString::fromStdString(c);
    field.minimum = int(f.formLowest());
    out.append(field);
  }
  return out;
}

ConfigForm::ConfigForm(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
}

void ConfigForm::addGroup(const QString& title, const QList<Field>& fields, int columns,
                          QWidget* header) {
  auto* box = new QGroupBox(title, this);
  auto* boxLayout = new QVBoxLayout(box);
  if (header) {
    header->setParent(box);
    boxLayout->addWidget(header);
  }
  auto* grid = new QGridLayout;
  boxLayout->addLayout(grid);
  grid->setHorizontalSpacing(8);
  grid->setVerticalSpacing(4);
  Group group;
  group.grid = grid;
  for (const Field& f : fields) {
    QWidget* w = nullptr;
    switch (f.kind) {
      case Kind::Int: {
        auto* spin = new QSpinBox(box);
        spin->setRange(f.minimum, 1'000'000'000);
        spin->setAccelerated(true);
        connect(spin, &QSpinBox::valueChanged, this, &ConfigForm::edited);
        w = spin;
        break;
      }
      case Kind::Double:
      case Kind::OptionalInt:
      case Kind::OptionalDouble:
      case Kind::Text: {
        auto* line = new QLineEdit(box);
        if (f.kind == Kind::OptionalInt || f.kind == Kind::OptionalDouble)
          line->setPlaceholderText(QStringLiteral("None"));
        connect(line, &QLineEdit::textChanged, this, &ConfigForm::edited);
        w = line;
        break;
      }
      case Kind::Bool: {
        auto* check = new QCheckBox(box);
        connect(check, &QCheckBox::toggled, this, &ConfigForm::edited);
        w = check;
        break;
      }
      case Kind::Choice: {
        auto* combo = new QComboBox(box);
        combo->addItems(f.choices);
        connect(combo, &QComboBox::currentIndexChanged, this, &ConfigForm::edited);
        w = combo;
        break;
      }
    }
    w->setObjectName(f.key);
    w->setToolTip(f.tip);
    auto* label = new QLabel(f.key, box);
    label->setBuddy(w);
    label->setToolTip(f.tip);
    group.rows.append({label, w});
    m_labels.insert(f.key, label);
    m_editors.insert(f.key, w);
    m_fields.insert(f.key, f);
    m_order.append(f.key);
  }
  group.maxColumns = std::max(1, columns);
  layOut(group, std::min(group.maxColumns, m_columns));
  m_groups.append(group);
  static_cast<QVBoxLayout*>(layout())->addWidget(box);
  for (const Field& f : fields) setValue(f.key, f.defaultValue);
}

json ConfigForm::sectionJson(const QString& section) const {
  json out = json::object();
  for (const QString& key : m_order) {
    const Field& f = m_fields[key];
    if (f.section != section) continue;
    const std::string k = key.toStdString();
    QWidget* w = m_editors[key];
    switch (f.kind) {
      case Kind::Int:
        out[k] = int64_t(static_cast<QSpinBox*>(w)->value());
        break;
      case Kind::Bool:
        out[k] = static_cast<QCheckBox*>(w)->isChecked();
        break;
      case Kind::Choice:
        out[k] = static_cast<QComboBox*>(w)->currentText().toStdString();
        break;
      case Kind::Text:
        out[k] = static_cast<QLineEdit*>(w)->text().trimmed().toStdString();
        break;
      case Kind::Double:
      case Kind::OptionalInt:
      case Kind::OptionalDouble: {
        const QString text = static_cast<QLineEdit*>(w)->text().trimmed();
        if (text.isEmpty() || text == QLatin1String("None")) {
          if (f.kind == Kind::Double)
            throw ConfigError(tr("%1: a number is required").arg(key).toStdString(), {k});
          out[k] = nullptr;
          break;
        }
        bool ok = false;
        if (f.kind == Kind::OptionalInt) {
          const qlonglong v = QLocale::c().toLongLong(text, &ok);
          if (!ok)
            throw ConfigError(tr("%1: expected an integer, got '%2'").arg(key, text).toStdString(),
                              {k});
          out[k] = int64_t(v);
        } else {
          const double v = QLocale::c().toDouble(text, &ok);
          if (!ok)
            throw ConfigError(tr("%1: expected a number, got '%2'").arg(key, text).toStdString(),
                              {k});
          out[k] = v;
        }
        break;
      }
    }
  }
  return out;
}

QVariant ConfigForm::value(const QString& key) const {
  QWidget* w = m_editors.value(key);
  if (!w) return {};
  switch (m_fields[key].kind) {
    case Kind::Int:
      return static_cast<QSpinBox*>(w)->value();
    case Kind::Bool:
      return static_cast<QCheckBox*>(w)->isChecked();
    case Kind::Choice:
      return static_cast<QComboBox*>(w)->currentText();
    default:
      return static_cast<QLineEdit*>(w)->text();
  }
}

void ConfigForm::setValue(const QString& key, const QVariant& v) {
  QWidget* w = m_editors.value(key);
  if (!w) return;
  switch (m_fields[key].kind) {
    case Kind::Int:
      static_cast<QSpinBox*>(w)->setValue(v.toInt());
      break;
    case Kind::Bool:
      static_cast<QCheckBox*>(w)->setChecked(v.toBool());
      break;
    case Kind::Choice: {
      auto* combo = static_cast<QComboBox*>(w);
      const int i = combo->findText(v.toString());
      if (i >= 0) combo->setCurrentIndex(i);
      break;
    }
    default:
      // Doubles as the shortest text that reads back as the same value.
      static_cast<QLineEdit*>(w)->setText(
          v.isNull() ? QString()
          : v.typeId() == QMetaType::Double
              ? QLocale::c().toString(v.toDouble(), 'g', QLocale::FloatingPointShortest)
              : v.toString());
      break;
  }
}

QVariantMap ConfigForm::values() const {
  QVariantMap out;
  for (const QString& key : m_order) out.insert(key, value(key));
  return out;
}

void ConfigForm::setValues(const QVariantMap& values) {
  for (auto it = values.begin(); it != values.end(); ++it) setValue(it.key(), it.value());
}

void ConfigForm::resetToDefaults() {
  for (const QString& key : m_order) setValue(key, m_fields[key].defaultValue);
}

void ConfigForm::markInvalid(const QStringList& keys, const QString& message) {
  for (const QString& key : std::as_const(m_marked)) {
    if (QWidget* w = m_editors.value(key)) {
      if (qobject_cast<QLineEdit*>(w)) w->setStyleSheet(QString());
      w->setPalette(QPalette());
      w->setToolTip(m_fields[key].tip);
    }
    if (QLabel* l = m_labels.value(key)) {
      l->setPalette(QPalette());
      QFont f = l->font();
      f.setBold(false);
      l->setFont(f);
    }
  }
  m_marked.clear();
  for (const QString& key : keys) {
    QWidget* w = m_editors.value(key);
    if (!w) continue;
    if (qobject_cast<QLineEdit*>(w)) {
      w->setStyleSheet(QLatin1String(kInvalidStyle));
    } else {
      QPalette p = w->palette();
      p.setColor(QPalette::Base, QColor(0xd0, 0x30, 0x30, 60));
      p.setColor(QPalette::Button, QColor(0xf0, 0xc0, 0xc0));
      w->setPalette(p);
    }
    w->setToolTip(message);
    if (QLabel* l = m_labels.value(key)) {
      QPalette p = l->palette();
      p.setColor(QPalette::WindowText, QColor(0xc0, 0x20, 0x20));
      l->setPalette(p);
      QFont f = l->font();
      f.setBold(true);
      l->setFont(f);
    }
    m_marked.append(key);
  }
}

void ConfigForm::layOut(Group& group, int columns) {
  for (const auto& [label, editor] : group.rows) {
    group.grid->removeWidget(label);
    group.grid->removeWidget(editor);
  }
  for (int c = 0; c < 2 * group.maxColumns; ++c) group.grid->setColumnStretch(c, 0);
  for (qsizetype i = 0; i < group.rows.size(); ++i) {
    const int row = int(i) / columns, col = (int(i) % columns) * 2;
    group.grid->addWidget(group.rows[i].first, row, col);
    group.grid->addWidget(group.rows[i].second, row, col + 1);
  }
  for (int c = 0; c < columns; ++c) group.grid->setColumnStretch(c * 2 + 1, 1);
}

void ConfigForm::setColumns(int columns) {
  columns = std::max(1, columns);
  if (columns == m_columns) return;
  m_columns = columns;
  for (Group& g : m_groups) layOut(g, std::min(g.maxColumns, columns));
  updateGeometry();
}

int ConfigForm::minimumWidthFor(int columns) {
  const int before = m_columns;
  setColumns(columns);
  layout()->activate();
  const int width = minimumSizeHint().width();
  setColumns(before);
  layout()->activate();
  return width;
}

}  // namespace ckpt
