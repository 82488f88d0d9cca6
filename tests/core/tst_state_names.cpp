// State-dict key normalisation: the wrappers DDP / DataParallel ("module.")
// and torch.compile ("_orig_mod.") leave in keys, in the nestings seen in
// practice; and what must be left alone.
#include <QtTest>

#include "ckpt/format/state_names.h"

using namespace ckpt;

using Keys = std::vector<std::string>;
Q_DECLARE_METATYPE(Keys)

class TestStateNames : public QObject {
  Q_OBJECT

 private slots:
  void normalise_data() {
    QTest::addColumn<Keys>("keys");
    QTest::addColumn<Keys>("names");
    QTest::addColumn<bool>("ddp");
    QTest::addColumn<bool>("compiled");
    const Keys plain = {"token_embed.weight", "blocks.0.attn.q_proj.weight", "lm_head.weight"};
    auto prefixed = [&plain](const std::string& p) {
      Keys k;
      for (const std::string& n : plain) k.push_back(p + n);
      return k;
    };
    QTest::newRow("plain") << plain << plain << false << false;
    QTest::newRow("ddp") << prefixed("module.") << plain << true << false;
    QTest::newRow("compiled") << prefixed("_orig_mod.") << plain << false << true;
    QTest::newRow("ddp around compiled") << prefixed("module._orig_mod.") << plain << true << true;
    QTest::newRow("compiled ddp") << prefixed("_orig_mod.module.") << plain << true << true;
    QTest::newRow("DataParallel inside DDP")
        << prefixed("module.module.") << plain << true << false;
    // Only some keys carry module.: a submodule called "module", kept.
    QTest::newRow("a submodule named module")
        << Keys{"module.weight", "head.weight"} << Keys{"module.weight", "head.weight"} << false
        << false;
    // _orig_mod. on part of the keys (a hand-merged dict) still goes.
    QTest::newRow("partly compiled")
        << Keys{"_orig_mod.a.weight", "b.weight"} << Keys{"a.weight", "b.weight"} << false << true;
    QTest::newRow("ddp, then partly compiled")
        << Keys{"module._orig_mod.a", "module.b"} << Keys{"a", "b"} << true << true;
    // A key that is nothing but a prefix is kept whole.
    QTest::newRow("bare prefix") << Keys{"module.", "module.x"} << Keys{"module.", "module.x"}
                                 << false << false;
    QTest::newRow("empty") << Keys{} << Keys{} << false << false;
    // Deeper than anyone nests: 8 levels go, the rest stays.
    std::string deep;
    for (int i = 0; i < 10; ++i) deep += "module.";
    QTest::newRow("ten levels") << Keys{deep + "w"} << Keys{"module.module.w"} << true << false;
  }
  void normalise() {
    QFETCH(Keys, keys);
    QFETCH(Keys, names);
    QFETCH(bool, ddp);
    QFETCH(bool, compiled);
    const StateNames got = normaliseStateNames(keys);
    QCOMPARE(got.names, names);
    QCOMPARE(got.ddp, ddp);
    QCOMPARE(got.compiled, compiled);
  }

  void describe() {
    QCOMPARE(describeWrapping(false, false), std::string());
    QVERIFY(describeWrapping(true, false).find("DDP-wrapped") != std::string::npos);
    QVERIFY(describeWrapping(false, true).find("compiled") != std::string::npos);
    QCOMPARE(
        describeWrapping(true, true),
        std::string("saved from a DDP-wrapped / compiled model (module. and _orig_mod. stripped)"));
  }
};

QTEST_GUILESS_MAIN(TestStateNames)
#include "tst_state_names.moc"
