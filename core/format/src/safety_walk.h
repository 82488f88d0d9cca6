// The safety verdict of a file the reader opens (ReadOptions::safety): the
// pickles the reader walks are judged on that walk (safety_judge.h), and
// only what it does not walk (a zip's other records, a legacy file's first
// pickles, pickles after a plain pickle's first) is walked by the scan
// (file_scan.cpp), so that the report is scanFile's with no byte walked
// twice. Not a public header.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ckpt/format/pickle_safety.h"
#include "safety_judge.h"

namespace ckpt {

class InputFile;
class ZipArchive;
struct ZipEntry;

struct SafetyWalk {
  SafetyReport report;
  ScanLimits limits;
  std::string path;  // as errors name the file (scanFile's `path`)
  std::vector<std::unique_ptr<SafetyJudge>> judges;
  // The scan would walk these pickles differently from the reader (see
  // loadTorchLegacy): its own walk is the answer, not this one.
  bool deferred = false;

  // The judge of the next pickle the reader walks (`record` as the scan
  // names it, offsets plus `base`).
  SafetyJudge* judge(std::string record, uint64_t base) {
    ++report.pickles;
    judges.push_back(std::make_unique<SafetyJudge>(report, limits, std::move(record), base,
                                                   /*throwAtBound=*/false));
    return judges.back().get();
  }
  // A walk went past a bound of the scan's somewhere the scan would not
  // have stopped: the report is not the scan's. (A walk stopped exactly
  // where the scan stops is the scan's: see stopMessage().)
  [[nodiscard]] bool overBound() const {
    if (deferred) return true;
    for (const auto& j : judges)
      if (j->overBound() && j->stopMessage().empty()) return true;
    return false;
  }
  // The last walk stopped at a bound exactly where the scan's walk stops:
  // the scan's error there (empty when it did not). The scan stops there
  // too: what follows in the same sequence of pickles is not examined.
  [[nodiscard]] const std::string& stopMessage() const {
    static const std::string none;
    return judges.empty() ? none : judges.back()->stopMessage();
  }
  // For a sequence of pickles (legacy, plain): after the last walk, its
  // stop is the scan's error, as scanFile reports it. True when it stopped.
  bool stoppedInSequence() {
    if (stopMessage().empty()) return false;
    if (report.error.empty()) report.error = path + ": " + stopMessage();
    return true;
  }
};

// The zip's records that may hold pickles, as scanFile examines them, but
// `walked` (the record the reader walked; where its walk stopped at a
// bound, walk.stopMessage(), is that record's problem, in the zip's order).
// Errors go to walk.report.error.
void scanZipRest(const ZipArchive& zip, const ZipEntry* walked, SafetyWalk& walk);
// Pickles back to back as scanFile walks them (a legacy file's five, a
// plain pickle file's up to five), from pickle `slot` (0-based) at byte
// `pos` to before pickle `endSlot`. Returns where the walk stopped; errors
// go to walk.report.error.
uint64_t scanSequenceRest(const InputFile& file, bool legacy, size_t slot, uint64_t pos,
                          size_t endSlot, SafetyWalk& walk);

}  // namespace ckpt
