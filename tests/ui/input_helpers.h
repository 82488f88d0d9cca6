#pragma once
// Note for the merge: main's tests/ui/gestures.h (ecdd439) now shares
// tst_gestures' clickMenu and answerFileDialog; once merged, this file's
// copies of them should go and tst_exportdialog include gestures.h instead.
// Input a person gives, for GUI tests: a menu entry clicked, a modal
// dialog acted on, a path typed into a file dialog and its accept button
// clicked.
#include <QAbstractButton>
#include <QAbstractItemView>
#include <QApplication>
#include <QCompleter>
#include <QDebug>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QLineEdit>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QTest>
#include <QTimer>
#include <functional>
#include <memory>

namespace ckpt::test {

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

// Answers the next file dialog by typing `path` into its file name box and
// clicking Open (Escape when `path` is empty), as a person would; it tries
// again every 100 ms until the dialog has closed.
inline void answerFileDialog(const QString& path) {
  auto* timer = new QTimer(qApp);
  timer->setInterval(100);
  auto typed = std::make_shared<bool>(false);
  QObject::connect(timer, &QTimer::timeout, timer, [timer, path, typed] {
    QFileDialog* dialog = nullptr;
    for (QWidget* top : QApplication::topLevelWidgets())
      if (auto* d = qobject_cast<QFileDialog*>(top); d && d->isVisible()) dialog = d;
    if (!dialog) {
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

// Opens the menu `menuTitle` of the window's menu bar with a click and
// clicks its entry `entry` (as shown, without '&').
inline void clickMenu(QMainWindow& w, const QString& menuTitle, const QString& entry) {
  QMenuBar* bar = w.menuBar();
  QMenu* menu = nullptr;
  for (QAction* a : bar->actions())
    if (a->text().remove('&') == menuTitle) {
      QTest::mouseClick(bar, Qt::LeftButton, {}, bar->actionGeometry(a).center());
      menu = a->menu();
    }
  QVERIFY2(menu, qPrintable("no menu " + menuTitle));
  QTRY_VERIFY(menu->isVisible());
  for (QAction* a : menu->actions())
    if (a->text().remove('&') == entry) {
      QVERIFY2(a->isEnabled(), qPrintable(entry + " is disabled"));
      QTest::mouseClick(menu, Qt::LeftButton, {}, menu->actionGeometry(a).center());
      return;
    }
  QFAIL(qPrintable("no entry " + entry + " in " + menuTitle));
}

}  // namespace ckpt::test
