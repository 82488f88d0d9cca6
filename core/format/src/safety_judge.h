// The rules of the safety verdict for one pickle's opcode walk: which
// globals it names, which of them it calls (REDUCE, INST, OBJ), what
// builtins.getattr and builtins.__import__ reach. Two walks feed it, so
// that both judge by these rules alone:
//   pickle_scan.cpp    the safety scan's own walk (a shadow stack that
//                      remembers only what a verdict needs);
//   pickle_reader.cpp  the reader's walk while it opens a checkpoint
//                      (its value tree; PickleReader::setSafetyJudge).
// The levels come from the tables in safety_tables.cpp. Not a public header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/format/pickle_safety.h"

namespace ckpt {

class SafetyJudge {
 public:
  // A symbol: one global an opcode named or a getattr reached.
  static constexpr uint32_t kNoSymbol = UINT32_MAX;
  // A module or attribute name the scan remembers (longer ones it does not
  // follow: a STACK_GLOBAL with one is past its bound).
  static constexpr size_t kMaxName = 1024;
  // What getattr's first argument is: a symbol, or the module an
  // __import__ call returned (its name).
  struct Target {
    uint32_t symbol = kNoSymbol;
    std::string_view module;  // when symbol is kNoSymbol
  };

  // Globals go to `report` (judged under report.profile), named after
  // `record`, offsets plus `base`. Past a bound of `limits` the scan's walk
  // stops (throwAtBound: a ScanLimitError, as Python would read on); the
  // reader's walk goes on without the judge (overBound(): its verdict is
  // not the scan's, ask the scan).
  SafetyJudge(SafetyReport& report, const ScanLimits& limits, std::string record, uint64_t base,
              bool throwAtBound);

  // GLOBAL / STACK_GLOBAL / INST / EXT at `offset` (within the pickle).
  uint32_t global(std::string module, std::string name, uint64_t offset);
  // REDUCE, INST or OBJ calls `symbol`.
  void called(uint32_t symbol, const char* how);
  [[nodiscard]] bool isImport(uint32_t symbol) const {
    return symbol < m_symbols.size() && m_symbols[symbol].isImport;
  }
  [[nodiscard]] bool isGetattr(uint32_t symbol) const {
    return symbol < m_symbols.size() && m_symbols[symbol].isGetattr;
  }
  // REDUCE of builtins.getattr at `offset`: `target` null when its
  // arguments are not (global or module, str). Returns what it reaches
  // (kNoSymbol when nothing known).
  uint32_t getattr(uint32_t getattrSymbol, const Target* target, std::string_view attr,
                   uint64_t offset);

  // The reader's walk passed a bound of the scan's own (ScanLimits): from
  // there on nothing was judged.
  [[nodiscard]] bool overBound() const { return m_overBound; }
  // The reader's walk calls this where the scan's walk would stop at its
  // own bound (`what` as the scan words it). `exact`: at the very opcode
  // where the scan stops, with what the scan had judged until then; not
  // exact: found later (at STOP), the judge has gone past that place.
  void bound(uint64_t offset, const std::string& what, bool exact = true);
  // The first bound: the scan's error there (as its ScanLimitError words
  // it), when that bound was exact; empty otherwise.
  [[nodiscard]] const std::string& stopMessage() const { return m_stopMessage; }
  [[nodiscard]] const std::string& record() const { return m_record; }

 private:
  struct Symbol {
    std::string module, name;
    GlobalLevel level;
    long use = -1;  // entry in the report; -1 past ScanLimits::maxGlobals
    // builtins.getattr: 0 never called, 1 every call so far reached a member
    // the layout profile vouches for (innocuous), 2 some call did not (dangerous).
    uint8_t getattrState = 0;
    bool isGetattr = false, isImport = false;  // builtins.getattr / builtins.__import__
  };
  uint32_t addSymbol(Symbol&& s, uint64_t offset);
  Symbol symbolOf(std::string module, std::string name, const GlobalLevel& level);
  long addUse(const std::string& module, const std::string& name, SafetyLevel level,
              uint64_t offset, std::string why);
  void raise(Symbol& s, SafetyLevel level, const std::string& why);

  SafetyReport& m_report;
  ScanLimits m_limits;
  std::string m_record;
  uint64_t m_base;
  bool m_throwAtBound;
  bool m_overBound = false;
  std::string m_stopMessage;
  std::vector<Symbol> m_symbols;
};

}  // namespace ckpt
