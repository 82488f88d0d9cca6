#pragma once

#include <QSize>
#include <QString>

class QWidget;

namespace ckpt {

// What `ckptscope --screenshot` renders at.
inline constexpr QSize kScreenshotSize{1280, 800};

// Renders `widget` (QWidget::grab, so it works without a display) and writes
// it as a PNG, creating missing parent directories. Returns false with a
// message in `error` when the file cannot be written.
[[nodiscard]] bool saveScreenshot(QWidget* widget, const QString& fileName,
                                  QString* error = nullptr);

}  // namespace ckpt
