// The rules of the safety verdict for one pickle's walk (safety_judge.h).
#include "safety_judge.h"

#include <algorithm>

namespace ckpt {

namespace {
constexpr uint32_t kMaxIndex = (1u << 29) - 1;  // the scan's shadow stack keeps 29 bits
}

SafetyJudge::SafetyJudge(SafetyReport& report, const ScanLimits& limits, std::string record,
                         uint64_t base, bool throwAtBound)
    : m_report(report),
      m_limits(limits),
      m_record(std::move(record)),
      m_base(base),
      m_throwAtBound(throwAtBound) {}

void SafetyJudge::bound(uint64_t offset, const std::string& what, bool exact) {
  std::string message = m_record + ": byte " + std::to_string(m_base + offset) + ": " + what +
                        "; the rest of this pickle was not examined";
  if (m_throwAtBound) throw ScanLimitError(std::move(message));
  if (m_overBound) return;  // the scan stops at the first
  m_overBound = true;
  if (exact) m_stopMessage = std::move(message);
}

SafetyJudge::Symbol SafetyJudge::symbolOf(std::string module, std::string name,
                                          const GlobalLevel& level) {
  Symbol s;
  s.level = level;
  const std::string normal = canonicalGlobal(module, name);
  s.isGetattr = normal == "builtins.getattr";
  s.isImport = normal == "builtins.__import__";
  s.module = std::move(module);
  s.name = std::move(name);
  return s;
}

uint32_t SafetyJudge::global(std::string module, std::string name, uint64_t offset) {
  if (m_overBound) return kNoSymbol;
  const GlobalLevel level = classifyGlobal(module, name, m_report.profile);
  Symbol s = symbolOf(std::move(module), std::move(name), level);
  s.use = addUse(s.module, s.name, level.level, offset,
                 level.known ? std::string(level.why)
                             : std::string("not in the safety tables: an object of a class we "
                                           "do not know"));
  return addSymbol(std::move(s), offset);
}

uint32_t SafetyJudge::addSymbol(Symbol&& s, uint64_t offset) {
  if (m_symbols.size() >= std::min<uint64_t>(m_limits.maxGlobals * 2, kMaxIndex)) {
    bound(offset, "more than " + std::to_string(m_limits.maxGlobals) + " globals");
    return kNoSymbol;
  }
  m_symbols.push_back(std::move(s));
  return uint32_t(m_symbols.size() - 1);
}

long SafetyJudge::addUse(const std::string& module, const std::string& name, SafetyLevel level,
                         uint64_t offset, std::string why) {
  if (m_report.globals.size() >= m_limits.maxGlobals) {
    ++m_report.leftOut;
    if (level > m_report.leftOutWorst) m_report.leftOutWorst = level;
    return -1;
  }
  GlobalUse u;
  u.module = module;
  u.name = name;
  u.level = level;
  u.record = m_record;
  u.offset = m_base + offset;
  u.why = std::move(why);
  m_report.globals.push_back(std::move(u));
  return long(m_report.globals.size() - 1);
}

void SafetyJudge::raise(Symbol& s, SafetyLevel level, const std::string& why) {
  if (s.use < 0) {
    if (level > m_report.leftOutWorst) m_report.leftOutWorst = level;
    return;
  }
  GlobalUse& u = m_report.globals[size_t(s.use)];
  if (level > u.level) {
    u.level = level;
    u.why = why;
  }
}

// A global no table names may be anything, so calling one is dangerous. A
// class a layout profile vouches for only as built from its state is
// judged by the general tables when called (its __init__ runs).
void SafetyJudge::called(uint32_t symbol, const char* how) {
  if (m_overBound || symbol >= m_symbols.size()) return;
  Symbol& s = m_symbols[symbol];
  if (s.level.profiled && !s.level.callable) {
    const GlobalLevel general = classifyGlobal(s.module, s.name);
    if (!general.known)
      raise(s, SafetyLevel::Dangerous,
            std::string("called by ") + how + ": " +
                std::string(safetyProfileTitle(m_report.profile)) +
                " builds it from its state, never calls it; not in the general tables");
    else
      raise(s, general.level, std::string("called by ") + how + ": " + std::string(general.why));
    return;
  }
  if (!s.level.known)
    raise(s, SafetyLevel::Dangerous, std::string("unknown global called by ") + how);
}

// getattr(target, "attr") with a known target: what it reaches is listed
// and judged, and is what the call leaves on the stack (a global, for the
// next REDUCE or getattr). getattr itself stays dangerous, unless every
// call of it reached a member the file's layout profile vouches for (an
// enum member, a nested class: how the writer's pickler spells them).
uint32_t SafetyJudge::getattr(uint32_t getattrSymbol, const Target* target, std::string_view attr,
                              uint64_t offset) {
  if (m_overBound || getattrSymbol >= m_symbols.size()) return kNoSymbol;
  if (!target || (target->symbol == kNoSymbol && target->module.empty()) ||
      (target->symbol != kNoSymbol && target->symbol >= m_symbols.size())) {
    Symbol& g = m_symbols[getattrSymbol];
    g.getattrState = 2;
    raise(g, SafetyLevel::Dangerous, "getattr of an object computed at load time");
    return kNoSymbol;
  }
  std::string module, name;
  if (target->symbol == kNoSymbol) {
    module.assign(target->module);
    name.assign(attr);
  } else {
    const Symbol& t = m_symbols[target->symbol];
    module = t.module;
    name = t.name + "." + std::string(attr);
  }
  const GlobalLevel reached = classifyGlobal(module, name, m_report.profile);
  const std::string full = module + "." + name;
  Symbol& g = m_symbols[getattrSymbol];
  const bool vouched = reached.profiled && g.getattrState != 2;
  if (!vouched) g.getattrState = 2;
  if (g.use >= 0) {
    GlobalUse& u = m_report.globals[size_t(g.use)];
    if (vouched && g.getattrState == 0) {
      u.level = SafetyLevel::Innocuous;
      u.why = "getattr reaches " + full + ": " + std::string(reached.why) + ", allowed for " +
              std::string(safetyProfileTitle(m_report.profile));
      g.getattrState = 1;
    } else if (!vouched && u.level != SafetyLevel::Dangerous) {
      u.level = SafetyLevel::Dangerous;
      u.why = std::string(classifyGlobal("builtins", "getattr").why);
    }
    u.reaches += (u.reaches.empty() ? "" : ", ") + full;
  } else if (!vouched) {
    m_report.leftOutWorst = SafetyLevel::Dangerous;
  }
  Symbol s = symbolOf(std::move(module), std::move(name), reached);
  s.use =
      addUse(s.module, s.name, reached.level, offset,
             reached.known ? "reached by builtins.getattr: " + std::string(reached.why)
                           : std::string("reached by builtins.getattr; not in the safety tables"));
  if (s.use >= 0) m_report.globals[size_t(s.use)].via = "getattr";
  return addSymbol(std::move(s), offset);
}

}  // namespace ckpt
