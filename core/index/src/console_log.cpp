// Console logs: their lines read in blocks, each line's `step=N key=value`
// record (logger names, eval lines, tqdm noise; nanoGPT's lines:
// nanogpt_log.cpp), and which lines belong to a run, as Points.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>

#include "ckpt/index/metrics.h"
#include "metric_text.h"
#include "nanogpt_log.h"

namespace ckpt {
namespace {

using detail::canonicalMetric;

// A logger name or metric key longer than this is not one.
constexpr size_t kMaxName = 200;

// line(text) for each complete line from `offset` on (without its '\n'),
// the file read in blocks: a log of gigabytes is never held whole. A line
// longer than kMaxJsonlLine is skipped. `*end`: just past the last complete
// line (where a later call continues).
template <typename Line>
void forEachCompleteLine(const std::string& path, uint64_t offset, uint64_t* end,
                         const Line& line) {
  detail::forEachLineBlock(
      path, offset, end,
      [&line](std::string_view text, uint64_t) {
        for (size_t start = 0; start < text.size();) {
          const size_t nl = text.find('\n', start);
          line(text.substr(start, nl - start));
          start = nl + 1;
        }
      },
      [](uint64_t) {});
}

// ---------------------------------------------------------------- logs

bool digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

int number(std::string_view s, size_t at, size_t n) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

// "YYYY-MM-DD HH:MM:SS" (optionally ",mmm" or ".mmm") at `at`: seconds
// since the epoch read as UTC, and where it ends.
std::optional<double> timestampAt(std::string_view s, size_t at, size_t* after) {
  if (!digits(s, at, 4) || s.size() < at + 19 || s[at + 4] != '-' || !digits(s, at + 5, 2) ||
      s[at + 7] != '-' || !digits(s, at + 8, 2) || (s[at + 10] != ' ' && s[at + 10] != 'T') ||
      !digits(s, at + 11, 2) || s[at + 13] != ':' || !digits(s, at + 14, 2) || s[at + 16] != ':' ||
      !digits(s, at + 17, 2))
    return std::nullopt;
  const int mon = number(s, at + 5, 2), day = number(s, at + 8, 2);
  const int h = number(s, at + 11, 2), mi = number(s, at + 14, 2), sec = number(s, at + 17, 2);
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || h > 23 || mi > 59 || sec > 60)
    return std::nullopt;
  double t = double(daysFromCivil(number(s, at, 4), unsigned(mon), unsigned(day)) * 86400 +
                    h * 3600 + mi * 60 + sec);
  size_t i = at + 19;
  if (i + 1 < s.size() && (s[i] == ',' || s[i] == '.') && digits(s, i + 1, 1)) {
    // Milliseconds (logging's ",123"): seconds + 123 / 1000.0, as Python adds them.
    size_t j = i + 1;
    int64_t fraction = 0;
    double scale = 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) && j - i <= 9) {
      fraction = fraction * 10 + (s[j] - '0');
      scale *= 10;
      ++j;
    }
    t += double(fraction) / scale;
    i = j;
  }
  *after = i;
  return t;
}

// A piece of a line taken apart: the logger's run, the wall time, the message.
struct Record {
  std::string_view logger;  // "" when none
  std::optional<double> wallTime;
  std::string_view message;
};

bool isLevel(std::string_view s) {
  return s == "DEBUG" || s == "INFO" || s == "WARNING" || s == "WARN" || s == "ERROR" ||
         s == "CRITICAL";
}

Record splitRecord(std::string_view piece) {
  Record r;
  r.message = piece;
  // `%(asctime)s - %(name)s - %(levelname)s - %(message)s`, possibly right
  // after a progress bar's text on the same piece.
  for (size_t at = piece.find('-'); at != std::string_view::npos; at = piece.find('-', at + 1)) {
    size_t after = 0;
    const auto t = at >= 4 ? timestampAt(piece, at - 4, &after) : std::nullopt;
    if (!t) continue;
    r.wallTime = t;
    std::string_view rest = piece.substr(after);
    r.message = rest;
    if (rest.substr(0, 3) != " - ") return r;
    rest.remove_prefix(3);
    const size_t nameEnd = rest.find(" - ");
    if (nameEnd == std::string_view::npos) return r;
    const std::string_view name = rest.substr(0, nameEnd);
    std::string_view afterName = rest.substr(nameEnd + 3);
    const size_t levelEnd = afterName.find(" - ");
    if (levelEnd != std::string_view::npos && isLevel(afterName.substr(0, levelEnd))) {
      r.logger = name;
      r.message = afterName.substr(levelEnd + 3);
    } else {
      r.message = rest;
    }
    return r;
  }
  // basicConfig's default `%(levelname)s:%(name)s:%(message)s`.
  const size_t colon = piece.find(':');
  if (colon != std::string_view::npos && isLevel(piece.substr(0, colon))) {
    const std::string_view rest = piece.substr(colon + 1);
    const size_t nameEnd = rest.find(':');
    if (nameEnd != std::string_view::npos && nameEnd < kMaxName &&
        rest.substr(0, nameEnd).find(' ') == std::string_view::npos) {
      r.logger = rest.substr(0, nameEnd);
      r.message = rest.substr(nameEnd + 1);
    }
  }
  return r;
}

// The run a logger names: `trainer.<run>`.
std::string_view runOfLogger(std::string_view logger) {
  constexpr std::string_view kTrainer = "trainer.";
  if (logger.size() > kTrainer.size() && logger.substr(0, kTrainer.size()) == kTrainer &&
      logger.size() < kMaxName)
    return logger.substr(kTrainer.size());
  return {};
}

std::optional<double> parseNumber(std::string_view s) {
  while (!s.empty() && (s.back() == '%' || s.back() == ',' || s.back() == ';')) s.remove_suffix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    if (s == "nan" || s == "NaN") return std::nan("");
    return std::nullopt;
  }
  return v;
}

bool isSeparator(char c) {
  return c == ' ' || c == '\t' || c == ',' || c == '|' || c == '\r';
}

bool startsWithWord(std::string_view s, std::string_view word) {
  if (s.size() < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != word[i]) return false;
  return s.size() == word.size() || !std::isalnum(static_cast<unsigned char>(s[word.size()]));
}

// An evaluation's message: "eval step=...", "Eval: step=...", "validation step=...".
bool isEvalMessage(std::string_view m) {
  while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
  return startsWithWord(m, "eval") || startsWithWord(m, "evaluation") || startsWithWord(m, "val") ||
         startsWithWord(m, "validation");
}

// tqdm's bar: "<desc>:  12%|█▏   | 120/1000 [...]".
bool looksLikeProgressBar(std::string_view piece) {
  return piece.find("%|") != std::string_view::npos;
}

void parsePiece(std::string_view piece, std::vector<LoggedPoint>& out) {
  if (piece.find("step=") == std::string_view::npos) return;
  const Record rec = splitRecord(piece);
  if (!rec.wallTime && rec.logger.empty() && looksLikeProgressBar(piece))
    return;  // a bar's postfix
  const std::string_view line = rec.message;
  // key=value pairs separated by spaces (or commas / pipes).
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && isSeparator(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !isSeparator(line[i])) ++i;
    const std::string_view token = line.substr(start, i - start);
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq > kMaxName) continue;
    const std::string_view key = token.substr(0, eq);
    if (!std::all_of(key.begin(), key.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        }))
      continue;
    pairs.emplace_back(key, token.substr(eq + 1));
  }
  std::optional<int64_t> step;
  std::optional<int64_t> tokens;
  for (const auto& [k, v] : pairs) {
    const auto n = parseNumber(v);
    if (!n || *n < 0 || *n != std::floor(*n) || *n > 9.2e18) continue;
    if (k == "step")
      step = int64_t(*n);
    else if (k == "tokens")
      tokens = int64_t(*n);
  }
  if (!step) return;
  const bool eval = isEvalMessage(line);
  const std::string run(runOfLogger(rec.logger));
  for (const auto& [k, v] : pairs) {
    if (k == "step" || k == "tokens") continue;
    const auto n = parseNumber(v);
    if (!n) continue;
    LoggedPoint p;
    p.run = run;
    std::string key(k);
    if (key.rfind("eval_", 0) == 0)
      key = "val_" + key.substr(5);
    else if (eval && key.rfind("val_", 0) != 0)
      key = "val_" + key;
    p.metric = canonicalMetric(std::move(key));
    p.point.step = *step;
    p.point.value = *n;
    p.point.wallTime = rec.wallTime;
    p.point.tokens = tokens;
    out.push_back(std::move(p));
  }
}

}  // namespace

std::vector<LoggedPoint> readConsoleLogLines(const std::string& path, uint64_t offset,
                                             uint64_t* end) {
  std::vector<LoggedPoint> out;
  forEachCompleteLine(path, offset, end, [&out](std::string_view line) {
    if (detail::parseNanoGptLine(line, out)) return;
    if (line.find("step=") == std::string_view::npos) return;
    // tqdm redraws with '\r': each piece is a bar or a record.
    size_t pieceStart = 0;
    while (pieceStart <= line.size()) {
      size_t cr = line.find('\r', pieceStart);
      if (cr == std::string_view::npos) cr = line.size();
      parsePiece(line.substr(pieceStart, cr - pieceStart), out);
      pieceStart = cr + 1;
    }
  });
  return out;
}

using Points = std::vector<std::pair<std::string, MetricPoint>>;

bool LogFilter::accepts(const std::string& loggedRun) const {
  if (loggedRun.empty()) return unnamedLines;
  return std::find(names.begin(), names.end(), loggedRun) != names.end();
}

Points readConsoleLog(const std::string& path, const LogFilter& filter, uint64_t offset,
                      uint64_t* end) {
  Points out;
  for (LoggedPoint& p : readConsoleLogLines(path, offset, end))
    if (filter.accepts(p.run)) out.emplace_back(std::move(p.metric), p.point);
  return out;
}

Points readConsoleLog(const std::string& path, uint64_t offset, uint64_t* end) {
  Points out;
  for (LoggedPoint& p : readConsoleLogLines(path, offset, end))
    out.emplace_back(std::move(p.metric), p.point);
  return out;
}

}  // namespace ckpt
