#pragma once
// Runs a program the way a user would and collects what it printed.

#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace ckpt::test {

struct ProcessResult {
  int exitCode = -1;  // -1 when it crashed or timed out
  QByteArray out, err;
};

// Waits for a started process and collects what it printed.
inline ProcessResult finishProcess(QProcess& p, int timeoutMs = 300000) {
  ProcessResult r;
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    return r;
  }
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

inline ProcessResult runProcess(const QString& program, const QStringList& args,
                                const QString& cwd = {}, int timeoutMs = 300000) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(program, args);
  return finishProcess(p, timeoutMs);
}

// The same with `env` as the program's environment.
inline ProcessResult runProcess(const QString& program, const QStringList& args,
                                const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  return finishProcess(p);
}

// Writes `text` to `path`, executable by its owner: a wrapper a test
// starts in place of a program. False when it cannot.
inline bool writeScript(const QString& path, const QByteArray& text) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) return false;
  f.close();
  return f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
}

// A wrapper of the agent `cli` that renames `method` in the requests on
// their way in: the agent answers unknown_method, as one from before that
// method does.
inline QByteArray renamingAgentScript(const QString& cli, const QString& method) {
  return QString("#!/bin/sh\nsed -u 's/\"method\":\"%1\"/\"method\":\"%1z\"/' | '%2' \"$@\"\n")
      .arg(method, cli)
      .toUtf8();
}

}  // namespace ckpt::test
