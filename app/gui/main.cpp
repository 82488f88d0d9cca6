// ckptscope [--screenshot OUT.png] [--view browse|inspect|curves|compare] [DIR|FILE...]: the
// desktop app.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>
#include <QUrl>
#include <cstdio>
#include <cstring>
#include <optional>

#include "ckpt/index/huge_page_malloc.h"
#include "ckpt/version.h"
#include "compare/compareview.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "screenshot.h"
#include "training/trainbackendloader.h"

namespace {

// How long --screenshot waits for the scan and the first summary (or the curves).
constexpr int kScreenshotTimeoutMs = 5 * 60 * 1000;

void complain(const QString& message) {
  std::fprintf(stderr, "ckptscope: %s\n", qPrintable(message));
}

// --screenshot needs no display: without one (and without a platform chosen
// by the user) render with the offscreen platform instead of failing to start.
void preferOffscreenForScreenshots(int argc, char** argv) {
  bool screenshot = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--screenshot") == 0 ||
        std::strncmp(argv[i], "--screenshot=", 13) == 0)
      screenshot = true;
  if (screenshot && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") &&
      qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
    qputenv("QT_QPA_PLATFORM", "offscreen");
}

bool asksForVersion(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-v") == 0) return true;
  return false;
}

// --version without a display: the version, the Qt it runs with, and the
// LibTorch of the training plugin (where it was found, not loaded: that
// takes 0.4 s and is what the Train panel does).
int printVersion(int argc, char** argv) {
  QCoreApplication app(argc, argv);  // applicationDirPath(), where the plugin is looked for
  std::printf("ckptscope %s\n", CKPT_VERSION);
  std::printf("Qt %s (built against %s)\n", qVersion(), QT_VERSION_STR);
  if (!ckpt::trainBackendBuilt()) {
    std::puts("LibTorch: none (built without LibTorch: no Train panel)");
    return 0;
  }
  const QStringList candidates = ckpt::trainBackendCandidates();
  for (const QString& file : candidates)
    if (QFileInfo::exists(file)) {
      std::printf("LibTorch %s (training plugin %s)\n", CKPT_TORCH_VERSION,
                  qPrintable(QFileInfo(file).canonicalFilePath()));
      return 0;
    }
  std::printf("LibTorch %s at build time, but the training plugin is missing (looked in %s)\n",
              CKPT_TORCH_VERSION, qPrintable(candidates.join(QStringLiteral(", "))));
  return 0;
}

// A file manager's desktop entry may hand over file:// URLs: local paths.
QStringList localPaths(const QStringList& args) {
  QStringList paths;
  for (const QString& a : args) {
    const QUrl url(a);
    paths << (a.startsWith(QLatin1String("file:")) && url.isLocalFile() ? url.toLocalFile() : a);
  }
  return paths;
}

}  // namespace

int main(int argc, char** argv) {
  ckpt::restartWithHugePageMalloc(argv);
  if (asksForVersion(argc, argv)) return printVersion(argc, argv);
  preferOffscreenForScreenshots(argc, argv);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("CkptScope");  // QSettings: ~/.config/CkptScope/CkptScope.conf
  QApplication::setApplicationName("CkptScope");
  QApplication::setApplicationVersion(CKPT_VERSION);

  QCommandLineParser parser;
  parser.setApplicationDescription("Explore PyTorch checkpoints and training runs.");
  parser.addHelpOption();
  parser.addOption(QCommandLineOption({"v", "version"},
                                      "Print the version and the Qt and LibTorch versions found."));
  const QCommandLineOption screenshot("screenshot",
                                      "Open the paths, wait until the first checkpoint (or with "
                                      "--view curves, the curves) is shown, write the window "
                                      "to OUT.png and exit.",
                                      "OUT.png");
  parser.addOption(screenshot);
  const QCommandLineOption view(
      "view",
      "What to show first: browse (the first run's checkpoints), inspect (the first checkpoint, "
      "the default), "
      "curves (the runs' loss curves; --screenshot then waits until they are plotted) or compare "
      "(two files "
      "given, else a run's last two checkpoints; --screenshot waits for the comparison).",
      "browse|inspect|curves|compare", "inspect");
  parser.addOption(view);
  parser.addPositionalArgument("paths", "Directories to scan and checkpoint files to open.",
                               "[DIR|FILE...]");
  parser.process(app);

  const std::optional<ckpt::MainWindow::View> shown =
      ckpt::MainWindow::viewFromName(parser.value(view));
  if (!shown) {
    complain(QString("unknown view \"%1\" (expected browse, inspect, curves or compare)")
                 .arg(parser.value(view)));
    return 2;
  }
  ckpt::MainWindow window;
  window.setView(*shown);
  const QStringList paths = localPaths(parser.positionalArguments());

  if (parser.isSet(screenshot)) {
    const QString out = parser.value(screenshot);
    // Rendered off screen even where there is a display; QT_QPA_PLATFORM=offscreen works too.
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.resize(ckpt::kScreenshotSize);
    window.show();
    auto shoot = [&window, out] {
      QString error;
      if (!ckpt::saveScreenshot(&window, out, &error)) {
        complain(error);
        QCoreApplication::exit(1);
        return;
      }
      QCoreApplication::exit(0);
    };
    if (paths.isEmpty()) QTimer::singleShot(0, &app, shoot);  // nothing to load: the empty window
    // Queued: let the layout settle before grabbing. The curves are read
    // after the scan, apart from the summary: wait for what is on screen.
    if (*shown == ckpt::MainWindow::View::Curves)
      QObject::connect(window.curvesView(), &ckpt::CurvesView::curvesReady, &app, shoot,
                       Qt::QueuedConnection);
    else if (*shown == ckpt::MainWindow::View::Compare)
      QObject::connect(window.compareView(), &ckpt::CompareView::finished, &app, shoot,
                       Qt::QueuedConnection);
    else
      QObject::connect(&window, &ckpt::MainWindow::loaded, &app, shoot, Qt::QueuedConnection);
    QTimer::singleShot(kScreenshotTimeoutMs, &app, [] {
      complain("timed out waiting for the checkpoints to load");
      QCoreApplication::exit(1);
    });
  } else {
    window.restoreLayout();  // the size and docks of last time, or 1280x800 on this screen
    window.show();
  }
  if (!paths.isEmpty()) window.openPaths(paths);
  return app.exec();
}
