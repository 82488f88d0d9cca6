#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/format/input_file.h"
#include "ckpt/format/pickle_reader.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_info.h"
#include "ckpt/format/value.h"

namespace ckpt {

class ZipArchive;
class TensorData;
class ShardSet;
struct SafetyWalk;

// Pickle: a plain pickle file (pickle.dump, protocol 0-5; .pkl / .pickle):
// its value tree, opaque objects as ever, no tensors.
// Sharded: a checkpoint written by many ranks or in many shards, opened as
// one (a folder or an index file; shards() says how it is laid out).
enum class FileFormat { TorchZip, TorchLegacy, Safetensors, Pickle, Sharded };
// "torch-zip", "torch-legacy", "safetensors", "pickle", "sharded"
std::string_view formatName(FileFormat f);

// What the first bytes say a file is, reading at most 512 of them (a zip may
// be a torch checkpoint or a TorchScript archive: only its records tell).
// TorchLegacy: readLegacyHead says Legacy or Damaged (a damaged one is still
// opened as legacy, to report the damage).
enum class Sniff { Zip, TorchLegacy, Safetensors, Tar, Pickle, Unknown };
Sniff sniffFile(const InputFile& file);

// The one rule that tells a torch legacy file (torch.save with
// _use_new_zipfile_serialization=False, pickle protocol 0-5) from a plain
// pickle, by what its first pickles hold: the magic number, then the
// protocol version 1001, then the sys_info dict, then the main object.
// The magic number alone is proof; when it is damaged or replaced by
// another pickle, the protocol version and a sys_info dict right after it
// (after the first pickle, or within the first 64 bytes) still say
// legacy. Reads only the small pickles, never the main one.
struct LegacyHead {
  enum class Verdict {
    NotLegacy,
    Legacy,   // the three pickles are what torch writes
    Damaged,  // a legacy file, but one of them is not: `damage` says where
  };
  Verdict verdict = Verdict::NotLegacy;
  // Where the main pickle starts (Legacy, once sys_info was read whole).
  uint64_t mainOffset = 0;
  bool littleEndian = true;  // sys_info's little_endian
  // Damaged: "the magic number pickle (bytes 0-14) differs from torch's at
  // byte 7: 0x47, torch writes 0x46" and the like, with byte offsets.
  std::string damage;
};
// `data`: the first `size` bytes of a file of `fileSize` bytes. When they
// end before sys_info does but the file goes on, the magic number decides
// (mainOffset stays 0).
LegacyHead readLegacyHead(const uint8_t* data, uint64_t size, uint64_t fileSize);
// A file whose first pickle (data[0, firstEnd), decoded to `first`) is not
// torch's magic number but is followed by torch's protocol version and
// sys_info pickles: a torch legacy file with its magic number replaced, of
// any length (the sniff sees only its first bytes). Returns what is wrong,
// as readLegacyHead's `damage` says it, or "" when the file is no such thing.
std::string legacyMagicReplaced(const uint8_t* data, uint64_t size, uint64_t firstEnd,
                                const Value* first);

// Where open() spends its time, in seconds per phase (for benchmarks: see
// ReadOptions::phases). Zip files fill every phase, other formats `parse`
// and `finish` (the rest stays 0).
struct OpenPhases {
  double sniff = 0;       // open, fstat, the first bytes
  double directory = 0;   // zip central directory, records by name
  double pickleRead = 0;  // data.pkl into memory
  double parse = 0;       // the pickle: value tree, tensor and storage tables
  double records = 0;     // every storage's record found and its size checked
  double finish = 0;      // tensors in tree order with their paths, extents checked
};

struct ReadOptions {
  // When set, open() writes its phase times here (a clock read per phase).
  OpenPhases* phases = nullptr;
  PickleLimits limits;
  uint64_t maxPickleBytes = 1ull << 30;
  uint64_t maxHeaderBytes = 100ull << 20;  // safetensors JSON header
  // Directory listings need step, loss and the like, not tensors: decode the
  // tree with rebuild calls left as opaque objects and build no tensor or
  // storage table (tensors() stays empty).
  bool metadataOnly = false;
  // Read only `sliceLength` bytes from `sliceOffset` on, as a file of their
  // own (DCP keeps one torch.save archive per chunk inside a .distcp file).
  uint64_t sliceOffset = 0;
  std::optional<uint64_t> sliceLength;
  // Also judge whether the file would run code if Python loaded it, on the
  // reader's own walk of its pickles (see CheckpointFile::safety()), under
  // this layout profile (checkpoint_safety.h says which a file gets).
  bool safety = false;
  SafetyProfile safetyProfile = SafetyProfile::None;
  // Refuse a sharded checkpoint (a FormatError) instead of opening it: a
  // listing opens one file with its tensor table, a sharded one from its
  // metadata, without probing the path first.
  bool singleFileOnly = false;
};

// One checkpoint file, opened lazily: the value tree and the tensor and
// storage tables are decoded; no tensor byte is read until tensorData().
class CheckpointFile {
 public:
  // Throws FormatError whose message starts with the path. A folder or an
  // index file of a sharded checkpoint (probeSharded) opens as one logical
  // checkpoint: a state dict of its logical tensors, each read across its
  // chunks (format() Sharded, shards()).
  static std::unique_ptr<CheckpointFile> open(const std::string& path,
                                              const ReadOptions& options = {});
  // The same for a file's bytes already in memory (one file, never a
  // sharded folder), named `name`: read through the same code as a file
  // on disk (InputFile over memory), so a fuzzer needs no file per input.
  static std::unique_ptr<CheckpointFile> openBytes(const std::string& name, ByteRegion bytes,
                                                   const ReadOptions& options = {});
  ~CheckpointFile();

  [[nodiscard]] const std::string& path() const { return m_path; }
  [[nodiscard]] FileFormat format() const { return m_format; }
  // Bytes on disk: every file of a sharded checkpoint together.
  [[nodiscard]] uint64_t fileSize() const;
  [[nodiscard]] int64_t mtime() const { return m_file->mtime(); }
  [[nodiscard]] bool bigEndian() const { return m_bigEndian; }
  [[nodiscard]] const Value* root() const { return m_root; }
  // Tensors in order of first appearance in the tree (depth first, file
  // order); Value::index of a Tensor node indexes this list.
  [[nodiscard]] const std::vector<TensorInfo>& tensors() const { return m_table.tensors; }
  [[nodiscard]] const std::vector<StorageInfo>& storages() const { return m_table.storages; }
  [[nodiscard]] const ZipArchive* zip() const { return m_zip.get(); }
  // The file itself; for a sharded checkpoint its description (index,
  // .metadata) or its first part.
  [[nodiscard]] const InputFile& input() const { return *m_file; }
  // How a sharded checkpoint is laid out; null for a single file.
  // Tensor i of tensors() is logical tensor i of shards()->tensors().
  [[nodiscard]] const ShardSet* shards() const { return m_shards.get(); }
  [[nodiscard]] size_t valueCount() const { return m_arena.size(); }

  // Maps just the bytes tensor `i` views (checked against its storage and the
  // file); throws FormatError naming the tensor when they are not there.
  [[nodiscard]] TensorData tensorData(size_t i) const;
  // The bytes of a whole storage. A sharded checkpoint's logical tensor i is
  // storage i: its chunks are assembled into a heap buffer (one tensor).
  [[nodiscard]] ByteRegion storageBytes(size_t storage) const;

  // With ReadOptions::safety: what scanFile(path(), {}, profile) reports
  // (pickle_safety.h), from the same walk that built the tree; only
  // pickles the reader does not walk (a zip's other records, a legacy
  // file's first three, more pickles after a plain pickle's first) are
  // walked by the scan. Null without ReadOptions::safety, for a sharded
  // checkpoint or a slice, and where the walk went past a bound of the
  // scan's own (ScanLimits): ask scanFile then.
  [[nodiscard]] const SafetyReport* safety() const;

  // Every integrity problem: zip CRCs, storage records, tensor extents.
  // Empty when the file is intact. Reads every byte.
  [[nodiscard]] std::vector<std::string> verify() const;

 private:
  CheckpointFile() = default;
  // open() and openBytes() (`bytes` non-null).
  static std::unique_ptr<CheckpointFile> openFrom(const std::string& path, const ByteRegion* bytes,
                                                  const ReadOptions& options);
  void loadTorchZip(const ReadOptions& options);
  void loadTorchLegacy(const ReadOptions& options);
  void loadSafetensors(const ReadOptions& options);
  void loadPlainPickle(const ReadOptions& options);
  void loadSharded(const ShardProbe& probe, const ReadOptions& options);
  void finish();  // number tensors in tree order, check extents
  // Adds the time since the last lap to `field` of m_phases (when timing).
  void lap(double OpenPhases::*field);
  bool m_metadataOnly = false;
  OpenPhases* m_phases = nullptr;
  int64_t m_lapNs = 0;

  std::string m_path;
  std::unique_ptr<InputFile> m_file;
  std::unique_ptr<ShardSet> m_shards;
  std::unique_ptr<ZipArchive> m_zip;
  std::string m_zipRoot;  // "archive/" or "<stem>/"
  FileFormat m_format = FileFormat::TorchZip;
  bool m_bigEndian = false;
  ValueArena m_arena;
  const Value* m_root = nullptr;
  TensorTable m_table;
  std::unique_ptr<SafetyWalk> m_safety;  // with ReadOptions::safety
};

// Walks the tree depth first in file order, visiting each container once
// (shared references and cycles are safe), and calls `fn` for each Tensor
// node with its path. Opaque objects are entered too (their arguments, state
// and items) so that tensors inside pickled modules are found.
void walkTensors(const Value* root,
                 const std::function<void(const Value* tensor, const TensorPath& path)>& fn);

}  // namespace ckpt
