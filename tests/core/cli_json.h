#pragma once
// What `ckptscope-cli ... --json` (or a Python reader) prints, parsed; a nonzero exit throws
// with its stderr.

#include <stdexcept>
#include <string>

#include "json_compare.h"
#include "run_process.h"

namespace ckpt::test {

// What `program args` prints as JSON (ckptscope-cli, or a Python reader).
inline json runJson(const QString& program, const QStringList& args, int timeoutMs = 120000) {
  const ProcessResult r = runProcess(program, args, {}, timeoutMs);
  if (r.exitCode != 0)
    throw std::runtime_error(program.toStdString() + " " + args.join(' ').toStdString() +
                             " exited " + std::to_string(r.exitCode) + ": " + r.err.toStdString());
  return json::parse(r.out.toStdString());
}

inline json cliJson(const QString& cli, const QStringList& args) {
  return runJson(cli, args, 60000);
}

}  // namespace ckpt::test
