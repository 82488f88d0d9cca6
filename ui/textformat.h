#pragma once

#include <QString>
#include <cstdint>
#include <string>

namespace ckpt {

// Paths and strings cross between core (std::string, bytes as the file
// system has them) and Qt (UTF-16) only through these.
[[nodiscard]] QString fromStd(const std::string& s);
[[nodiscard]] QString pathFromStd(const std::string& path);
[[nodiscard]] std::string pathToStd(const QString& path);

// "117,120": element counts and parameter totals.
[[nodiscard]] QString groupedNumber(uint64_t n);
// A loss as a column shows it: four decimals.
[[nodiscard]] QString lossText(double loss);
// "1.4 MB" (ckpt::humanBytes).
[[nodiscard]] QString sizeText(uint64_t bytes);
// "40.2 KB optimizer state (56%)": how much of `total` bytes on disk the
// optimizer state takes; "" when it takes none.
[[nodiscard]] QString optimizerShareText(uint64_t optimizerBytes, uint64_t total);
// "1 checkpoint", "3 checkpoints" (English only until there are translations).
[[nodiscard]] QString countText(uint64_t n, const char* singular, const char* plural);

}  // namespace ckpt
