#include "ckpt/index/natural_order.h"

#include <algorithm>

namespace ckpt {
namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

int naturalCompare(std::string_view a, std::string_view b) {
  // At the end, names equal as numbers ("a01" and "a1") are told apart by
  // their bytes so that the order stays total (a std::map key, a stable list).
  int tieBreak = 0;
  // The bytes both begin with compare equal and tie nothing (a run of digits
  // there is the same run in both), except a run of digits the first
  // difference is in: start at that run, or at the first difference.
  // (Paths of one folder share most of their bytes: a sort of 50,000 spent
  // most of its time walking the shared part digit by digit.)
  size_t k = static_cast<size_t>(
      std::mismatch(a.begin(),
                    a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())),
                    b.begin())
          .first -
      a.begin());
  while (k > 0 && isDigit(a[k - 1])) --k;
  size_t i = k, j = k;
  while (i < a.size() && j < b.size()) {
    if (isDigit(a[i]) && isDigit(b[j])) {
      // Compared as text, without converting: a run of 40 digits is no overflow.
      size_t ai = i, bj = j;
      while (ai < a.size() && a[ai] == '0') ++ai;
      while (bj < b.size() && b[bj] == '0') ++bj;
      size_t ae = ai, be = bj;
      while (ae < a.size() && isDigit(a[ae])) ++ae;
      while (be < b.size() && isDigit(b[be])) ++be;
      if (ae - ai != be - bj) return ae - ai < be - bj ? -1 : 1;
      if (const int c = a.substr(ai, ae - ai).compare(b.substr(bj, be - bj)); c != 0) return c;
      // Same value: fewer leading zeros first, decided only if nothing else differs.
      if (tieBreak == 0 && (ae - i) != (be - j)) tieBreak = (ae - i) < (be - j) ? -1 : 1;
      i = ae;
      j = be;
      continue;
    }
    if (a[i] != b[j])
      return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
    ++i;
    ++j;
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return tieBreak;
}

}  // namespace ckpt
