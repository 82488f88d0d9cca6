#pragma once
// Writing .pt files that Python's torch.load reads (FORMAT.md section 5).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/format/input_file.h"
#include "ckpt/format/tensor_info.h"
#include "ckpt/format/value.h"

namespace ckpt {

class CheckpointFile;

// A storage's bytes as they go into `data/<key>`: contiguous, little-endian,
// exactly numel x element size of the StorageInfo it belongs to.
struct StorageBytes {
  const void* data = nullptr;
  uint64_t size = 0;
};

struct WriteOptions {
  // The archive's root folder; "" takes the file's stem (as torch.save does),
  // or "archive" when the stem is not plain ASCII.
  std::string archiveName;
};

// Writes `root` as a torch zip file. Tensor nodes in the tree index
// `table.tensors` (dtype, shape, stride, storage offset, requires_grad,
// storage); TensorInfo::storage indexes `table.storages` (key, dtype, numel,
// location) and `bytes`. Dicts tagged kOrderedDict are written as
// collections.OrderedDict with their attributes (`state`, e.g. _metadata).
// A node met twice (the same pointer) is written once and then fetched from
// the pickle memo (BINPUT/BINGET, which torch 1.13's weights_only unpickler
// accepts), so Python gets one shared object; cycles through lists, dicts and
// object state are kept that way, a cycle through a tuple or call arguments
// is refused ("cannot write a cycle"). Storages are renumbered "0", "1", ...
// in order of first use. `bytes` must stay valid for the whole call; they are
// streamed into the file in chunks, never copied whole.
// Crash-safe: a temporary file in the same directory, fsync, rename; the
// final path never holds a partial file and an existing file survives any
// failure. Throws FormatError naming the path and what failed; a problem
// with the tree or the sizes is found before any file is created.
void writeTorchFile(const std::string& path, const Value* root, const TensorTable& table,
                    const std::vector<StorageBytes>& bytes, const WriteOptions& options = {});

// writeTorchFile with each storage's bytes fetched just before its record is
// written (`fetch(storage index)`), so that one storage at a time is held.
void writeTorchFileFetching(const std::string& path, const Value* root, const TensorTable& table,
                            const std::function<ByteRegion(size_t storage)>& fetch,
                            const WriteOptions& options = {});

// One tensor of a safetensors file: contiguous little-endian bytes.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::Float32;
  Dims shape;
};
// Writes a safetensors file (FORMAT.md section 7): the header with
// `metadata` as "__metadata__" (omitted when empty), then every entry's bytes
// from `fetch(entry index)`, one entry in memory at a time. Crash-safe as
// writeTorchFile; throws FormatError for a dtype safetensors has no name for
// or a size that does not match.
void writeSafetensorsFile(const std::string& path, const std::vector<SafetensorsEntry>& entries,
                          const std::vector<std::pair<std::string, std::string>>& metadata,
                          const std::function<ByteRegion(size_t entry)>& fetch);

// Writes again everything a file our reader opened holds (tree, tensors,
// storages with their bytes) so that Python loads equal values: torch zip,
// legacy and safetensors files alike (safetensors becomes a dict of name ->
// tensor with "__metadata__" as an ordinary entry). Big-endian files are
// byteswapped to little-endian while streaming. Storages are fetched one at a
// time (a deflated record is inflated only while it is written).
void rewriteCheckpoint(const CheckpointFile& file, const std::string& path,
                       const WriteOptions& options = {});

// Builds trees for writeTorchFile: values live in the builder's arena.
class TreeBuilder {
 public:
  [[nodiscard]] ValueArena& arena() { return m_arena; }
  Value* none();
  Value* boolean(bool b);
  Value* integer(int64_t v);
  Value* real(double v);
  Value* str(std::string_view s);
  Value* bytes(std::string_view s);
  Value* list();
  Value* tuple(std::initializer_list<const Value*> items);
  Value* dict();
  Value* orderedDict();          // with an empty `_metadata` attribute, as state_dict() has
  Value* tensor(int64_t index);  // a Tensor node for table.tensors[index]
  // Sets `key` in a dict: replaces the value of an equal str / int key
  // (linear search), else appends the entry (dicts keep insertion order).
  void set(Value* dict, std::string_view key, const Value* v);
  void set(Value* dict, int64_t key, const Value* v);
  void append(Value* list, const Value* v);  // a list, tuple or set

  // Additions beyond the basic helpers:
  Value* bigInt(std::string_view decimal);  // an int beyond 64 bits, "-123..." as decimal text
  Value* global(std::string_view qualifiedName);  // "module.name": pickled as GLOBAL module name
  // An opaque Python object: `cls(*args)` (REDUCE), or `cls.__new__(cls, *args)`
  // when newObj (NEWOBJ); set `state` on the result for a BUILD.
  Value* object(std::string_view cls, std::initializer_list<const Value*> args,
                bool newObj = false);

 private:
  Value* textNode(Value::Kind kind, std::string_view text);  // Str, Bytes, BigInt, Global

  ValueArena m_arena;
};

// The pieces of the writer, exposed for tests.
namespace writer {

// data.pkl for a tree: protocol 2, storages numbered "0", "1", ... in order
// of first use. Throws FormatError (without a path) when the tree cannot be
// written: a cycle through a tuple or call arguments, a tensor node without
// a table entry, a dtype PyTorch 1.13 has no storage class for, ...
struct PickledTree {
  std::string bytes;
  struct UsedStorage {
    int storage = -1;            // index into table.storages
    std::string key;             // the key written: "0", "1", ...
    DType dtype = DType::UInt8;  // the storage class written (the dtype its tensors have)
    uint64_t numel = 0;          // elements of `dtype` written into the persistent id
    uint64_t nbytes = 0;         // bytes of data/<key>
  };
  std::vector<UsedStorage> storages;  // in key order "0", "1", ...
};
PickledTree pickleTree(const Value* root, const TensorTable& table);

// Zip records as torch writes them (FORMAT.md section 1): stored, flags
// 0x0808 (data descriptor, UTF-8), CRC and sizes in the data descriptor and
// the central directory, a 'FB' extra padded with 'Z' so that every record's
// data starts at a multiple of 64. A record whose size reaches 0xFFFFFFFF
// gets zip64 sizes (local extra, 24-byte descriptor, central extra); one
// whose local header starts at or past 0xFFFFFFFF gets its offset in the
// central zip64 extra. The end always has a zip64 end record and locator.
namespace zip {
constexpr uint64_t kAlignment = 64;
constexpr uint64_t kZip64Limit = 0xFFFFFFFFull;  // a 32-bit field at or above this goes to zip64
[[nodiscard]] bool needsZip64Sizes(uint64_t size);
[[nodiscard]] bool needsZip64Offset(uint64_t offset);
// The local header (with extras) for a record starting at `offset`; the data
// follows it directly, at a multiple of kAlignment.
[[nodiscard]] std::string localHeader(std::string_view name, uint64_t offset, uint64_t size);
[[nodiscard]] std::string dataDescriptor(uint32_t crc, uint64_t size);
[[nodiscard]] std::string centralHeader(std::string_view name, uint64_t offset, uint64_t size,
                                        uint32_t crc);
// zip64 end record + locator + end record, for a central directory of
// `entries` records, `cdSize` bytes at `cdOffset`.
[[nodiscard]] std::string endRecords(uint64_t entries, uint64_t cdOffset, uint64_t cdSize);
}  // namespace zip

}  // namespace writer

}  // namespace ckpt
