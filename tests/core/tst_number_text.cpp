// writeShortest / writeInteger write exactly what std::to_chars writes:
// random bit patterns, short decimals as logs print them and their
// neighbours, powers of ten, the metrics benchmark's values, integers.
#include <QtTest>

#include <charconv>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>

#include "ckpt/index/number_text.h"

using namespace ckpt;

namespace {

// "" when writeShortest(d) is std::to_chars(d), else both texts.
std::string differs(double d) {
  char a[64], b[64];
  const std::string want(a, std::to_chars(a, a + sizeof a, d).ptr);
  const std::string got(b, writeShortest(b, d));
  return want == got ? std::string() : "to_chars '" + want + "', writeShortest '" + got + "'";
}

std::string differs(int64_t n) {
  char a[64], b[64];
  const std::string want(a, std::to_chars(a, a + sizeof a, n).ptr);
  const std::string got(b, writeInteger(b, n));
  return want == got ? std::string() : "to_chars '" + want + "', writeInteger '" + got + "'";
}

}  // namespace

class TestNumberText : public QObject {
  Q_OBJECT

 private slots:
  void doublesAsToChars() {
    std::mt19937_64 rng(2026);
    auto check = [](double d) {
      const std::string why = differs(d);
      if (!why.empty()) QFAIL(why.c_str());
    };
    for (int i = 0; i < 300000; ++i) {
      const uint64_t bits = rng();
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      check(d);
    }
    // Decimals of 1 to 17 digits with -3 to 21 decimals, as printf writes
    // them into logs, and the doubles next to them.
    for (int i = 0; i < 400000; ++i) {
      const int digits = 1 + int(rng() % 17), decimals = int(rng() % 25) - 3;
      const uint64_t m = rng() % uint64_t(std::pow(10.0, digits));
      char text[64];
      std::snprintf(text, sizeof text, "%llue%d", static_cast<unsigned long long>(m), -decimals);
      double d = 0;
      std::from_chars(text, text + std::strlen(text), d);
      check(d);
      check(-d);
      check(std::nextafter(d, 1e300));
      check(std::nextafter(d, 0.0));
    }
    for (int p = -30; p <= 30; ++p) {
      const double d = std::pow(10.0, p);
      check(d);
      check(std::nextafter(d, 0.0));
      check(std::nextafter(d, 1e300));
      check(d * 5);
      check(d * 1.5);
    }
    // The metrics benchmark's loss values (printed with %.6f), steps and tokens.
    for (int step = 1; step <= 200000; step += 7) {
      const double loss = 2.0 + 3.0 * std::exp(-step / 200000.0) + 0.05 * std::sin(step * 0.37);
      char text[32];
      std::snprintf(text, sizeof text, "%.6f", loss);
      check(std::strtod(text, nullptr));
      check(loss);
      check(double(step) * 4096);
    }
    for (double d : std::initializer_list<double>{
             0.0, -0.0, 1.0, -1.0, 3e-4, 1e-5, 9.999999999999999e-6, 1e15, 999999999999999.9,
             5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 123456789012345.0, 0.1, 0.2,
             0.3, std::nan(""), std::numeric_limits<double>::infinity(),
             -std::numeric_limits<double>::infinity()})
      check(d);
  }

  void integersAsToChars() {
    std::mt19937_64 rng(7);
    for (int64_t n : {int64_t(0), int64_t(-1), int64_t(9), int64_t(10), int64_t(99), int64_t(100),
                      std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
      const std::string why = differs(n);
      QVERIFY2(why.empty(), why.c_str());
    }
    int64_t p = 1;
    for (int i = 0; i < 18; ++i, p *= 10)
      for (int64_t n : {p - 1, p, p + 1, -p}) {
        const std::string why = differs(n);
        QVERIFY2(why.empty(), why.c_str());
      }
    for (int i = 0; i < 300000; ++i) {
      const int64_t n = int64_t(rng() >> (rng() % 64)) * (i % 2 ? 1 : -1);
      const std::string why = differs(n);
      if (!why.empty()) QFAIL(why.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestNumberText)
#include "tst_number_text.moc"
