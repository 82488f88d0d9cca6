#pragma once
// What the browser's cells show that is costly to make for each of 50,000
// rows: a style's icon, a file's local modification time.

#include <QIcon>
#include <QString>
#include <QStyle>
#include <cstdint>

namespace ckpt {

// One QIcon per kind (none without a QApplication: a guiless test).
[[nodiscard]] QIcon standardIcon(QStyle::StandardPixmap which);
// Local time as "yyyy-MM-dd HH:mm"; "" for 0. GUI thread only.
[[nodiscard]] QString timeText(int64_t secs);

}  // namespace ckpt
