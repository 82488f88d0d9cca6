#include "ckpt/model/device.h"

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>

#include <stdexcept>

namespace ckpt {

c10::Device pickDevice(const std::string& requested) {
  if (requested == "auto" || requested.empty())
    return torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (requested == "cpu") return c10::Device(c10::kCPU);
  if (requested == "cuda" || requested.rfind("cuda:", 0) == 0) {
    if (!torch::cuda::is_available())
      throw std::runtime_error("device '" + requested +
                               "' was requested but CUDA is not available (this LibTorch build "
                               "has no CUDA support, or no GPU is visible)");
    int index = 0;
    if (requested.size() > 5) {
      const std::string digits = requested.substr(5);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
          digits.size() > 3)
        throw std::invalid_argument("unknown device '" + requested +
                                    "' (expected auto, cpu, cuda or cuda:N)");
      index = std::stoi(digits);
    }
    const size_t count = torch::cuda::device_count();
    if (size_t(index) >= count)
      throw std::runtime_error("device '" + requested + "' was requested but only " +
                               std::to_string(count) + " CUDA device(s) are visible");
    return c10::Device(c10::kCUDA, c10::DeviceIndex(index));
  }
  throw std::invalid_argument("unknown device '" + requested +
                              "' (expected auto, cpu, cuda or cuda:N)");
}

Precision parsePrecision(const std::string& name) {
  if (name == "fp32" || name == "float32") return Precision::FP32;
  if (name == "bf16" || name == "bfloat16") return Precision::BF16;
  if (name == "fp16" || name == "float16") return Precision::FP16;
  throw std::invalid_argument("unknown precision '" + name + "' (expected fp32, bf16 or fp16)");
}

std::string precisionName(Precision precision) {
  switch (precision) {
    case Precision::FP32:
      return "fp32";
    case Precision::BF16:
      return "bf16";
    case Precision::FP16:
      return "fp16";
  }
  return "fp32";
}

AutocastPlan autocastPlan(Precision precision, const c10::Device& device) {
  if (precision == Precision::FP32) return {};
  const std::string name = precisionName(precision);
  if (!device.is_cuda())
    return {std::nullopt, name + " autocast is only used on CUDA; running in fp32 on the CPU"};
  if (precision == Precision::BF16) return {c10::kBFloat16, ""};
  return {c10::kHalf,
          "fp16 autocast without a gradient scaler can underflow gradients; prefer bf16"};
}

// Autocast state is thread-local: make the guard on the thread that runs the
// forward pass (the training worker), not the one that planned it.
AutocastGuard::AutocastGuard(const AutocastPlan& plan) {
  if (!plan.dtype) return;
  m_active = true;
  m_prevEnabled = at::autocast::is_enabled();
  m_prevDtype = at::autocast::get_autocast_gpu_dtype();
  at::autocast::set_autocast_gpu_dtype(*plan.dtype);
  at::autocast::set_enabled(true);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!m_active) return;
  // Cached casts of the weights are only valid inside the outermost region.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_enabled(m_prevEnabled);
  at::autocast::set_autocast_gpu_dtype(m_prevDtype);
}

}  // namespace ckpt
