#pragma once
// What the GUI tests do with a person's hands: click a browser row where it
// is drawn, a tab, a menu entry; answer a file dialog by typing into it; and
// what they check on disk (checksums of every file). Shared by the gesture
// tests so that each clicks the same way.
#include <QAbstractItemView>
#include <QAbstractScrollArea>
#include <QApplication>
#include <QCompleter>
#include <QCryptographicHash>
#include <QDialogButtonBox>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabBar>
#include <QTabWidget>
#include <QTest>
#include <QTimer>
#include <QTreeView>
#include <functional>
#include <map>
#include <memory>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "mainwindow.h"

namespace {

using ckpt::CheckpointListModel;
using ckpt::MainWindow;

constexpr int kTimeoutMs = 60'000;

inline QString sha256(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromLatin1(
      QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex());
}

// Every file under `root` (hidden ones too) with its checksum.
inline std::map<QString, QString> checksums(const QString& root) {
  std::map<QString, QString> out;
  QDirIterator it(root, QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot,
                  QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString p = it.next();
    out[QDir(root).relativeFilePath(p)] = sha256(p);
  }
  return out;
}

inline bool copyTo(const QString& from, const QString& to) {
  QDir().mkpath(QFileInfo(to).absolutePath());
  return QFile::copy(from, to);
}

// Clicks a browser row where the person sees it.
inline void clickRow(MainWindow& w, const QString& path, Qt::KeyboardModifiers modifiers = {}) {
  QTreeView* view = w.checkpointView();
  const QModelIndex index =
      w.browserPanel()->proxy()->mapFromSource(w.checkpointModel()->indexOfPath(path));
  QVERIFY2(index.isValid(), qPrintable(path + " is not listed"));
  view->scrollTo(index);
  const QRect rect = view->visualRect(index);
  QVERIFY(!rect.isEmpty());
  QTest::mouseClick(view->viewport(), Qt::LeftButton, modifiers, rect.center());
}

// Clicks the tab labelled `text` of `tabs`.
inline void clickTab(QTabWidget* tabs, const QString& text) {
  QTabBar* bar = tabs->tabBar();
  for (int i = 0; i < bar->count(); ++i)
    if (bar->tabText(i).remove('&') == text) {
      QTest::mouseClick(bar, Qt::LeftButton, {}, bar->tabRect(i).center());
      return;
    }
  QFAIL(qPrintable("no tab " + text));
}

// Opens the menu `menuTitle` of the window's menu bar with a click; null
// when there is no such menu or it did not open.
inline QMenu* openMenu(MainWindow& w, const QString& menuTitle) {
  QMenuBar* bar = w.menuBar();
  QMenu* menu = nullptr;
  for (QAction* a : bar->actions())
    if (a->text().remove('&') == menuTitle) {
      QTest::mouseClick(bar, Qt::LeftButton, {}, bar->actionGeometry(a).center());
      menu = a->menu();
    }
  if (!menu || !QTest::qWaitFor([menu] { return menu->isVisible(); })) return nullptr;
  return menu;
}

// A window of `size` on `paths`, shown, active, its first summary loaded.
inline bool openWindow(MainWindow& w, const QStringList& paths, QSize size = {1280, 800}) {
  w.resize(size);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return false;
  w.activateWindow();
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths(paths);
  return loaded.wait(kTimeoutMs);
}

// Opens the menu `menuTitle` of the window's menu bar with a click and
// clicks its entry `entry` (as shown, without '&').
inline void clickMenu(MainWindow& w, const QString& menuTitle, const QString& entry) {
  QMenu* menu = openMenu(w, menuTitle);
  QVERIFY2(menu, qPrintable("no menu " + menuTitle));
  for (QAction* a : menu->actions())
    if (a->text().remove('&') == entry) {
      QVERIFY2(a->isEnabled(), qPrintable(entry + " is disabled"));
      QTest::mouseClick(menu, Qt::LeftButton, {}, menu->actionGeometry(a).center());
      return;
    }
  QFAIL(qPrintable("no entry " + entry + " in " + menuTitle));
}

// Calls `act` once on the next dialog of type T shown as the modal widget
// (polled every 50 ms: exec() blocks the caller).
template <typename T>
void onModalDialog(std::function<void(T*)> act) {
  auto* timer = new QTimer(qApp);
  timer->setInterval(50);
  QObject::connect(timer, &QTimer::timeout, timer, [timer, act] {
    auto* dialog = qobject_cast<T*>(QApplication::activeModalWidget());
    if (!dialog || !dialog->isVisible()) return;
    timer->stop();
    timer->deleteLater();
    act(dialog);
  });
  timer->start();
}

// Opens the menu `menuTitle`, opens its submenu `submenu` with a click and
// clicks the submenu's entry `entry`. Returns the submenu's entries as shown.
inline QStringList clickSubmenu(MainWindow& w, const QString& menuTitle, const QString& submenu,
                                const QString& entry) {
  QStringList shown;
  QMenu* menu = openMenu(w, menuTitle);
  if (!menu) return shown;
  QMenu* sub = nullptr;
  for (QAction* a : menu->actions())
    if (a->text().remove('&') == submenu && a->menu()) {
      sub = a->menu();
      QTest::mouseMove(menu, menu->actionGeometry(a).center());
      QTest::mouseClick(menu, Qt::LeftButton, {}, menu->actionGeometry(a).center());
    }
  if (!sub || !QTest::qWaitFor([sub] { return sub->isVisible(); })) return shown;
  for (QAction* a : sub->actions()) shown << a->text().remove('&');
  for (QAction* a : sub->actions())
    if (a->text().remove('&') == entry && a->isEnabled()) {
      QTest::mouseMove(sub, sub->actionGeometry(a).center());
      QTest::mouseClick(sub, Qt::LeftButton, {}, sub->actionGeometry(a).center());
      return shown;
    }
  // Nothing to click: the menus are closed as a person would, with Escape.
  QTest::keyClick(sub, Qt::Key_Escape);
  QTest::keyClick(menu, Qt::Key_Escape);
  return shown;
}

// Answers the next file dialog by typing `path` into its file name box and
// clicking Open (Escape when `path` is empty), as a person would; it tries
// again every 100 ms until the dialog has closed.
inline void answerFileDialog(const QString& path) {
  auto* timer = new QTimer(qApp);
  timer->setInterval(100);
  auto typed = std::make_shared<bool>(false);
  // The dialog this answer is for: the first one seen. Once it has closed
  // the timer ends, so a dialog opened right after waits for its own answer.
  auto mine = std::make_shared<QPointer<QFileDialog>>();
  auto bound = std::make_shared<bool>(false);
  QObject::connect(timer, &QTimer::timeout, timer, [timer, path, typed, mine, bound] {
    if (!*bound)
      for (QWidget* top : QApplication::topLevelWidgets())
        if (auto* d = qobject_cast<QFileDialog*>(top);
            d && d->isVisible() && !d->property("ckptAnswered").toBool()) {
          *mine = d;
          *bound = true;
          d->setProperty("ckptAnswered", true);
        }
    QFileDialog* dialog = mine->data();
    if (!dialog || !dialog->isVisible()) {
      if (*typed) {  // answered and closed
        timer->stop();
        timer->deleteLater();
      }
      return;
    }
    auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
    if (path.isEmpty() || !name) {
      *typed = true;
      QTest::keyClick(dialog, Qt::Key_Escape);
      return;
    }
    if (!*typed) {
      // The whole path at once: typed a key at a time, the completer's
      // inline completion could change it under load.
      name->setFocus();
      name->setText(path);
      *typed = true;
      return;  // the dialog checks what was typed before Open takes it
    }
    // The completer's popup would take a Return: click Open instead.
    if (name->completer() && name->completer()->popup()) name->completer()->popup()->hide();
    QPushButton* openButton = nullptr;
    if (auto* box = dialog->findChild<QDialogButtonBox*>())
      for (QAbstractButton* b : box->buttons())
        if (box->buttonRole(b) == QDialogButtonBox::AcceptRole)
          openButton = qobject_cast<QPushButton*>(b);
    if (qEnvironmentVariableIsSet("CKPT_DEBUG_DIALOG"))
      qInfo() << "dialog" << name->text()
              << (openButton ? openButton->text() : QString("no button"))
              << (openButton && openButton->isEnabled());
    if (openButton && openButton->isEnabled())
      QTest::mouseClick(openButton, Qt::LeftButton);
    else
      QTest::keyClick(name, Qt::Key_Return);
  });
  timer->start();
}

// The widgets of `page` a person sees, except what scrolls inside an item
// view or a scroll area (their contents are meant to extend past the viewport).
inline QList<QWidget*> visibleChildren(QWidget* page) {
  QList<QWidget*> out;
  std::function<void(QWidget*)> walk = [&](QWidget* w) {
    for (QObject* o : w->children()) {
      auto* c = qobject_cast<QWidget*>(o);
      if (!c || !c->isVisible() || c->isWindow()) continue;
      out << c;
      if (auto* area = qobject_cast<QAbstractScrollArea*>(c)) {
        (void)area;  // its viewport's contents scroll: not clipped
        continue;
      }
      walk(c);
    }
  };
  walk(page);
  return out;
}

}  // namespace
