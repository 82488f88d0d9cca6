#pragma once
// A sharded checkpoint of a host, here without its storages' bytes
// (docs/REMOTE.md, "Comparing across machines"): the files the host's
// `skeleton` sent (its description whole, each part without its storages)
// written as sparse files, of their sizes on the host, into a private
// folder of their own; the bytes that did not travel are holes, which the
// reader never reads. Opened there by the reader that opens a sharded
// checkpoint here (CheckpointFile::open), so its logical tensors, items and
// layout are the host's. The folder and what was written in it are removed
// when this goes; nothing else is ever touched.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_skeleton.h"

namespace ckpt::remote {

class SkeletonFolder {
 public:
  // A new folder `name` (one plain path component, the checkpoint folder's
  // name on the host) inside a new private folder under $TMPDIR (or /tmp).
  // `what` names the host's checkpoint in messages. Throws
  // std::runtime_error when it cannot be made or `name` is not plain.
  SkeletonFolder(const std::string& what, const std::string& name);
  ~SkeletonFolder();
  SkeletonFolder(const SkeletonFolder&) = delete;
  SkeletonFolder& operator=(const SkeletonFolder&) = delete;

  // Writes `file` (relative, '/'-separated, no "." or ".." component, not
  // written before) of `size` bytes with `parts` in place. Throws
  // std::runtime_error naming the file for a name that is not plain, a part
  // past `size` and a write that fails (the disk full).
  void add(const std::string& file, uint64_t size, const std::vector<SkeletonPart>& parts);

  // The checkpoint folder here, and `rel` inside it ("" : the folder).
  [[nodiscard]] const std::string& folder() const { return m_folder; }
  [[nodiscard]] std::string path(const std::string& rel) const;

  // `text` with this folder's path put back as the host's (`hostBase`):
  // what the reader says here of a file names the file there.
  [[nodiscard]] std::string asHost(std::string text, const std::string& hostBase) const;

 private:
  std::string m_what;
  std::string m_root;                  // the private folder (mkdtemp)
  std::string m_folder;                // m_root + "/" + name
  std::vector<std::string> m_files;    // written, to be unlinked
  std::vector<std::string> m_folders;  // made (m_root first), removed last to first
};

}  // namespace ckpt::remote
