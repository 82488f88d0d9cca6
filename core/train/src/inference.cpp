// Using a trained checkpoint: the loss over a text (score) and sampling
// text from a prompt (generate), for `ckptscope-cli score|generate` and the
// Generate tab. Apart from trainer.cpp: nothing here trains.
#include <torch/torch.h>

#include <limits>

#include "checkpoint_io.h"
#include "ckpt/model/decoder.h"
#include "ckpt/model/device.h"
#include "ckpt/tokenize/dataset.h"
#include "ckpt/tokenize/tokenizer.h"
#include "ckpt/train/trainer.h"

namespace ckpt {

namespace {

struct LoadedModel {
  std::unique_ptr<Decoder> model;
  std::unique_ptr<Tokenizer> tokenizer;
  c10::Device device = c10::Device(c10::kCPU);
};

LoadedModel loadForInference(const std::string& checkpoint, const std::string& tokenizer,
                             const std::string& device) {
  ModelConfig config;
  CheckpointContent content = loadCheckpointContent(checkpoint, &config);
  LoadedModel m;
  m.device = pickDevice(device);
  m.model = std::make_unique<Decoder>(config);
  m.model->loadStateDict(content.modelState);
  m.model->to(m.device);
  m.model->train(false);
  std::string spec = tokenizer;
  if (spec.empty() && content.metadata.contains("tokenizer") &&
      content.metadata["tokenizer"].is_string())
    spec = content.metadata["tokenizer"].get<std::string>();
  if (spec.empty()) spec = "bytes";
  m.tokenizer = loadTokenizer(spec);
  return m;
}

}  // namespace

ScoreResult scoreCheckpoint(const std::string& checkpoint, const std::string& dataPath,
                            int64_t seqLen, const std::string& tokenizer,
                            const std::string& device) {
  LoadedModel m = loadForInference(checkpoint, tokenizer, device);
  if (seqLen <= 0 || seqLen > m.model->config().maxSeqLen)
    throw ConfigError("--seq-len (" + std::to_string(seqLen) + ") must be in [1, max_seq_len = " +
                      std::to_string(m.model->config().maxSeqLen) + "]");
  DatasetOptions options;
  options.valFraction = 0;
  options.separator = m.tokenizer->specialTokenId("<|endoftext|>");
  const TokenDataset data(std::vector<std::string>{dataPath}, *m.tokenizer, options);
  const auto windows = consecutiveWindows(data.splitSize(Split::Train), seqLen);
  if (windows.empty())
    throw std::runtime_error(dataPath + ": fewer tokens than one window of " +
                             std::to_string(seqLen));
  torch::NoGradGuard noGrad;
  ScoreResult r;
  double total = 0;
  std::vector<int32_t> buf(static_cast<size_t>(seqLen));
  for (const auto& w : windows) {
    data.read(Split::Train, w.first, seqLen, buf.data());
    const at::Tensor ids =
        torch::from_blob(buf.data(), {1, seqLen}, torch::kInt32).to(torch::kLong).to(m.device);
    total += Decoder::loss(m.model->forward(ids), ids).item<double>();
  }
  r.windows = int64_t(windows.size());
  r.tokens = r.windows * seqLen;
  r.loss = total / double(r.windows);
  return r;
}

std::string generateText(const std::string& checkpoint, const GenerateOptions& options,
                         const GenerateCallback& onToken) {
  LoadedModel m = loadForInference(checkpoint, options.tokenizer, options.device);
  const ModelConfig& config = m.model->config();
  std::vector<int32_t> tokens = m.tokenizer->encode(options.prompt);
  if (tokens.empty()) throw std::runtime_error("the prompt is empty");
  auto gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  torch::NoGradGuard noGrad;
  std::vector<int32_t> produced;
  std::string text;
  for (int64_t i = 0; i < options.maxNewTokens; ++i) {
    const size_t from =
        tokens.size() > size_t(config.maxSeqLen) ? tokens.size() - size_t(config.maxSeqLen) : 0;
    std::vector<int64_t> ctx(tokens.begin() + long(from), tokens.end());
    const at::Tensor ids = torch::tensor(ctx, torch::kLong).unsqueeze(0).to(m.device);
    at::Tensor logits = m.model->forward(ids).index({0, -1}).to(torch::kCPU, torch::kFloat64);
    int32_t next = 0;
    if (options.temperature <= 0) {
      next = int32_t(logits.argmax().item<int64_t>());
    } else {
      logits = logits / options.temperature;
      if (options.topK > 0 && options.topK < logits.size(0)) {
        const auto kth = std::get<0>(logits.topk(options.topK)).min();
        logits = logits.masked_fill(logits < kth, -std::numeric_limits<double>::infinity());
      }
      const at::Tensor probs = torch::softmax(logits, 0);
      next = int32_t(at::multinomial(probs, 1, false, gen).item<int64_t>());
    }
    tokens.push_back(next);
    produced.push_back(next);
    const std::string decoded = m.tokenizer->decode(produced);
    GeneratedToken token;
    token.index = i;
    token.id = next;
    if (decoded.size() > text.size()) token.text = decoded.substr(text.size());
    text = decoded;
    if (onToken && !onToken(token)) break;
  }
  return text;
}

}  // namespace ckpt
