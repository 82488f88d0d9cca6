#include "ckpt/model/decoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include "ckpt/format/state_names.h"

namespace ckpt {
namespace {

namespace F = torch::nn::functional;

std::string shapeString(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The most negative finite value of a floating dtype: MODEL.md's mask value
// (not -inf, so a fully masked row still softmaxes to numbers).
double lowestOf(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat:
      return std::numeric_limits<float>::lowest();
    case c10::kDouble:
      return std::numeric_limits<double>::lowest();
    case c10::kBFloat16:
      return double(std::numeric_limits<c10::BFloat16>::lowest());
    case c10::kHalf:
      return double(std::numeric_limits<c10::Half>::lowest());
    default:
      throw std::invalid_argument("decoder: hidden states must be floating point");
  }
}

// y = x * rsqrt(mean(x^2) + eps) * weight
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t dim, double eps) : eps(eps) {
    weight = register_parameter("weight", torch::ones({dim}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
  }
  torch::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

// g = gate(x); a, b = halves of g; proj(silu(a) * b)
struct SwiGLUImpl : torch::nn::Module {
  SwiGLUImpl(int64_t dModel, int64_t hidden) {
    gate = register_module("gate", torch::nn::Linear(torch::nn::LinearOptions(dModel, 2 * hidden)));
    proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(hidden, dModel)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const auto halves = gate(x).chunk(2, /*dim=*/-1);
    return proj(torch::silu(halves[0]) * halves[1]);
  }
  torch::nn::Linear gate{nullptr}, proj{nullptr};
};
TORCH_MODULE(SwiGLU);

// RoPE in the reference's mixed convention: cos/sin repeat each angle twice
// in place ([c0, c0, c1, c1, ...]) but rot() pairs the two halves.
torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const auto rot = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos.to(x.scalar_type()) + rot * sin.to(x.scalar_type());
}

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const ModelConfig& c)
      : nHeads(c.nHeads),
        kvHeads(c.kvHeads()),
        headDim(c.headDim()),
        sinks(c.useAttentionSinks ? c.numAttentionSinks : 0),
        useRope(c.useRope),
        dropout(c.dropout) {
    const int64_t d = c.dModel;
    const int64_t kv = kvHeads * headDim;
    auto noBias = [](int64_t in, int64_t out) {
      return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
    };
    if (sinks > 0) sinkStates = register_parameter("sink_states", torch::zeros({sinks, d}));
    qProj = register_module("q_proj", noBias(d, d));
    kProj = register_module("k_proj", noBias(d, kv));
    vProj = register_module("v_proj", noBias(d, kv));
    outProj = register_module("out_proj", noBias(d, d));
  }

  // x [B, T, d]; bias [B, 1, T, S+T] (sink columns first); cos/sin
  // [S + max_seq_len, head_dim] covering every position used below.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& bias, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
    const int64_t B = x.size(0), T = x.size(1);
    auto heads = [&](const torch::Tensor& t, int64_t n, int64_t len) {
      return t.view({-1, len, n, headDim}).transpose(1, 2);  // [B, n, len, head_dim]
    };
    auto q = heads(qProj(x), nHeads, T);
    auto k = heads(kProj(x), kvHeads, T);
    auto v = heads(vProj(x), kvHeads, T);
    if (useRope) {
      // Queries sit after the sinks; token keys start at 0, like the sinks'.
      q = applyRope(q, cos.narrow(0, sinks, T), sin.narrow(0, sinks, T));
      k = applyRope(k, cos.narrow(0, 0, T), sin.narrow(0, 0, T));
    }
    if (sinks > 0) {
      auto sk = heads(kProj(sinkStates), kvHeads, sinks);  // [1, kv, S, head_dim]
      auto sv = heads(vProj(sinkStates), kvHeads, sinks);
      if (useRope) sk = applyRope(sk, cos.narrow(0, 0, sinks), sin.narrow(0, 0, sinks));
      k = torch::cat({sk.expand({B, kvHeads, sinks, headDim}), k}, 2);
      v = torch::cat({sv.expand({B, kvHeads, sinks, headDim}), v}, 2);
    }
    if (kvHeads != nHeads) {
      // Consecutive repetition: kv head 0 serves query heads 0..r-1.
      k = k.repeat_interleave(nHeads / kvHeads, /*dim=*/1);
      v = v.repeat_interleave(nHeads / kvHeads, /*dim=*/1);
    }
    const auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(headDim));
    auto probs = (scores.to(torch::kFloat) + bias.to(torch::kFloat)).softmax(-1);
    probs = torch::dropout(probs, dropout, is_training()).to(v.scalar_type());
    const auto out = torch::matmul(probs, v).transpose(1, 2).reshape({B, T, nHeads * headDim});
    return outProj(out);
  }

  int64_t nHeads, kvHeads, headDim, sinks;
  bool useRope;
  double dropout;
  torch::Tensor sinkStates;
  torch::nn::Linear qProj{nullptr}, kProj{nullptr}, vProj{nullptr}, outProj{nullptr};
};
TORCH_MODULE(Attention);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const ModelConfig& c) : dropout(c.dropout) {
    // Registration order is the state dict's order (MODEL.md).
    attn = register_module("attn", Attention(c));
    attnNorm = register_module("attn_norm", RMSNorm(c.dModel, c.rmsnormEps));
    ffnNorm = register_module("ffn_norm", RMSNorm(c.dModel, c.rmsnormEps));
    ffn = register_module("ffn", SwiGLU(c.dModel, c.ffnHiddenSize));
  }
  torch::Tensor forward(torch::Tensor h, const torch::Tensor& bias, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
    h = h + torch::dropout(attn(attnNorm(h), bias, cos, sin), dropout, is_training());
    return h + torch::dropout(ffn(ffnNorm(h)), dropout, is_training());
  }
  double dropout;
  Attention attn{nullptr};
  RMSNorm attnNorm{nullptr}, ffnNorm{nullptr};
  SwiGLU ffn{nullptr};
};
TORCH_MODULE(Block);

struct ModernLLMImpl : torch::nn::Module {
  explicit ModernLLMImpl(const ModelConfig& c) : cfg(c) {
    tokenEmbed = register_module("token_embed", torch::nn::Embedding(c.vocabSize, c.dModel));
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.nLayers; ++i) {
      blocks->push_back(Block(c));
      blockPtrs.push_back(blocks->ptr<BlockImpl>(size_t(i)));
    }
    finalNorm = register_module("final_norm", RMSNorm(c.dModel, c.rmsnormEps));
    if (!c.tieEmbeddings)
      lmHead = register_module(
          "lm_head",
          torch::nn::Linear(torch::nn::LinearOptions(c.dModel, c.vocabSize).bias(false)));

    // Angles for positions 0 .. S + max_seq_len - 1: queries go up to
    // S + T - 1 with sinks. Buffers move with to() and are not in the state
    // dict (the reference's frequency buffer is non-persistent).
    const int64_t sinks = c.useAttentionSinks ? c.numAttentionSinks : 0;
    const int64_t hd = c.headDim();
    auto invFreq =
        1.0 / torch::pow(c.ropeTheta, torch::arange(0, hd, 2, torch::kFloat) / double(hd));
    auto angles = torch::outer(torch::arange(sinks + c.maxSeqLen, torch::kFloat), invFreq);
    if (c.ropeScaling) angles = angles * *c.ropeScaling;
    ropeCos = register_buffer("rope_cos", angles.cos().repeat_interleave(2, /*dim=*/-1));
    ropeSin = register_buffer("rope_sin", angles.sin().repeat_interleave(2, /*dim=*/-1));
  }

  torch::Tensor forward(const torch::Tensor& inputIds, const torch::Tensor& attentionMask) {
    if (inputIds.dim() != 2)
      throw std::invalid_argument("decoder: input_ids must be [batch, seq], got " +
                                  shapeString(inputIds.sizes()));
    const int64_t B = inputIds.size(0), T = inputIds.size(1);
    if (T > cfg.maxSeqLen)
      throw std::invalid_argument("decoder: input length " + std::to_string(T) +
                                  " exceeds max_seq_len (" + std::to_string(cfg.maxSeqLen) + ")");
    const auto device = tokenEmbed->weight.device();
    auto h = tokenEmbed(inputIds.to(device, torch::kLong));
    h = torch::dropout(h, cfg.dropout, is_training());

    // Additive bias [B, 1, T, S+T]: the lowest value above the diagonal and
    // on padded keys, S leading zero columns for the sinks.
    const double lowest = lowestOf(h.scalar_type());
    const auto opts = torch::TensorOptions().dtype(h.scalar_type()).device(device);
    auto bias = torch::full({T, T}, lowest, opts).triu(1).view({1, 1, T, T}).expand({B, 1, T, T});
    if (attentionMask.defined()) {
      if (attentionMask.sizes() != inputIds.sizes())
        throw std::invalid_argument("decoder: attention_mask " +
                                    shapeString(attentionMask.sizes()) +
                                    " does not match input_ids " + shapeString(inputIds.sizes()));
      const auto padded = attentionMask.to(device).eq(0).view({B, 1, 1, T});
      bias = bias + torch::zeros({B, 1, 1, T}, opts).masked_fill(padded, lowest);
    }
    const int64_t sinks = cfg.useAttentionSinks ? cfg.numAttentionSinks : 0;
    if (sinks > 0) bias = torch::cat({torch::zeros({B, 1, T, sinks}, opts), bias}, -1);

    for (auto& block : blockPtrs) h = block->forward(h, bias, ropeCos, ropeSin);
    h = finalNorm(h);
    return lmHead ? lmHead(h) : F::linear(h, tokenEmbed->weight);
  }

  ModelConfig cfg;
  torch::nn::Embedding tokenEmbed{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  std::vector<std::shared_ptr<BlockImpl>> blockPtrs;
  RMSNorm finalNorm{nullptr};
  torch::nn::Linear lmHead{nullptr};
  torch::Tensor ropeCos, ropeSin;
};
TORCH_MODULE(ModernLLM);

}  // namespace

struct Decoder::Impl {
  ModelConfig config;
  ModernLLM net{nullptr};
};

Decoder::Decoder(const ModelConfig& config) : m_impl(std::make_unique<Impl>()) {
  config.validate();
  if (config.useMoe)
    throw std::runtime_error(
        "MoE layers (use_moe) cannot be run or trained; the checkpoint can still be browsed and "
        "compared");
  m_impl->config = config;
  m_impl->net = ModernLLM(config);

  // MODEL.md's init, in registration order so a seed fixes every value.
  torch::NoGradGuard noGrad;
  for (auto& [name, p] : namedParameters()) {
    auto endsWith = [&n = name](std::string_view s) {
      return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
    };
    if (endsWith("sink_states"))
      p.normal_(0.0, 0.02);
    else if (endsWith("norm.weight"))
      p.fill_(1.0);
    else if (endsWith(".bias"))
      p.zero_();
    else  // Linear weights and the embedding
      p.normal_(0.0, config.initializerRange);
  }
}

Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;

at::Tensor Decoder::forward(const at::Tensor& inputIds, const at::Tensor& attentionMask) {
  return m_impl->net->forward(inputIds, attentionMask);
}

at::Tensor Decoder::loss(const at::Tensor& logits, const at::Tensor& labels) {
  if (logits.dim() != 3 || labels.dim() != 2 || logits.size(0) != labels.size(0) ||
      logits.size(1) != labels.size(1))
    throw std::invalid_argument("decoder: loss needs logits [B, T, V] and labels [B, T], got " +
                                shapeString(logits.sizes()) + " and " +
                                shapeString(labels.sizes()));
  const int64_t T = logits.size(1), V = logits.size(2);
  const auto shifted = logits.narrow(1, 0, T - 1).reshape({-1, V}).to(torch::kFloat);
  const auto targets = labels.narrow(1, 1, T - 1).reshape({-1}).to(logits.device(), torch::kLong);
  return F::cross_entropy(shifted, targets, F::CrossEntropyFuncOptions().ignore_index(-100));
}

NamedTensors Decoder::namedParameters() const {
  NamedTensors out;
  for (const auto& item : m_impl->net->named_parameters(/*recurse=*/true))
    out.emplace_back(item.key(), item.value());
  return out;
}

NamedTensors Decoder::stateDict() const {
  NamedTensors out = namedParameters();
  if (m_impl->config.tieEmbeddings)
    out.emplace_back("lm_head.weight", m_impl->net->tokenEmbed->weight);
  return out;
}

void Decoder::loadStateDict(const NamedTensors& entries) {
  // A state dict saved from a wrapped model (DDP's "module.", torch.compile's
  // "_orig_mod.") is named as the checkpoint view names it.
  std::vector<std::string_view> keys;
  keys.reserve(entries.size());
  for (const auto& [key, t] : entries) keys.push_back(key);
  const std::vector<std::string> names = normaliseStateNames(keys).names;
  std::map<std::string, const at::Tensor*> given;
  std::vector<std::string> unexpected, duplicate;
  for (size_t i = 0; i < entries.size(); ++i)
    if (!given.emplace(names[i], &entries[i].second).second) duplicate.push_back(names[i]);
  const NamedTensors own = stateDict();
  std::vector<std::string> missing, misShaped;
  std::set<std::string> known;
  for (const auto& [name, p] : own) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (!it->second->defined() || it->second->sizes() != p.sizes()) {
      misShaped.push_back(name + ": expected " + shapeString(p.sizes()) + ", got " +
                          (it->second->defined() ? shapeString(it->second->sizes()) : "undefined"));
    }
  }
  for (size_t i = 0; i < entries.size(); ++i)
    if (!known.count(names[i])) unexpected.push_back(entries[i].first);
  if (!missing.empty() || !unexpected.empty() || !misShaped.empty() || !duplicate.empty()) {
    auto list = [](const char* what, const std::vector<std::string>& names, const char* sep) {
      if (names.empty()) return std::string();
      std::string s = std::string("\n  ") + what + " (" + std::to_string(names.size()) + "): ";
      const size_t shown = std::min<size_t>(names.size(), 20);
      for (size_t i = 0; i < shown; ++i) s += (i ? sep : "") + names[i];
      if (shown < names.size())
        s += sep + ("... and " + std::to_string(names.size() - shown) + " more");
      return s;
    };
    throw std::runtime_error(
        "state dict does not match the model:" + list("missing keys", missing, ", ") +
        list("unexpected keys", unexpected, ", ") + list("mis-shaped keys", misShaped, "; ") +
        list("duplicate keys", duplicate, ", "));
  }
  if (m_impl->config.tieEmbeddings) {
    // One storage holds both keys: a checkpoint whose two differ was not
    // written by a tied model, and one of them would silently win.
    const auto& a = *given.at("token_embed.weight");
    const auto& b = *given.at("lm_head.weight");
    if (!a.is_same(b) && !torch::equal(a, b.to(a.device(), a.scalar_type())))
      throw std::runtime_error(
          "state dict does not match the model: tie_embeddings is set but lm_head.weight differs "
          "from token_embed.weight");
  }
  torch::NoGradGuard noGrad;
  for (auto& [name, p] : own) p.copy_(*given.at(name));  // copy_ converts dtype and device
}

void Decoder::to(const c10::Device& device) {
  m_impl->net->to(device);
}
void Decoder::train(bool on) {
  m_impl->net->train(on);
}
bool Decoder::isTraining() const {
  return m_impl->net->is_training();
}
c10::Device Decoder::device() const {
  return m_impl->net->tokenEmbed->weight.device();
}
const ModelConfig& Decoder::config() const {
  return m_impl->config;
}

int64_t Decoder::parameterCount() const {
  int64_t n = 0;
  for (const auto& [name, p] : namedParameters()) n += p.numel();
  return n;
}

torch::nn::Module& Decoder::module() {
  return *m_impl->net;
}
const torch::nn::Module& Decoder::module() const {
  return *m_impl->net;
}

}  // namespace ckpt
