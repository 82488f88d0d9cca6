// Tokenizer files: tokenizer.json, vocab.json + merges.txt, encoder.json +
// vocab.bpe, and the spec loadTokenizer resolves to one of them.
#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ckpt/tokenize/tokenizer.h"

namespace fs = std::filesystem;

namespace ckpt {

namespace {

std::string readWholeFile(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw DataError(std::string(what) + " " + path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(std::string(what) + " " + path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw DataError(std::string(what) + " " + path + ": read error");
  return ss.str();
}

nlohmann::json parseJsonFile(const std::string& path, const char* what) {
  const std::string text = readWholeFile(path, what);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(std::string(what) + " " + path + ": not valid JSON (" + e.what() + ")");
  }
}

int32_t jsonId(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
    throw DataError(where + ": id " + v.dump() + " is not an integer in [0, 2^31)");
  return static_cast<int32_t>(v.get<int64_t>());
}

std::unordered_map<std::string, int32_t> vocabFromJson(const nlohmann::json& j,
                                                       const std::string& where) {
  if (!j.is_object()) throw DataError(where + ": the vocabulary is not a JSON object");
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it)
    vocab.emplace(it.key(), jsonId(it.value(), where + ": token \"" + it.key() + "\""));
  return vocab;
}

// "a b" -> {a, b}: exactly two non-empty parts separated by one space.
bool splitMerge(std::string_view line, std::pair<std::string, std::string>& out) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size()) return false;
  if (line.find(' ', sp + 1) != std::string_view::npos) return false;
  out = {std::string(line.substr(0, sp)), std::string(line.substr(sp + 1))};
  return true;
}

}  // namespace

std::unique_ptr<BpeTokenizer> BpeTokenizer::fromVocabAndMerges(const std::string& vocabPath,
                                                               const std::string& mergesPath,
                                                               std::string source) {
  const auto vocab = vocabFromJson(parseJsonFile(vocabPath, "vocabulary"), vocabPath);

  const std::string text = readWholeFile(mergesPath, "merges file");
  std::vector<std::pair<std::string, std::string>> merges;
  size_t lineNo = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    ++lineNo;
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (lineNo == 1 && line.starts_with("#version")) continue;
    std::pair<std::string, std::string> merge;
    if (!splitMerge(line, merge))
      throw DataError("merges file " + mergesPath + " line " + std::to_string(lineNo) +
                      ": expected two tokens separated by one space, got \"" + std::string(line) +
                      "\"");
    merges.push_back(std::move(merge));
  }

  std::vector<AddedToken> added;
  if (auto it = vocab.find("<|endoftext|>"); it != vocab.end())
    added.push_back({it->first, it->second, true});
  const fs::path dir = fs::path(vocabPath).parent_path();
  const fs::path addedPath = dir / "added_tokens.json";
  std::error_code ec;
  if (fs::is_regular_file(addedPath, ec)) {
    const auto extra =
        vocabFromJson(parseJsonFile(addedPath.string(), "added tokens"), addedPath.string());
    for (const auto& [content, id] : extra) {
      if (std::none_of(added.begin(), added.end(),
                       [&](const AddedToken& t) { return t.content == content; }))
        added.push_back({content, id, true});
    }
  }
  std::sort(added.begin(), added.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  if (source.empty()) source = dir.empty() ? std::string(".") : dir.string();
  return std::make_unique<BpeTokenizer>(vocab, merges, std::move(added), BpeOptions{},
                                        std::move(source));
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::fromTokenizerJson(const std::string& path) {
  const nlohmann::json j = parseJsonFile(path, "tokenizer.json");
  const std::string where = "tokenizer.json " + path;
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw DataError(where + ": no \"model\" object (not a Hugging Face tokenizer.json?)");
  const nlohmann::json& model = j["model"];
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE")
    throw DataError(where + ": model type \"" + type + "\" is not supported (only \"BPE\")");
  if (!model.contains("vocab") || !model.contains("merges"))
    throw DataError(where + ": model lacks \"vocab\" or \"merges\"");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() &&
        !(model[key].is_string() && model[key].get<std::string>().empty()))
      throw DataError(where + ": model." + key + " is not supported by byte-level BPE");
  }
  if (model.value("byte_fallback", false))
    throw DataError(where + ": model.byte_fallback is not supported (not a byte-level BPE)");
  if (j.contains("normalizer") && !j["normalizer"].is_null())
    throw DataError(where + ": normalizer \"" + j["normalizer"].value("type", std::string("?")) +
                    "\" is not supported (GPT-2 byte-level BPE has none)");

  BpeOptions options;
  const nlohmann::json* pre = j.contains("pre_tokenizer") ? &j["pre_tokenizer"] : nullptr;
  if (pre && pre->is_object() && pre->value("type", std::string()) == "Sequence" &&
      pre->contains("pretokenizers") && (*pre)["pretokenizers"].is_array() &&
      (*pre)["pretokenizers"].size() == 1)
    pre = &(*pre)["pretokenizers"][0];
  if (!pre || !pre->is_object() || pre->value("type", std::string()) != "ByteLevel")
    throw DataError(where + ": the pre-tokenizer must be GPT-2's ByteLevel, found " +
                    (pre ? pre->dump().substr(0, 120) : std::string("none")));
  if (!pre->value("use_regex", true))
    throw DataError(where + ": ByteLevel pre-tokenizer without use_regex is not supported");
  options.addPrefixSpace = pre->value("add_prefix_space", false);
  options.ignoreMerges = model.value("ignore_merges", false);
  if (model.contains("unk_token") && model["unk_token"].is_string())
    options.unkToken = model["unk_token"].get<std::string>();

  const auto vocab = vocabFromJson(model["vocab"], where + ": model.vocab");
  const nlohmann::json& jm = model["merges"];
  if (!jm.is_array()) throw DataError(where + ": model.merges is not an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(jm.size());
  for (size_t i = 0; i < jm.size(); ++i) {
    const nlohmann::json& m = jm[i];
    std::pair<std::string, std::string> merge;
    bool ok = false;
    if (m.is_string()) {
      ok = splitMerge(m.get<std::string>(), merge);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merge = {m[0].get<std::string>(), m[1].get<std::string>()};
      ok = !merge.first.empty() && !merge.second.empty();
    }
    if (!ok)
      throw DataError(where + ": model.merges[" + std::to_string(i) +
                      "] = " + m.dump().substr(0, 120) + " is not \"a b\" or [\"a\", \"b\"]");
    merges.push_back(std::move(merge));
  }

  std::vector<AddedToken> added;
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    if (!j["added_tokens"].is_array()) throw DataError(where + ": added_tokens is not an array");
    for (const nlohmann::json& t : j["added_tokens"]) {
      if (!t.is_object() || !t.contains("id") || !t.contains("content") ||
          !t["content"].is_string())
        throw DataError(where + ": an added_tokens entry lacks \"id\" or \"content\"");
      added.push_back({t["content"].get<std::string>(),
                       jsonId(t["id"], where + ": added token " + t["content"].dump()),
                       t.value("special", false)});
    }
  }
  return std::make_unique<BpeTokenizer>(vocab, merges, std::move(added), options, path);
}

// ---------------------------------------------------------------------------

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& spec) {
  if (spec == "bytes") return std::make_unique<ByteTokenizer>();
  std::string path = spec;
  if (path.starts_with("bpe:")) path.erase(0, 4);
  const char* expected =
      "expected \"bytes\", a tokenizer.json file, or a directory with tokenizer.json, "
      "vocab.json + merges.txt, or encoder.json + vocab.bpe";
  if (path.empty()) throw DataError("tokenizer \"" + spec + "\": empty path; " + expected);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st))
    throw DataError("tokenizer " + path + ": no such file or directory; " + expected);
  if (fs::is_regular_file(st)) return BpeTokenizer::fromTokenizerJson(path);
  if (fs::is_directory(st)) {
    const fs::path dir(path);
    auto has = [&](const char* name) { return fs::is_regular_file(dir / name, ec); };
    if (has("tokenizer.json"))
      return BpeTokenizer::fromTokenizerJson((dir / "tokenizer.json").string());
    if (has("vocab.json") && has("merges.txt"))
      return BpeTokenizer::fromVocabAndMerges((dir / "vocab.json").string(),
                                              (dir / "merges.txt").string(), path);
    if (has("encoder.json") && has("vocab.bpe"))
      return BpeTokenizer::fromVocabAndMerges((dir / "encoder.json").string(),
                                              (dir / "vocab.bpe").string(), path);
    throw DataError("tokenizer directory " + path + " holds no tokenizer files; " + expected);
  }
  throw DataError("tokenizer " + path + ": not a file or directory; " + expected);
}

}  // namespace ckpt
