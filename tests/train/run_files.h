#pragma once
// What a run directory holds, byte for byte: tests of "never lose a run"
// compare these before and after (a refused train, a branch, a kill).

#include <QCryptographicHash>
#include <QProcess>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace ckpt::test {

inline std::string fileContents(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// relative path -> SHA-256 of every regular file under `dir` (.trash/ too,
// unless `skipTrash`).
inline std::map<std::string, QByteArray> fileDigests(const std::string& dir,
                                                     bool skipTrash = false) {
  namespace fs = std::filesystem;
  std::map<std::string, QByteArray> out;
  if (!fs::exists(dir)) return out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    if (skipTrash && it->is_directory() && it->path().filename() == ".trash") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    const std::string bytes = fileContents(it->path());
    out[fs::path(it->path()).lexically_relative(dir).string()] =
        QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha256);
  }
  return out;
}

// The pid of a process that has ended (and been reaped): no process has it.
inline qint64 endedPid() {
  QProcess p;
  p.start("sh", {"-c", "exit 0"});
  p.waitForStarted();
  const qint64 pid = p.processId();
  p.waitForFinished();
  return pid;
}

}  // namespace ckpt::test
