// What a background job (backgroundjob.h) hands its finish: the work's
// result itself, moved, never copied (a scan's result is 50,000 checkpoints:
// a copy on the GUI thread took as long as listing the last of them), also
// a result that cannot be copied; a failure's message; a cancelled job's
// outcome; a superseded request's result dropped.
#include <QtTest>

#include <atomic>
#include <memory>
#include <stdexcept>

#include "backgroundjob.h"

using namespace ckpt;

namespace {

std::atomic<int> g_copies{0};

// A result that counts how often it is copied.
struct Counted {
  int value = 0;
  Counted() = default;
  explicit Counted(int v) : value(v) {}
  Counted(const Counted& o) : value(o.value) { ++g_copies; }
  Counted& operator=(const Counted& o) {
    value = o.value;
    ++g_copies;
    return *this;
  }
  Counted(Counted&&) noexcept = default;
  Counted& operator=(Counted&&) noexcept = default;
};

// Waits (events running) until `done` is true.
bool waitFor(const bool& done) {
  return QTest::qWaitFor([&] { return done; }, 10000);
}

}  // namespace

class TestBackgroundJob : public QObject {
  Q_OBJECT

 private slots:
  void resultIsNotCopied() {
    QObject context;
    BackgroundJob<Counted> job(&context);
    g_copies = 0;
    bool done = false;
    std::optional<Counted> got;
    job.start([](JobProgress&) { return Counted(42); },
              [&](JobOutcome outcome, std::optional<Counted> result, const QString&) {
                QCOMPARE(outcome, JobOutcome::Done);
                got = std::move(result);
                done = true;
              });
    QVERIFY(waitFor(done));
    QVERIFY(got);
    QCOMPARE(got->value, 42);
    QCOMPARE(g_copies.load(), 0);
  }

  void keyedResultIsNotCopied() {
    QObject context;
    BackgroundJobs<int, Counted> jobs(&context);
    g_copies = 0;
    int done = 0, sum = 0;
    for (int k = 1; k <= 3; ++k)
      jobs.start(
          k, [k](JobProgress&) { return Counted(k * 10); },
          [&](JobOutcome, std::optional<Counted> result, const QString&) {
            sum += result ? result->value : -1000;
            ++done;
          });
    QVERIFY(QTest::qWaitFor([&] { return done == 3; }, 10000));
    QCOMPARE(sum, 60);
    QCOMPARE(g_copies.load(), 0);
  }

  void moveOnlyResult() {
    QObject context;
    BackgroundJob<std::unique_ptr<int>> job(&context);
    bool done = false;
    int value = 0;
    job.start([](JobProgress&) { return std::make_unique<int>(7); },
              [&](JobOutcome, std::optional<std::unique_ptr<int>> result, const QString&) {
                value = result && *result ? **result : -1;
                done = true;
              });
    QVERIFY(waitFor(done));
    QCOMPARE(value, 7);
  }

  void failureAndCancel() {
    QObject context;
    BackgroundJob<Counted> job(&context);
    bool done = false;
    JobOutcome outcome = JobOutcome::Done;
    QString error;
    bool hadResult = true;
    job.start([](JobProgress&) -> Counted { throw std::runtime_error("no such file: a.pt"); },
              [&](JobOutcome o, std::optional<Counted> result, const QString& e) {
                outcome = o;
                error = e;
                hadResult = result.has_value();
                done = true;
              });
    QVERIFY(waitFor(done));
    QCOMPARE(outcome, JobOutcome::Failed);
    QCOMPARE(error, QStringLiteral("no such file: a.pt"));
    QVERIFY(!hadResult);

    done = false;
    std::atomic<bool> started{false};
    job.start(
        [&](JobProgress& p) {
          started = true;
          while (!p.cancelled()) QThread::msleep(1);
          return Counted(1);
        },
        [&](JobOutcome o, std::optional<Counted>, const QString&) {
          outcome = o;
          done = true;
        });
    QVERIFY(QTest::qWaitFor([&] { return started.load(); }, 10000));
    job.cancel();
    QVERIFY(waitFor(done));
    QCOMPARE(outcome, JobOutcome::Cancelled);
  }

  // A newer request supersedes the running one: only its finish is called.
  void newestRequestWins() {
    QObject context;
    BackgroundJob<Counted> job(&context);
    std::vector<int> finished;
    std::atomic<bool> release{false};
    job.start(
        [&](JobProgress&) {
          while (!release) QThread::msleep(1);
          return Counted(1);
        },
        [&](JobOutcome, std::optional<Counted> r, const QString&) {
          finished.push_back(r ? r->value : -1);
        });
    job.start([](JobProgress&) { return Counted(2); },
              [&](JobOutcome, std::optional<Counted> r, const QString&) {
                finished.push_back(r ? r->value : -1);
              });
    release = true;
    QVERIFY(QTest::qWaitFor([&] { return !finished.empty(); }, 10000));
    QTest::qWait(100);
    QCOMPARE(finished, std::vector<int>{2});
  }
};

QTEST_GUILESS_MAIN(TestBackgroundJob)
#include "tst_backgroundjob.moc"
