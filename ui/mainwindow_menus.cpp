// MainWindow's menus: the menu bar, the browser's context menu and the
// recent list (split from mainwindow.cpp).
#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QKeySequence>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QTabWidget>
#include <QTreeView>

#include "browser/browserpanel.h"
#include "compare/compareview.h"
#include "compare/driftview.h"
#include "curves/curvesview.h"
#include "generate/generatepanel.h"
#include "inspector/inspectorwidget.h"
#include "mainwindow.h"
#include "remote/remotefolder.h"
#include "training/trainpanel.h"

namespace ckpt {
namespace {

constexpr int kMaxRecent = 10;
const char* const kRecentKey = "recent";

}  // namespace

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* openDir = file->addAction(tr("Open &Directory..."));
  openDir->setShortcut(QKeySequence::Open);
  connect(openDir, &QAction::triggered, this, &MainWindow::chooseDirectory);
  QAction* openFiles = file->addAction(tr("Open &Files..."));
  openFiles->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  connect(openFiles, &QAction::triggered, this, &MainWindow::chooseFiles);
  QAction* openRemote = file->addAction(tr("Open Re&mote..."));
  openRemote->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_O));
  openRemote->setToolTip(tr("Runs on another machine, read there through ssh"));
  connect(openRemote, &QAction::triggered, this, &MainWindow::chooseRemote);
  m_recentMenu = file->addMenu(tr("Open &Recent"));
  connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
  fillRecentMenu();
  QAction* addLogs = file->addAction(tr("Add &Logs..."));
  addLogs->setToolTip(
      tr("Console logs kept elsewhere (a cluster job's .out / .err): their lines go to the runs "
         "their loggers name"));
  connect(addLogs, &QAction::triggered, this, &MainWindow::chooseLogs);
  QAction* reloadAction = file->addAction(tr("&Reload"));
  reloadAction->setShortcut(QKeySequence::Refresh);
  connect(reloadAction, &QAction::triggered, this, &MainWindow::reload);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  // Ctrl+Q where the platform names no quit key (QKeySequence::Quit is
  // empty in some keyboard schemes).
  const QList<QKeySequence> quitKeys = QKeySequence::keyBindings(QKeySequence::Quit);
  quit->setShortcuts(quitKeys.isEmpty() ? QList<QKeySequence>{QKeySequence(Qt::CTRL | Qt::Key_Q)}
                                        : quitKeys);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* find = view->addAction(tr("&Filter Checkpoints"));
  find->setShortcut(QKeySequence::Find);
  connect(find, &QAction::triggered, this, [this] {
    m_browserDock->show();
    m_browser->filterEdit()->setFocus();
    m_browser->filterEdit()->selectAll();
  });
  QAction* inspect = view->addAction(tr("&Inspect"));
  inspect->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
  connect(inspect, &QAction::triggered, this, [this] { m_tabs->setCurrentWidget(m_inspector); });
  QAction* curves = view->addAction(tr("&Curves"));
  curves->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));
  connect(curves, &QAction::triggered, this, [this] { m_tabs->setCurrentWidget(m_curves); });
  QAction* compareTab = view->addAction(tr("C&ompare"));
  compareTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_3));
  connect(compareTab, &QAction::triggered, this, [this] { m_tabs->setCurrentWidget(m_compare); });
  QAction* driftTab = view->addAction(tr("D&rift"));
  driftTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_4));
  connect(driftTab, &QAction::triggered, this, [this] { m_tabs->setCurrentWidget(m_drift); });
  QAction* trainTab = view->addAction(tr("&Train"));
  trainTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_5));
  connect(trainTab, &QAction::triggered, this, &MainWindow::showTrain);
  QAction* generateTab = view->addAction(tr("&Generate"));
  generateTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_6));
  connect(generateTab, &QAction::triggered, this, [this] { m_tabs->setCurrentWidget(m_generate); });
  view->addSeparator();
  view->addAction(m_browserDock->toggleViewAction());

  QMenu* checkpoint = menuBar()->addMenu(tr("&Checkpoint"));
  QAction* compare = checkpoint->addAction(tr("&Compare Selected"));
  compare->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
  compare->setToolTip(
      tr("Two selected checkpoints with each other, or one with the one before it in its run"));
  connect(compare, &QAction::triggered, this, &MainWindow::compareSelected);
  QAction* compareWith = checkpoint->addAction(tr("Compare &With..."));
  connect(compareWith, &QAction::triggered, this, &MainWindow::compareWithFile);
  QAction* drift = checkpoint->addAction(tr("&Drift Through Run or Stages"));
  drift->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
  connect(drift, &QAction::triggered, this, &MainWindow::showDrift);
  checkpoint->addSeparator();
  QAction* resume = checkpoint->addAction(tr("&Resume Training..."));
  resume->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  connect(resume, &QAction::triggered, this, &MainWindow::resumeSelected);
  QAction* finetune = checkpoint->addAction(tr("&Fine-tune..."));
  finetune->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
  connect(finetune, &QAction::triggered, this, &MainWindow::finetuneSelected);
  checkpoint->addSeparator();
  QAction* prune = checkpoint->addAction(tr("&Prune Run..."));
  prune->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
  prune->setToolTip(tr("Move the checkpoints of the current run that no rule keeps to the trash"));
  connect(prune, &QAction::triggered, this, &MainWindow::pruneSelectedRun);
  QAction* exportCopy = checkpoint->addAction(tr("E&xport..."));
  exportCopy->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  exportCopy->setToolTip(tr("A slim copy of the current checkpoint without optimizer state"));
  connect(exportCopy, &QAction::triggered, this, &MainWindow::exportSelected);
  QAction* generateText = checkpoint->addAction(tr("&Generate Text..."));
  generateText->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_G));
  generateText->setToolTip(tr("Continue a prompt with the current checkpoint's model"));
  connect(generateText, &QAction::triggered, this, &MainWindow::generateSelected);
  QAction* newRun = checkpoint->addAction(tr("&New Training Run..."));
  newRun->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_N));
  connect(newRun, &QAction::triggered, this, [this] {
    m_train->setMode(TrainPanel::Mode::NewRun);
    showTrain();
  });
}

void MainWindow::showBrowserMenu(const QPoint& pos) {
  QMenu menu(this);
  const QStringList selected = selectedCheckpoints();
  QAction* compare = menu.addAction(selected.size() == 2 ? tr("Compare the Two Selected")
                                                         : tr("Compare with Previous"));
  compare->setEnabled(selected.size() == 1 || selected.size() == 2);
  connect(compare, &QAction::triggered, this, &MainWindow::compareSelected);
  QAction* compareWith = menu.addAction(tr("Compare With..."));
  compareWith->setEnabled(!selected.isEmpty());
  connect(compareWith, &QAction::triggered, this, &MainWindow::compareWithFile);
  menu.addSeparator();
  QAction* drift = menu.addAction(tr("Drift Through Run or Stages"));
  connect(drift, &QAction::triggered, this, &MainWindow::showDrift);
  menu.addSeparator();
  QAction* resume = menu.addAction(tr("Resume Training"));
  resume->setEnabled(selected.size() == 1);
  connect(resume, &QAction::triggered, this, &MainWindow::resumeSelected);
  QAction* finetune = menu.addAction(tr("Fine-tune"));
  finetune->setEnabled(selected.size() == 1);
  connect(finetune, &QAction::triggered, this, &MainWindow::finetuneSelected);
  menu.addSeparator();
  QAction* prune = menu.addAction(tr("Prune Run..."));
  connect(prune, &QAction::triggered, this, &MainWindow::pruneSelectedRun);
  menu.exec(checkpointView()->viewport()->mapToGlobal(pos));
}

void MainWindow::fillRecentMenu() {
  m_recentMenu->clear();
  const QList<QStringList> recent = recentPaths();
  for (const QStringList& paths : recent) {
    QStringList shown;
    for (const QString& p : paths) shown << QDir::toNativeSeparators(p);
    QAction* a = m_recentMenu->addAction(shown.join(QStringLiteral(", ")));
    // A remote location is not looked for here: opening it asks the host.
    bool any = false;
    for (const QString& p : paths) any = any || isRemoteLocation(p) || QFileInfo::exists(p);
    if (!any) {
      a->setEnabled(false);
      a->setText(tr("%1 (gone)").arg(a->text()));
    }
    connect(a, &QAction::triggered, this, [this, paths] { openPaths(paths); });
  }
  if (recent.isEmpty()) m_recentMenu->addAction(tr("(none)"))->setEnabled(false);
  m_recentMenu->addSeparator();
  QAction* clear = m_recentMenu->addAction(tr("Clear List"));
  clear->setEnabled(!recent.isEmpty());
  connect(clear, &QAction::triggered, this, [] { clearRecentPaths(); });
}

QList<QStringList> MainWindow::recentPaths() {
  QList<QStringList> out;
  const QVariantList stored = QSettings().value(kRecentKey).toList();
  for (const QVariant& v : stored) {
    const QStringList paths = v.toStringList();
    if (!paths.isEmpty()) out << paths;
  }
  return out;
}

void MainWindow::clearRecentPaths() {
  QSettings().remove(kRecentKey);
}

void MainWindow::rememberPaths(const QStringList& paths) {
  QStringList clean;
  for (const QString& p : paths)
    if (isRemoteLocation(p))
      clean << p;  // as the person wrote it (ssh://, host:/path)
    else if (QFileInfo::exists(p))
      clean << QDir::cleanPath(
          QFileInfo(p).absoluteFilePath());  // a typo is not worth a menu entry
  if (clean.isEmpty()) return;
  QList<QStringList> recent = recentPaths();
  recent.removeAll(clean);
  recent.prepend(clean);
  QVariantList stored;
  for (qsizetype i = 0; i < recent.size() && i < kMaxRecent; ++i) stored << recent[i];
  QSettings().setValue(kRecentKey, stored);
}

}  // namespace ckpt
