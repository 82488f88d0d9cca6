#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ckpt/format/tensor_info.h"
#include "ckpt/format/value.h"

namespace ckpt {

class SafetyJudge;
struct ScanLimits;

namespace detail {
// Test hook: called as every pickle walk starts (the reader's parse and the
// safety scan's), with the record it walks and where. Per thread; null
// (the default) for none.
using PickleWalkHook = void (*)(const std::string& record, uint64_t offset, void* context);
void setPickleWalkHook(PickleWalkHook hook, void* context);
void notePickleWalk(const std::string& record, uint64_t offset);
}  // namespace detail

// Caps that turn hostile pickles into errors instead of crashes or giant
// allocations. Defaults are far above what real checkpoints use.
struct PickleLimits {
  uint32_t maxDepth = 1000;              // container nesting
  uint64_t maxStringBytes = 1ull << 30;  // one str / bytes
  uint64_t maxNodes = 10'000'000;        // values created (about 1.7 GB at most)
  uint64_t maxMemo = 10'000'000;         // memo entries
  uint64_t maxStack = 10'000'000;        // stack + marks
};

// Called for PERSID / BINPERSID with the persistent id the pickle built; it
// returns the value to push (a Storage node) or throws.
using PersistentLoader = std::function<const Value*(const Value* pid)>;

struct PickleResult {
  const Value* root = nullptr;
  uint64_t end = 0;  // offset just past STOP
};

// A safe pickle interpreter (protocols 0-5 as they occur in checkpoints).
// Rebuild functions of torch are interpreted; every other global becomes an
// opaque Object that records its class, arguments and state. Nothing is
// imported or called.
// `what` names the buffer in error messages ("archive/data.pkl");
// `baseOffset` is added to byte offsets in messages.
class PickleReader {
 public:
  PickleReader(ValueArena& arena, std::string what, PickleLimits limits = {});

  void setPersistentLoader(PersistentLoader loader) { m_loader = std::move(loader); }
  // Where torch's rebuild functions put the tensors they describe (and look
  // up the storages the persistent loader registered). Without a table,
  // rebuild calls stay opaque objects.
  void setTensorTable(TensorTable* table) { m_table = table; }
  // The bytes given to parse() live as long as the arena (they were
  // allocated from it): str and bytes values then view them where they are
  // instead of being copied.
  void setBytesOutliveArena(bool yes) { m_borrow = yes; }
  // Judge the walk for the safety verdict as the scan does (the judge
  // names the record; pickle_safety.h): no second walk over the bytes.
  // `bounds`: the scan's own, past which the judge gives up (overBound()).
  void setSafetyJudge(SafetyJudge* judge, const ScanLimits& bounds);

  PickleResult parse(const uint8_t* data, uint64_t size, uint64_t baseOffset = 0);

 private:
  ValueArena& m_arena;
  std::string m_what;
  PickleLimits m_limits;
  PersistentLoader m_loader;
  TensorTable* m_table = nullptr;
  bool m_borrow = false;
  SafetyJudge* m_judge = nullptr;
  const ScanLimits* m_judgeBounds = nullptr;
};

}  // namespace ckpt
