#pragma once
// The modern_llm decoder (MODEL.md) in LibTorch: same parameter names, order,
// init and forward math as the Python reference, so its checkpoints load,
// resume and fine-tune here and what we write loads back in Python.
//
// Only ATen's Tensor is exposed: torch/torch.h stays in decoder.cpp (it
// costs tens of seconds per translation unit that includes it).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/config/model_config.h"

namespace torch::nn {
class Module;
}

namespace ckpt {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class Decoder {
 public:
  // Validates the config (ConfigError) and refuses MoE (std::runtime_error);
  // then initialises as MODEL.md says, from torch's global generator (so
  // torch::manual_seed makes it deterministic). Parameters are float32 on
  // the CPU; move them with to().
  explicit Decoder(const ModelConfig& config);
  ~Decoder();
  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) noexcept;
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // inputIds: integer [B, T], T <= max_seq_len (std::invalid_argument
  // otherwise). attentionMask: optional [B, T], 0 marks a padded key.
  // Returns logits [B, T, vocab_size]. Dropout applies in training mode.
  at::Tensor forward(const at::Tensor& inputIds, const at::Tensor& attentionMask = {});

  // Mean cross-entropy of logits[:, :-1] against labels[:, 1:] (computed in
  // float32), ignoring label -100.
  static at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels);

  // The trainable parameters in registration order, each once: with tied
  // embeddings there is no lm_head entry. Index i here is the optimizer
  // state's integer key i.
  [[nodiscard]] NamedTensors namedParameters() const;
  // Every state-dict key of MODEL.md in order, `lm_head.weight` included
  // (the very tensor of token_embed.weight when tied). No RoPE buffers.
  [[nodiscard]] NamedTensors stateDict() const;
  // Strict: every key present, none extra, shapes equal; wrapper prefixes
  // (`module.` of DDP, `_orig_mod.` of torch.compile) are stripped by
  // normaliseStateNames (ckpt/format/state_names.h). Values are copied, converted to
  // the model's dtype and device. On mismatch nothing is copied and the
  // std::runtime_error lists missing, unexpected, mis-shaped (name: expected
  // [..], got [..]) and duplicate keys, 20 of each at most. A tied model also
  // refuses an lm_head.weight that differs from token_embed.weight.
  void loadStateDict(const NamedTensors& entries);

  void to(const c10::Device& device);
  void train(bool on = true);
  [[nodiscard]] bool isTraining() const;
  [[nodiscard]] c10::Device device() const;
  [[nodiscard]] const ModelConfig& config() const;
  // Trainable scalars (the tied head counted once).
  [[nodiscard]] int64_t parameterCount() const;

  // The underlying module, e.g. for torch::optim::AdamW(module().parameters())
  // (whose order is namedParameters()'s) or torch::save.
  torch::nn::Module& module();
  [[nodiscard]] const torch::nn::Module& module() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace ckpt
