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

#include "ckpt/model/config.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

const char* kInvalidStyle = "border: 1px solid #d03030;";

}  // namespace

ConfigForm::ConfigForm(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
}

void ConfigForm::addGroup(const QString& title, const QList<Field>& fields, int columns, QWidget* header) {
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
  int i = 0;
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
        if (f.kind == Kind::OptionalInt || f.kind == Kind::OptionalDouble) line->setPlaceholderText(QStringLiteral("None"));
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
    const int row = i / columns, col = (i % columns) * 2;
    grid->addWidget(label, row, col);
    grid->addWidget(w, row, col + 1);
    m_editors.insert(f.key, w);
    m_fields.insert(f.key, f);
    m_order.append(f.key);
    ++i;
  }
  for (int c = 0; c < columns; ++c) grid->setColumnStretch(c * 2 + 1, 1);
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
      case Kind::Int: out[k] = int64_t(static_cast<QSpinBox*>(w)->value()); break;
      case Kind::Bool: out[k] = static_cast<QCheckBox*>(w)->isChecked(); break;
      case Kind::Choice: out[k] = static_cast<QComboBox*>(w)->currentText().toStdString(); break;
      case Kind::Text: out[k] = static_cast<QLineEdit*>(w)->text().trimmed().toStdString(); break;
      case Kind::Double:
      case Kind::OptionalInt:
      case Kind::OptionalDouble: {
        const QString text = static_cast<QLineEdit*>(w)->text().trimmed();
        if (text.isEmpty() || text == QLatin1String("None")) {
          if (f.kind == Kind::Double) throw ConfigError(k + ": a number is required");
          out[k] = nullptr;
          break;
        }
        bool ok = false;
        if (f.kind == Kind::OptionalInt) {
          const qlonglong v = QLocale::c().toLongLong(text, &ok);
          if (!ok) throw ConfigError(k + ": expected an integer, got '" + text.toStdString() + "'");
          out[k] = int64_t(v);
        } else {
          const double v = QLocale::c().toDouble(text, &ok);
          if (!ok) throw ConfigError(k + ": expected a number, got '" + text.toStdString() + "'");
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
    case Kind::Int: return static_cast<QSpinBox*>(w)->value();
    case Kind::Bool: return static_cast<QCheckBox*>(w)->isChecked();
    case Kind::Choice: return static_cast<QComboBox*>(w)->currentText();
    default: return static_cast<QLineEdit*>(w)->text();
  }
}

void ConfigForm::setValue(const QString& key, const QVariant& v) {
  QWidget* w = m_editors.value(key);
  if (!w) return;
  switch (m_fields[key].kind) {
    case Kind::Int: static_cast<QSpinBox*>(w)->setValue(v.toInt()); break;
    case Kind::Bool: static_cast<QCheckBox*>(w)->setChecked(v.toBool()); break;
    case Kind::Choice: {
      auto* combo = static_cast<QComboBox*>(w);
      const int i = combo->findText(v.toString());
      if (i >= 0) combo->setCurrentIndex(i);
      break;
    }
    default:
      // Doubles as the shortest text that reads back as the same value.
      static_cast<QLineEdit*>(w)->setText(v.isNull() ? QString()
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
      w->setStyleSheet(QString());
      w->setToolTip(m_fields[key].tip);
    }
  }
  m_marked.clear();
  for (const QString& key : keys) {
    if (QWidget* w = m_editors.value(key)) {
      w->setStyleSheet(QLatin1String(kInvalidStyle));
      w->setToolTip(message);
      m_marked.append(key);
    }
  }
}

}  // namespace ckpt
