// Shortest round-trip text for doubles with a short decimal form, and
// integers two digits at a time.
#include "ckpt/index/number_text.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace ckpt {
namespace {

constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

int digitCount(uint64_t n) {
  int d = 1;
  for (uint64_t p = 10; d < 20 && n >= p; p *= 10) ++d;
  return d;
}

// The `count` digits of n (exactly that many) at out.
void putDigits(char* out, uint64_t n, int count) {
  char* w = out + count;
  while (count >= 2) {
    const unsigned pair = unsigned(n % 100) * 2;
    n /= 100;
    w -= 2;
    w[0] = kDigitPairs[pair];
    w[1] = kDigitPairs[pair + 1];
    count -= 2;
  }
  if (count) *--w = char('0' + n);
}

// Below this a scaled value's round-trip interval is narrower than a
// quarter: at most one integer lies in it, and rounding finds it.
constexpr double kExactBelow = 1125899906842624.0;  // 2^50

}  // namespace

char* writeShortest(char* out, double value) {
  const double a = std::fabs(value);
  if (!(a >= 1e-5 && a < 1e15)) return std::to_chars(out, out + kNumberTextMax, value).ptr;
  // The fewest decimals e for which the integer nearest value * 10^e, read
  // back as m / 10^e (one correctly rounded division of two exact doubles:
  // what from_chars gives), is the value: the shortest decimal that reads
  // back exactly, its significant digits m.
  uint64_t m = 0;
  int e = 0;
  for (;; ++e) {
    if (e > 22) return std::to_chars(out, out + kNumberTextMax, value).ptr;
    const double scaled = a * kPow10[e];
    if (scaled >= kExactBelow) return std::to_chars(out, out + kNumberTextMax, value).ptr;
    // The nearest integer (scaled + 0.5 is exact below 2^52). A value whose
    // decimal reads back is within scaled * 2^-52 of it: farther means no
    // (without the division).
    const double r = double(int64_t(scaled + 0.5));
    if (std::fabs(scaled - r) > scaled * 0x1p-50) continue;
    if (r / kPow10[e] == a) {
      m = uint64_t(r);
      break;
    }
  }
  // digits * 10^exponent, digits without trailing zeros.
  int exponent = -e;
  while (m % 10 == 0) {
    m /= 10;
    ++exponent;
  }
  const int n = digitCount(m);
  // std::to_chars picks the shorter of fixed and scientific (fixed on a tie).
  const int fixedLength = exponent >= 0 ? n + exponent : -exponent < n ? n + 1 : 1 - exponent + 1;
  const int sciExponent = exponent + n - 1;
  const int sciLength = n + (n > 1 ? 1 : 0) + 2 + (std::abs(sciExponent) >= 100 ? 3 : 2);
  char* w = out;
  if (value < 0) *w++ = '-';
  if (fixedLength <= sciLength) {
    if (exponent >= 0) {
      putDigits(w, m, n);
      w += n;
      std::memset(w, '0', size_t(exponent));
      return w + exponent;
    }
    if (-exponent < n) {  // 12.34
      const int whole = n + exponent;
      const uint64_t scale = uint64_t(kPow10[-exponent]);
      putDigits(w, m / scale, whole);
      w[whole] = '.';
      putDigits(w + whole + 1, m % scale, -exponent);
      return w + n + 1;
    }
    // 0.0012
    const int zeros = -exponent - n;
    *w++ = '0';
    *w++ = '.';
    std::memset(w, '0', size_t(zeros));
    w += zeros;
    putDigits(w, m, n);
    return w + n;
  }
  // 1.234e-05, 5e+14
  if (n > 1) {
    const uint64_t scale = uint64_t(kPow10[n - 1]);
    *w++ = char('0' + m / scale);
    *w++ = '.';
    putDigits(w, m % scale, n - 1);
    w += n - 1;
  } else {
    *w++ = char('0' + m);
  }
  *w++ = 'e';
  *w++ = sciExponent < 0 ? '-' : '+';
  const int x = std::abs(sciExponent);
  putDigits(w, uint64_t(x), x >= 100 ? 3 : 2);
  return w + (x >= 100 ? 3 : 2);
}

char* writeInteger(char* out, int64_t value) {
  // libstdc++'s own (two digits a step, its length found four digits at a
  // time) measured fewer instructions than a loop of ours.
  return std::to_chars(out, out + kNumberTextMax, value).ptr;
}

}  // namespace ckpt
