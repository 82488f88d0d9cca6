#pragma once
// Where and in which precision a model runs: the choices a user makes with
// --device/--precision, resolved against what this LibTorch build and machine
// offer.

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace ckpt {

// "auto": CUDA when torch::cuda::is_available(), else the CPU. "cpu".
// "cuda" or "cuda:N": throws std::runtime_error when CUDA is unavailable (or
// N is out of range). Anything else: std::invalid_argument.
c10::Device pickDevice(const std::string& requested);

enum class Precision { FP32, BF16, FP16 };

// "fp32"|"float32", "bf16"|"bfloat16", "fp16"|"float16" (std::invalid_argument otherwise).
Precision parsePrecision(const std::string& name);
std::string precisionName(Precision precision);

// The autocast a training step should run under.
struct AutocastPlan {
  // The lower-precision dtype for autocast; nullopt: plain float32.
  std::optional<c10::ScalarType> dtype;
  // Non-empty when the request was changed or needs a caveat, for the log.
  std::string note;
};

// bf16/fp16 autocast only on CUDA; on the CPU the plan is fp32 with a note.
// fp16 comes with a note (no gradient scaler here: prefer bf16).
AutocastPlan autocastPlan(Precision precision, const c10::Device& device);

// Turns CUDA autocast on for its lifetime when the plan asks for it (a no-op
// for fp32), restoring the previous state after. The model keeps float32
// parameters; matmuls run in the plan's dtype, softmax stays float32.
class AutocastGuard {
 public:
  explicit AutocastGuard(const AutocastPlan& plan);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool m_active = false;
  bool m_prevEnabled = false;
  c10::ScalarType m_prevDtype = c10::ScalarType::Half;
};

}  // namespace ckpt
