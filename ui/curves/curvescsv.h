#pragma once

#include <QString>
#include <string>
#include <vector>

#include "curves/curverun.h"

namespace ckpt {

// Writes `metric` of every run that has it as CSV, one row per point in
// step order: run,metric,step,value,smoothed (smoothEma at `smoothing`).
// Numbers round-trip (shortest exact form); fields with a comma, quote or
// line break are quoted. Writes to a temporary file and renames it into
// place; returns false with `error` set when that fails.
bool writeCurvesCsv(const QString& fileName, const std::vector<CurveRun>& runs,
                    const std::string& metric, double smoothing, QString* error = nullptr);

}  // namespace ckpt
