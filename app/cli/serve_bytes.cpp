// The agent's side of a comparison with a file on another machine
// (docs/REMOTE.md, ckpt/remote/cross_diff.h): `skeleton` sends a checkpoint
// without its storages' bytes, with a digest of each tensor's bytes;
// `tensorBytes` sends one tensor's bytes, in base64 events of 1 MiB.
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <mutex>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_skeleton.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/dtype.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/remote/bytes_wire.h"
#include "serve.h"

namespace ckpt::cli::serve {
namespace {

// The file last asked for, kept open: a comparison asks for its tensors one
// request at a time, and opening a 1.8 GB checkpoint's pickle for each
// would cost more than some tensors' bytes. Opened again when the file
// changed (size, mtime).
std::shared_ptr<const CheckpointFile> openCached(const std::string& path) {
  static std::mutex mutex;
  static std::string cachedPath;
  static std::shared_ptr<const CheckpointFile> cached;
  static struct stat cachedStat {};
  struct stat st {};
  const bool statted = ::stat(path.c_str(), &st) == 0;
  std::lock_guard lock(mutex);
  if (cached && statted && path == cachedPath && st.st_size == cachedStat.st_size &&
      st.st_mtim.tv_sec == cachedStat.st_mtim.tv_sec &&
      st.st_mtim.tv_nsec == cachedStat.st_mtim.tv_nsec && st.st_ino == cachedStat.st_ino)
    return cached;
  cached = CheckpointFile::open(path);  // FormatError names the file and byte
  cachedPath = path;
  cachedStat = st;
  return cached;
}

// [{offset, data}] of `ranges` of `in`, the bytes in base64.
Json partsJson(const InputFile& in, const std::vector<ByteRange>& ranges) {
  Json parts = Json::array();
  for (const ByteRange& r : ranges) {
    const std::vector<uint8_t> bytes = in.read(r.offset, r.length);
    parts.push_back(
        Json{{"offset", r.offset},
             {"data", remote::base64Encode(std::string_view(
                          reinterpret_cast<const char*>(bytes.data()), bytes.size()))}});
  }
  return parts;
}

Json shapeJson(const Dims& shape) {
  Json out = Json::array();
  for (int64_t d : shape) out.push_back(d);
  return out;
}

}  // namespace

Json skeleton(Call& call) {
  const std::string path = call.path("path");
  const auto file = openCached(path);
  const Json digestsField = call.params.contains("digests") ? call.params["digests"] : Json(true);
  if (!digestsField.is_boolean())
    throw ProtocolError("bad_field", "digests: must be true or false");
  Json answer{{"path", path},
              {"size", file->shards() ? file->fileSize() : file->input().size()},
              {"format", std::string(formatName(file->format()))}};
  if (!file->shards()) {
    answer["parts"] = partsJson(file->input(), skeletonRanges(*file));
  } else {
    // Every file its reader reads, below the folder the path names (or the
    // index's folder), as that folder's name and paths relative to it.
    namespace fs = std::filesystem;
    struct stat st {};
    const bool folder = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    fs::path base = fs::path(path).lexically_normal();
    if (base.has_parent_path() && base.filename().empty()) base = base.parent_path();
    std::string open;
    if (!folder) {
      open = base.filename().string();
      base = base.parent_path();
    }
    if (base.empty()) base = ".";
    Json files = Json::array();
    for (const SkeletonFileRanges& f : shardedSkeletonRanges(*file, base.string())) {
      throwIfCancelled(call);
      const InputFile in((base / f.file).string());
      if (in.size() != f.size)
        throw ProtocolError("failed", (base / f.file).string() + " changed while it was read");
      files.push_back(Json{{"file", f.file}, {"size", f.size}, {"parts", partsJson(in, f.ranges)}});
    }
    fs::path named = fs::absolute(base).lexically_normal();  // "/x/." -> "/x/": its name
    if (!named.has_filename()) named = named.parent_path();
    answer["folder"] = named.filename().string();
    answer["base"] = base.string();
    answer["open"] = open;
    answer["summary"] = file->shards()->summary();
    answer["files"] = std::move(files);
  }
  // Digests of the tensors a diff compares: the model state dict's (an
  // optimizer's moments, twice the model, are not read), or every tensor
  // when there is none (diffCheckpoints compares them all then).
  std::vector<bool> wanted(file->tensors().size(), digestsField.get<bool>());
  if (digestsField.get<bool>()) {
    const CheckpointView view(*file);
    if (view.modelState() && !view.entries().empty()) {
      wanted.assign(wanted.size(), false);
      for (const StateEntry& e : view.entries())
        if (e.tensor >= 0 && size_t(e.tensor) < wanted.size()) wanted[size_t(e.tensor)] = true;
    }
  }
  uint64_t total = 0, done = 0;
  for (size_t i = 0; i < file->tensors().size(); ++i)
    if (wanted[i]) total += file->tensors()[i].nbytes();
  Json tensors = Json::array();
  for (size_t i = 0; i < file->tensors().size(); ++i) {
    const TensorInfo& t = file->tensors()[i];
    Json entry{{"dtype", std::string(dtypeName(t.dtype))}, {"shape", shapeJson(t.shape)}};
    if (digestsField.get<bool>() && !wanted[i]) {
      entry["digest"] = nullptr;  // not compared: asked for (tensorBytes) if ever it is
    } else if (digestsField.get<bool>()) {
      // A tensor without readable bytes has no digest: its bytes are asked
      // for, and the answer is the reader's error, as a diff here gives it.
      try {
        const std::string d = tensorDigest(file->tensorData(i), [&](uint64_t bytes) {
          call.progress(done + bytes, total);
          return !call.cancelled;
        });
        throwIfCancelled(call);
        entry["digest"] = d;
      } catch (const FormatError&) {
        entry["digest"] = nullptr;
      }
    }
    if (wanted[i]) done += t.nbytes();
    tensors.push_back(std::move(entry));
  }
  call.progress(total, total);
  answer["tensors"] = std::move(tensors);
  return answer;
}

Json tensorBytes(Call& call) {
  const std::string path = call.path("path");
  const auto file = openCached(path);
  const int64_t i = call.integer("tensor", -1, 0, int64_t(file->tensors().size()) - 1);
  const TensorData data = file->tensorData(size_t(i));  // FormatError: `failed`
  const DType dtype = data.info().dtype;
  // Elements per event: a whole number of bytes for the packed types.
  const size_t perEvent = std::max<size_t>(8, remote::kTensorChunkBytes / size_t(dtypeSize(dtype)));
  std::string buffer(dtypeBytesFor(dtype, perEvent), '\0');
  std::string event;  // one event's text, its capacity kept from chunk to chunk
  const uint64_t total = dtypeBytesFor(dtype, data.numel());
  uint64_t offset = 0;
  for (uint64_t first = 0; first < data.numel();) {
    throwIfCancelled(call);
    const size_t n = data.readBytes(first, perEvent, reinterpret_cast<uint8_t*>(buffer.data()));
    if (n == 0)
      throw ProtocolError("failed", path + ": tensor " + std::to_string(i) + ": short read");
    const uint64_t bytes = dtypeBytesFor(dtype, n);
    // {"offset":N,"data":"..."} written out: base64 needs no escaping.
    event.assign("{\"offset\":").append(std::to_string(offset)).append(",\"data\":\"");
    remote::base64Append(std::string_view(buffer.data(), bytes), event);
    event.append("\"}");
    call.eventText(event);
    first += n;
    offset += bytes;
    call.progress(offset, total);
  }
  return Json{{"tensor", i}, {"bytes", offset}};
}

}  // namespace ckpt::cli::serve
