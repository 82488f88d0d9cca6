#pragma once
// What `ckptscope-cli ... --json` prints, parsed; a nonzero exit throws with its stderr.

#include <stdexcept>
#include <string>

#include "json_compare.h"
#include "run_process.h"

namespace ckpt::test {

inline json cliJson(const QString& cli, const QStringList& args) {
  const ProcessResult r = runProcess(cli, args, {}, 60000);
  if (r.exitCode != 0)
    throw std::runtime_error("ckptscope-cli " + args.join(' ').toStdString() + " exited " +
                             std::to_string(r.exitCode) + ": " + r.err.toStdString());
  return json::parse(r.out.toStdString());
}

}  // namespace ckpt::test
