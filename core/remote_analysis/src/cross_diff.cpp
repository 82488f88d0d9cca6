// diffAcrossMachines: each host's file as a skeleton here, its tensors'
// bytes fetched only where the digests differ, compared by diffCheckpoints.
#include "ckpt/remote/cross_diff.h"

#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

#include "ckpt/format/checkpoint_skeleton.h"
#include "ckpt/format/dtype.h"
#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/bytes_wire.h"
#include "skeleton_folder.h"
#include "wire_reader.h"

namespace ckpt::remote {
namespace {

// The largest file a skeleton may claim (64 TiB).
constexpr uint64_t kMaxFileBytes = uint64_t(1) << 46;
// The most files a sharded checkpoint's skeleton may hold.
constexpr size_t kMaxSkeletonFiles = size_t(1) << 20;

// Thrown through diffCheckpoints' workers when the comparison was cancelled.
struct Cancelled {};

// A tensorBytes event's {"offset":N,"data":"BASE64"}: read as the agent
// writes it (a megabyte of base64 is not worth a JSON tree), else parsed.
bool chunkOf(std::string_view text, uint64_t& offset, std::string_view& data) {
  constexpr std::string_view head = "{\"offset\":", mid = ",\"data\":\"";
  if (text.substr(0, head.size()) == head) {
    size_t at = head.size();
    uint64_t n = 0;
    const size_t digits = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - digits < 19)
      n = n * 10 + uint64_t(text[at++] - '0');
    if (at > digits && text.substr(at, mid.size()) == mid && text.size() >= at + mid.size() + 2 &&
        text.substr(text.size() - 2) == "\"}") {
      data = text.substr(at + mid.size(), text.size() - 2 - at - mid.size());
      if (data.find('"') == std::string_view::npos) {
        offset = n;
        return true;
      }
    }
  }
  static thread_local std::string parsedData;
  try {
    const Json ev = Json::parse(text);
    if (!ev.is_object() || !ev.contains("offset") || !ev["offset"].is_number_unsigned() ||
        !ev.contains("data") || !ev["data"].is_string())
      return false;
    offset = ev["offset"].get<uint64_t>();
    parsedData = ev["data"].get<std::string>();
    data = parsedData;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

struct End {
  const DiffEnd& where;
  std::unique_ptr<CheckpointFile> file;
  std::vector<std::string> digests;  // a host's, by tensor index ("": none)
  std::mutex agentMutex;             // one request at a time on its agent
  EndTraffic traffic;
  // A host's sharded checkpoint: its files here, and the folder they are
  // in on the host (what the reader's messages name there).
  std::shared_ptr<SkeletonFolder> folder;
  std::string hostBase;

  explicit End(const DiffEnd& w) : where(w) {}
  [[nodiscard]] bool remote() const { return where.agent != nullptr; }
  [[nodiscard]] std::string name() const { return where.host + ":" + where.path; }
};

class Comparison {
 public:
  Comparison(const DiffEnd& a, const DiffEnd& b, const CrossDiffOptions& options)
      : m_a(a), m_b(b), m_options(options) {}

  CrossDiff run() {
    CrossDiff out;
    try {
      for (End* e : {&m_a, &m_b}) open(*e);
      DiffOptions options;
      options.topN = m_options.topN;
      options.progress = [this](size_t done, size_t total) {
        return report("comparing", done, total);
      };
      options.tensorBytes = [this](const TensorDiff& t) { return pair(t); };
      try {
        out.diff = diffCheckpoints(*m_a.file, *m_b.file, options);
      } catch (const FormatError& err) {
        throw FormatError(asHost(err.what()));
      }
      for (End* e : {&m_a, &m_b}) {
        if (!e->folder) continue;
        // What the reader said here of a host's files, as it names them there.
        (e == &m_a ? out.diff.pathA : out.diff.pathB) = e->where.path;
        for (TensorDiff& t : out.diff.tensors) t.error = asHost(std::move(t.error));
        for (std::string& n : out.diff.notes) n = asHost(std::move(n));
      }
    } catch (const Cancelled&) {
      m_cancelled = true;
    } catch (const RemoteError& e) {
      if (!m_cancelled || e.code() != "cancelled") throw;
    }
    if (m_cancelled || out.diff.cancelled) {
      out.diff = CheckpointDiff();
      out.diff.pathA = m_a.where.path;
      out.diff.pathB = m_b.where.path;
      out.diff.cancelled = true;
    }
    if (m_a.folder || m_b.folder)
      out.skeletonFolders = std::make_shared<
          std::pair<std::shared_ptr<SkeletonFolder>, std::shared_ptr<SkeletonFolder>>>(m_a.folder,
                                                                                       m_b.folder);
    out.a = std::move(m_a.file);
    out.b = std::move(m_b.file);
    out.trafficA = m_a.traffic;
    out.trafficB = m_b.traffic;
    out.identical = m_identical;
    return out;
  }

 private:
  bool report(const std::string& phase, uint64_t done, uint64_t total) {
    if (stopping()) return false;
    if (!m_options.progress) return true;
    std::lock_guard lock(m_progressMutex);
    if (!m_options.progress(phase, done, total)) m_cancelled = true;
    return !m_cancelled;
  }

  // `text` with each host's sharded checkpoint named as on its host.
  std::string asHost(std::string text) const {
    for (const End* e : {&m_a, &m_b})
      if (e->folder) text = e->folder->asHost(std::move(text), e->hostBase);
    return text;
  }

  // A skeleton's [{offset, data}] parts, decoded (counted as travelled).
  std::vector<SkeletonPart> partsOf(End& e, const Reader& r, const std::string& what) {
    std::vector<SkeletonPart> parts;
    const Json& ps = r.array("parts", true);
    for (size_t i = 0; i < ps.size(); ++i) {
      const Reader p = Reader::object(ps[i], "parts[" + std::to_string(i) + "]", what);
      SkeletonPart part;
      part.offset = p.integer<uint64_t>("offset");
      if (!base64Decode(p.text("data", true), part.bytes)) p.fail("data", "is not base64");
      e.traffic.skeletonBytes += part.bytes.size();
      parts.push_back(std::move(part));
    }
    return parts;
  }

  // A host's sharded checkpoint: its files written here without their
  // storages' bytes, opened by the reader that opens such a folder here.
  void openSharded(End& e, const Reader& top, const std::string& what) {
    e.hostBase = top.text("base", true);
    const std::string open = top.text("open");
    auto folder = std::make_shared<SkeletonFolder>(e.name(), top.text("folder", true));
    const Json& files = top.array("files", true);
    if (files.size() > kMaxSkeletonFiles)
      throw std::runtime_error(e.name() + ": the host sends " + std::to_string(files.size()) +
                               " files (more than " + std::to_string(kMaxSkeletonFiles) + ")");
    bool opensSent = open.empty();
    for (size_t i = 0; i < files.size(); ++i) {
      const Reader f = Reader::object(files[i], "files[" + std::to_string(i) + "]", what);
      const std::string file = f.text("file", true);
      const uint64_t size = f.integer<uint64_t>("size");
      if (size > kMaxFileBytes)
        throw std::runtime_error(e.name() + ": the host says " + file + " holds " +
                                 std::to_string(size) + " bytes (more than " +
                                 std::to_string(kMaxFileBytes) + ")");
      folder->add(file, size, partsOf(e, f, what));
      opensSent = opensSent || file == open;
    }
    if (!opensSent) top.fail("open", "names no file it sent");
    e.folder = folder;
    try {
      e.file = CheckpointFile::open(folder->path(open));
    } catch (const FormatError& err) {
      throw FormatError(folder->asHost(err.what(), e.hostBase));
    }
    const std::string summary = top.text("summary", true);
    if (!e.file->shards() || e.file->shards()->summary() != summary)
      throw std::runtime_error(
          e.where.host + " reads " + e.where.path + " as " + summary + ", this ckptscope-cli as " +
          (e.file->shards() ? e.file->shards()->summary() : std::string("one file")) +
          ": update ckptscope-cli on one of them");
  }

  // Whether the comparison is to stop (asked by the agents' calls too).
  bool stopping() {
    if (!m_cancelled && m_options.cancelled && m_options.cancelled()) m_cancelled = true;
    return m_cancelled;
  }
  AgentClient::CancelFn cancelFn() {
    return [this] { return stopping(); };
  }

  void open(End& e) {
    if (!e.remote()) {
      e.file = CheckpointFile::open(e.where.path);
      return;
    }
    const std::string phase = "reading " + e.where.host;
    Json r;
    try {
      r = e.where.agent->call(
          "skeleton", Json{{"path", e.where.path}, {"digests", true}},
          [&](const Json& p) {
            report(phase, p.value("done", uint64_t(0)), p.value("total", uint64_t(0)));
          },
          cancelFn());
    } catch (const RemoteError& err) {
      if (err.code() == "unknown_method")
        throw RemoteError(err.code(),
                          "the ckptscope-cli on " + e.where.host + " (" +
                              e.where.agent->hello().value("version", std::string("?")) +
                              ") cannot send a checkpoint for a comparison with another "
                              "machine: update ckptscope-cli on the host (" +
                              installHint() + ")");
      if (err.code() == "cancelled") throw;
      throw RemoteError(err.code(), e.where.host + ": " + err.what());
    }
    if (stopping()) throw Cancelled{};
    const std::string what = "skeleton of " + e.name();
    const Reader top = Reader::object(r, "result", what);
    if (top.has("files")) {
      openSharded(e, top, what);
    } else {
      const uint64_t size = top.integer<uint64_t>("size");
      // Reserved (not filled) as one mapping: a claim past what any disk
      // holds is a broken or hostile host, not a file.
      if (size > kMaxFileBytes)
        throw std::runtime_error(e.name() + ": the host says the file holds " +
                                 std::to_string(size) + " bytes (more than " +
                                 std::to_string(kMaxFileBytes) + ")");
      e.file = openSkeleton(e.where.path, size, partsOf(e, top, what));
    }
    // The host read the file as this program does, or the tensors differ:
    // an agent of another version must not be trusted to have sent what
    // this reader needs.
    const Json& ts = top.array("tensors", true);
    const auto& tensors = e.file->tensors();
    if (ts.size() != tensors.size())
      throw std::runtime_error(e.where.host + " reads " + e.where.path + " as " +
                               std::to_string(ts.size()) + " tensors, this ckptscope-cli as " +
                               std::to_string(tensors.size()) +
                               ": update ckptscope-cli on one of them");
    e.digests.assign(ts.size(), std::string());
    for (size_t i = 0; i < ts.size(); ++i) {
      const Reader t = Reader::object(ts[i], "tensors[" + std::to_string(i) + "]", what);
      const TensorInfo& mine = tensors[i];
      Dims shape;
      for (const Json& d : t.array("shape", true)) {
        if (!d.is_number_integer()) t.fail("shape", "holds something that is not an integer");
        shape.push_back(d.get<int64_t>());
      }
      if (t.text("dtype", true) != dtypeName(mine.dtype) || shape != mine.shape)
        throw std::runtime_error(e.where.host + " reads tensor " + joinPath(mine.path) + " of " +
                                 e.where.path +
                                 " otherwise than this ckptscope-cli: update ckptscope-cli on "
                                 "one of them");
      e.digests[i] = t.text("digest");
    }
  }

  // The bytes of tensor `i` of `e`: mapped here, or fetched from its host.
  TensorData bytesOf(End& e, size_t i) {
    if (stopping()) throw Cancelled{};
    if (!e.remote()) return e.file->tensorData(i);
    const TensorInfo& t = e.file->tensors()[i];
    // What the header alone says cannot be read (a meta tensor, a storage
    // too short): the reader's error, the host's too, without asking it.
    // (Not tensorData() on every tensor: a deflated record is not here.)
    if (t.isMeta || t.storage < 0 || !t.error.empty() ||
        !e.file->storages()[size_t(t.storage)].error.empty())
      (void)e.file->tensorData(i);
    const std::string name = "tensor " + joinPath(t.path) + " of " + e.name();
    const uint64_t need = t.nbytes();  // from the header here, never from the answer
    auto buffer =
        std::shared_ptr<uint8_t[]>(new (std::nothrow) uint8_t[std::max<uint64_t>(need, 1)]);
    if (!buffer)
      throw std::runtime_error(name + ": its " + std::to_string(need) +
                               " bytes cannot be held here");
    uint64_t got = 0;
    std::string problem, chunk;
    const std::string phase = "fetching from " + e.where.host;
    {
      std::lock_guard lock(e.agentMutex);
      if (stopping()) throw Cancelled{};  // while another worker's request ran
      try {
        e.where.agent->callEventText("tensorBytes", Json{{"path", e.where.path}, {"tensor", i}}, {},
                                     cancelFn(), [&](std::string_view text) {
                                       if (!problem.empty()) return;
                                       uint64_t offset = 0;
                                       std::string_view data;
                                       if (!chunkOf(text, offset, data)) {
                                         problem = "an event that is not {offset, data}";
                                         return;
                                       }
                                       chunk.clear();
                                       if (!base64Decode(data, chunk)) {
                                         problem = "a chunk that is not base64";
                                       } else if (offset != got || chunk.size() > need - got) {
                                         problem = "a chunk at byte " + std::to_string(offset) +
                                                   " of " + std::to_string(chunk.size()) +
                                                   " bytes (expected byte " + std::to_string(got) +
                                                   " of " + std::to_string(need) + ")";
                                       } else {
                                         std::copy(chunk.begin(), chunk.end(), buffer.get() + got);
                                         got += chunk.size();
                                         report(phase, got, need);
                                       }
                                     });
      } catch (const RemoteError& err) {
        if (err.code() == "cancelled" && m_cancelled) throw Cancelled{};
        // The host could not read it: that tensor's error, as here.
        if (err.code() == "failed") throw FormatError(err.what());
        // (A connection's message names the host; the tensor is said here.)
        throw RemoteError(err.code(), name + ": " + err.what());
      }
      ++e.traffic.tensorsFetched;
      e.traffic.tensorBytes += got;
    }
    if (problem.empty() && got != need)
      problem = std::to_string(got) + " bytes where the header says " + std::to_string(need);
    if (!problem.empty()) throw std::runtime_error(name + ": the host sent " + problem);
    TensorInfo info = t;
    info.stride = contiguousStrides(t.shape);
    info.storageOffset = 0;
    return TensorData(info, ByteRegion{buffer, buffer.get(), need}, 0, /*bigEndian=*/false);
  }

  std::string digest(End& e, size_t i) {
    if (e.remote()) return e.digests[i];
    try {
      return tensorDigest(e.file->tensorData(i));
    } catch (const FormatError&) {
      return {};  // unreadable here: bytesOf says so, as a diff here does
    }
  }

  std::pair<TensorData, TensorData> pair(const TensorDiff& t) {
    const size_t ia = size_t(t.tensorA), ib = size_t(t.tensorB);
    if (t.dtypeA == t.dtypeB && (m_a.remote() || m_b.remote())) {
      // A host's digest first: without one, the side here is not hashed.
      const bool aFirst = m_a.remote();
      const std::string first = aFirst ? digest(m_a, ia) : digest(m_b, ib);
      if (!first.empty() && first == (aFirst ? digest(m_b, ib) : digest(m_a, ia))) {
        // The same bytes on both sides: compared with themselves, from here
        // when one side is here (nothing moves), else from a's host.
        ++m_identical;
        End& from = !m_a.remote() ? m_a : (!m_b.remote() ? m_b : m_a);
        TensorData d = bytesOf(from, &from == &m_a ? ia : ib);
        return {d, d};
      }
    }
    TensorData a = bytesOf(m_a, ia);
    return {std::move(a), bytesOf(m_b, ib)};
  }

  End m_a, m_b;
  const CrossDiffOptions& m_options;
  std::mutex m_progressMutex;
  std::atomic<bool> m_cancelled{false};
  std::atomic<size_t> m_identical{0};
};

}  // namespace

CrossDiff diffAcrossMachines(const DiffEnd& a, const DiffEnd& b, const CrossDiffOptions& options) {
  return Comparison(a, b, options).run();
}

}  // namespace ckpt::remote
