// ckptscope-askpass's dialog (ui/remote/askpassdialog.h), driven with input
// events as a person would: ssh's prompt shown, a passphrase typed into a
// field that does not show it, OK writes it and a newline where ssh reads
// (a file here, stdout in the program) and exits 0; Cancel, Escape or
// closing exit 1 and write nothing. A host-key question gets Yes / No.
#include <QApplication>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryFile>
#include <QTimer>
#include <QtTest>
#include <cstdio>
#include <functional>

#include "remote/askpassdialog.h"

using ckpt::AskpassDialog;

namespace {

const QString kPassphrasePrompt =
    QStringLiteral("Enter passphrase for key '/home/me/.ssh/id_ed25519': ");
const QString kHostKeyPrompt = QStringLiteral(
    "The authenticity of host '[127.0.0.1]:2222 ([127.0.0.1]:2222)' can't be established.\n"
    "ED25519 key fingerprint is SHA256:4xA0cXb9v7ZlqkYH1Dq4nQJ5mW3bYF2PZy5Jq8mW0pE.\n"
    "This key is not known by any other names.\n"
    "Are you sure you want to continue connecting (yes/no/[fingerprint])? ");

// Runs runAskpass as ckptscope-askpass does, `act` done to its dialog once
// it is up; returns the exit status and what was written.
struct Run {
  int status = -1;
  QByteArray written;
  bool sawDialog = false;
};

Run runWith(const QString& prompt, const QString& hint,
            const std::function<void(AskpassDialog*)>& act, const QString& host = {}) {
  Run run;
  std::FILE* out = std::tmpfile();
  QTimer::singleShot(0, [&] {
    auto* dialog = qobject_cast<AskpassDialog*>(QApplication::activeModalWidget());
    if (!dialog) return;  // fails below: never shown
    run.sawDialog = true;
    QVERIFY(QTest::qWaitForWindowExposed(dialog));
    act(dialog);
  });
  // Closes a dialog that `act` left open, so a failing step cannot hang.
  QTimer guard;
  guard.setSingleShot(true);
  QObject::connect(&guard, &QTimer::timeout, [] {
    if (QWidget* w = QApplication::activeModalWidget()) w->close();
  });
  guard.start(10000);
  run.status = ckpt::runAskpass(prompt, hint, host, out);
  std::rewind(out);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;)
    run.written.append(buf, qsizetype(n));
  std::fclose(out);
  return run;
}

QString promptShown(AskpassDialog* d) {
  return d->findChild<QLabel*>(QStringLiteral("askpassPrompt"))->text();
}

}  // namespace

class TestAskpassDialog : public QObject {
  Q_OBJECT

 private slots:
  void passphraseTypedAndOk();
  void passphraseCancelled_data();
  void passphraseCancelled();
  void hostKeyYesOrNo_data();
  void hostKeyYesOrNo();
  void kinds();
};

void TestAskpassDialog::passphraseTypedAndOk() {
  const QString typed = QStringLiteral("c0rrect h\u00f6rse; 'x'");
  QString shown, heading;
  QLineEdit::EchoMode echo = QLineEdit::Normal;
  const Run run = runWith(
      kPassphrasePrompt, {},
      [&](AskpassDialog* d) {
        shown = promptShown(d);
        heading = d->findChild<QLabel*>(QStringLiteral("askpassHeading"))->text();
        QLineEdit* field = d->secretField();
        QVERIFY(field);
        echo = field->echoMode();
        QCOMPARE(QApplication::focusWidget(), field);  // typing goes straight in
        // keyClicks types ASCII only: the umlaut as the key event a keyboard layout sends.
        QTest::keyClicks(field, "c0rrect h");
        QTest::sendKeyEvent(QTest::Click, field, Qt::Key_unknown, QStringLiteral("\u00f6"),
                            Qt::NoModifier);
        QTest::keyClicks(field, "rse; 'x'");
        QTest::mouseClick(d->acceptButton(), Qt::LeftButton);
      },
      QStringLiteral("me@cluster:2222"));
  QVERIFY(run.sawDialog);
  QCOMPARE(shown, kPassphrasePrompt.trimmed());
  // The prompt names a key, not the host: the heading does.
  QCOMPARE(heading, QStringLiteral("CkptScope is connecting to me@cluster:2222; ssh asks:"));
  QCOMPARE(echo, QLineEdit::Password);
  QCOMPARE(run.status, 0);
  QCOMPARE(run.written, typed.toUtf8() + '\n');
}

void TestAskpassDialog::passphraseCancelled_data() {
  QTest::addColumn<QString>("how");
  QTest::newRow("Cancel clicked") << "cancel";
  QTest::newRow("Escape") << "escape";
  QTest::newRow("window closed") << "close";
}

void TestAskpassDialog::passphraseCancelled() {
  QFETCH(QString, how);
  const Run run = runWith(kPassphrasePrompt, {}, [&](AskpassDialog* d) {
    QTest::keyClicks(d->secretField(), "typed, then thought better of it");
    if (how == "cancel")
      QTest::mouseClick(d->rejectButton(), Qt::LeftButton);
    else if (how == "escape")
      QTest::keyClick(d->secretField(), Qt::Key_Escape);
    else
      d->close();
  });
  QVERIFY(run.sawDialog);
  QCOMPARE(run.status, 1);
  QVERIFY(run.written.isEmpty());
}

void TestAskpassDialog::hostKeyYesOrNo_data() {
  QTest::addColumn<QString>("click");
  QTest::addColumn<int>("status");
  QTest::addColumn<QByteArray>("written");
  QTest::newRow("Yes") << "yes" << 0 << QByteArray("yes\n");
  QTest::newRow("No") << "no" << 0 << QByteArray("no\n");
  QTest::newRow("Enter: No, the default") << "enter" << 0 << QByteArray("no\n");
  QTest::newRow("Escape") << "escape" << 1 << QByteArray();
}

void TestAskpassDialog::hostKeyYesOrNo() {
  QFETCH(QString, click);
  QFETCH(int, status);
  QFETCH(QByteArray, written);
  QString shown, yesText, noText;
  const Run run = runWith(kHostKeyPrompt, {}, [&](AskpassDialog* d) {
    shown = promptShown(d);
    QVERIFY(!d->secretField());
    yesText = d->acceptButton()->text().remove('&');
    noText = d->rejectButton()->text().remove('&');
    if (click == "yes")
      QTest::mouseClick(d->acceptButton(), Qt::LeftButton);
    else if (click == "no")
      QTest::mouseClick(d->rejectButton(), Qt::LeftButton);
    else
      QTest::keyClick(d, click == "enter" ? Qt::Key_Return : Qt::Key_Escape);
  });
  QVERIFY(run.sawDialog);
  QCOMPARE(shown, kHostKeyPrompt.trimmed());  // the fingerprint, to compare
  QCOMPARE(yesText, QStringLiteral("Yes"));
  QCOMPARE(noText, QStringLiteral("No"));
  QCOMPARE(run.status, status);
  QCOMPARE(run.written, written);
}

void TestAskpassDialog::kinds() {
  using K = AskpassDialog::Kind;
  QCOMPARE(AskpassDialog::kindOf(kPassphrasePrompt, {}), K::Secret);
  QCOMPARE(AskpassDialog::kindOf("me@cluster's password: ", {}), K::Secret);
  QCOMPARE(AskpassDialog::kindOf(kHostKeyPrompt, {}), K::Question);
  QCOMPARE(AskpassDialog::kindOf("Please type 'yes', 'no' or the fingerprint: ", {}), K::Question);
  QCOMPARE(AskpassDialog::kindOf("Allow use of key x?", "confirm"), K::Question);
  QCOMPARE(AskpassDialog::kindOf("Confirm user presence for key ED25519-SK", "none"), K::Notice);
}

QTEST_MAIN(TestAskpassDialog)
#include "tst_askpassdialog.moc"
