#include "training/trainrunner.h"

#include <QElapsedTimer>
#include <exception>

#include "training/trainbackendloader.h"

namespace ckpt {

void registerTrainMetaTypes() {
  qRegisterMetaType<ckpt::TrainJobInfo>();
  qRegisterMetaType<ckpt::StepReport>();
  qRegisterMetaType<QList<ckpt::StepReport>>();
  qRegisterMetaType<ckpt::RunResult>();
}

TrainWorker::TrainWorker(TrainRequest request, std::shared_ptr<std::atomic<bool>> stop)
    : m_request(std::move(request)), m_stop(std::move(stop)) {}

void TrainWorker::run() {
  // The one place training errors are caught: each becomes failed() with
  // the trainer's message (it names the file, the field, the step).
  try {
    const TrainBackendLoad& loaded = trainBackend();
    if (!loaded.backend) {
      emit failed(loaded.error);
      return;
    }
    TrainBackend& backend = *loaded.backend;
    backend.setCpuThreads(m_request.cpuThreads);
    Processes processes;
    processes.count = m_request.processes;
    processes.program = m_request.trainProgram;
    processes.cpuThreads = m_request.cpuThreads;
    std::unique_ptr<TrainJob> job;
    switch (m_request.kind) {
      case TrainRequest::Kind::NewRun:
        job = backend.newRun(m_request.config, processes);
        break;
      case TrainRequest::Kind::Resume:
        job = backend.resume(m_request.resume, processes);
        break;
      case TrainRequest::Kind::Finetune:
        job = backend.finetune(m_request.checkpoint, m_request.finetune, processes);
        break;
    }
    JobEvents events;
    events.prepared = [this](const TrainJobInfo& info) { emit prepared(info); };
    events.log = [this](const std::string& line) { emit logLine(QString::fromStdString(line)); };
    events.stopRequested = [this] { return m_stop->load(); };

    QList<StepReport> pending;
    QElapsedTimer sinceSent;
    sinceSent.start();
    const RunResult result = job->run(
        [&](const StepReport& r) {
          pending.append(r);
          const bool event =
              r.valLoss || !r.savedCheckpoint.empty() || !r.message.empty() || r.step >= r.maxSteps;
          if (event || sinceSent.elapsed() >= kProgressIntervalMs || m_stop->load()) {
            emit progress(pending);
            pending.clear();
            sinceSent.restart();
          }
          return !m_stop->load();
        },
        events);
    if (!pending.isEmpty()) emit progress(pending);
    emit finished(result);
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  } catch (...) {
    emit failed(tr("training failed with an unknown error"));
  }
}

TrainRunner::TrainRunner(QObject* parent) : QObject(parent) {
  registerTrainMetaTypes();
  m_thread.setObjectName(QStringLiteral("ckptscope-train"));
}

TrainRunner::~TrainRunner() {
  stop();
  m_thread.quit();
  m_thread.wait();
}

bool TrainRunner::start(const TrainRequest& request) {
  if (m_running) return false;
  m_stop = std::make_shared<std::atomic<bool>>(false);
  auto* worker = new TrainWorker(request, m_stop);
  worker->moveToThread(&m_thread);
  connect(&m_thread, &QThread::started, worker, &TrainWorker::run);
  connect(&m_thread, &QThread::finished, worker, &QObject::deleteLater);
  connect(worker, &TrainWorker::prepared, this, &TrainRunner::prepared);
  connect(worker, &TrainWorker::progress, this, &TrainRunner::progress);
  connect(worker, &TrainWorker::logLine, this, &TrainRunner::logLine);
  // The thread's event loop ends once the worker is done; onDone() runs in
  // the GUI thread after the worker's last signal has been delivered.
  connect(worker, &TrainWorker::finished, this, [this](const RunResult& r) {
    onDone();
    emit finished(r);
  });
  connect(worker, &TrainWorker::failed, this, [this](const QString& message) {
    onDone();
    emit failed(message);
  });
  m_running = true;
  m_thread.start();
  return true;
}

void TrainRunner::stop() {
  if (m_stop) m_stop->store(true);
}

void TrainRunner::onDone() {
  m_thread.quit();
  m_thread.wait();  // the worker has returned from run(): this is immediate
  m_running = false;
}

}  // namespace ckpt
