#pragma once
// Would a checkpoint run code if Python loaded it: the safety scan
// (pickle_safety.h) of one file, or of every file a sharded checkpoint's
// layout names (sharded.h, FORMAT.md section 7), judged as one. Nothing in
// the files is run; only their pickles' opcodes are walked.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/format/pickle_safety.h"

namespace ckpt {

// One file of a checkpoint, scanned.
struct FileSafety {
  // As a person names it: relative to the checkpoint's folder for a sharded
  // checkpoint (".metadata", "__2_0.distcp"), the file's name otherwise.
  std::string file;
  std::string path;  // as opened
  // A DCP .distcp part: every torch.save archive .metadata places in it
  // (records named "'<key>' at byte <offset>: archive/data.pkl"); any other
  // file: scanFile's report.
  SafetyReport report;
};

struct CheckpointSafety {
  // The worst of the files' verdicts (dangerous, unreadable, suspicious,
  // safe in that order), unreadable too when the layout's description could
  // not be read (`error`).
  Verdict verdict = Verdict::Safe;
  // "" for a single file; "DCP", "FSDP", "DeepSpeed", "Hugging Face".
  std::string layout;
  // Every file scanned, in the layout's order (DCP: .metadata first).
  std::vector<FileSafety> files;
  // Files the layout names that are not there: nothing to scan, nothing to run.
  size_t missing = 0;
  // Why the description (index, .metadata, model states) could not be read
  // to find the files; "" when fine.
  std::string error;

  [[nodiscard]] bool sharded() const { return !layout.empty(); }
  // The first file whose verdict is the checkpoint's; null when none is
  // (a safe checkpoint, or a verdict that comes from `error`).
  [[nodiscard]] const FileSafety* worstFile() const;
  // The files with the checkpoint's verdict (all of them when it is safe).
  [[nodiscard]] size_t filesWithVerdict() const;
  // The dangerous and suspicious globals of every file as "module.name",
  // once each: the dangerous ones of all files first.
  [[nodiscard]] std::vector<std::string> offenders() const;
  // The same, of one level only.
  [[nodiscard]] std::vector<std::string> offenders(SafetyLevel level) const;
  // What was scanned: "3 rank files and .metadata", "2 shard files", "6 files".
  [[nodiscard]] std::string scope() const;
  // One line. A single file: SafetyReport::summary(). Sharded:
  //   "safe: 3 rank files and .metadata, only tensors and plain data
  //    (.metadata: safe for a DCP checkpoint's metadata)"
  //   "dangerous: __2_0.distcp would run code: posix.system"
  //   "suspicious: pickled objects that are not plain data in model_rank0.pt
  //    and 1 more file: torch.distributed._shard..."
  //   "unreadable: <the scan's error>"
  // and ", 1 missing file not scanned" when parts are missing.
  [[nodiscard]] std::string summary() const;

 private:
  // " (safe for a DeepSpeed checkpoint)": the layout profiles files were judged under.
  [[nodiscard]] std::string profilesNote() const;
};

// `path` a file, a sharded checkpoint's folder or its index / .metadata
// file. Each file of a layout is judged under that layout's profile
// (pickle_safety.h): DCP's .metadata, FSDP's and DeepSpeed's rank files,
// also when named on their own where they sit; a Hugging Face Trainer's
// training_args.bin beside its trainer_state.json or config.json. Never
// throws.
[[nodiscard]] CheckpointSafety scanCheckpoint(const std::string& path,
                                              const ScanLimits& limits = {});

// One pass (a file the reader opens anyway): the layout profile
// scanCheckpoint(path) judges `path` under, for ReadOptions::safetyProfile,
// when `path` is not a sharded checkpoint (probeSharded: the caller asks
// that first); nullopt for a DCP .distcp part (scanCheckpoint walks the
// archives its .metadata places in it).
[[nodiscard]] std::optional<SafetyProfile> singleFileProfile(const std::string& path);
// scanCheckpoint's answer for such a file from the report the reader's walk
// gave (CheckpointFile::safety(), opened with that profile).
[[nodiscard]] CheckpointSafety singleFileSafety(const std::string& path, SafetyReport report);

}  // namespace ckpt
