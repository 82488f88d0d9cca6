#pragma once
// The flat `key: value` lines of a YAML file as yaml.dump writes a dict of
// plain values (MLflow's meta.yaml, Lightning's hparams.yaml): no YAML
// library, nested blocks and list items skipped (internal).

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "small_file.h"

namespace ckpt::detail {

// At most this much of a file is read (a meta.yaml is a few hundred bytes).
inline constexpr size_t kFlatYamlLimit = 1 << 20;

inline std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// A YAML scalar as yaml.safe_dump writes a plain string: bare, or in single
// quotes ('' for a quote), or in double quotes.
inline std::string yamlScalar(std::string v) {
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') {
    std::string out;
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      out += v[i];
      if (v[i] == '\'' && i + 2 < v.size() && v[i + 1] == '\'') ++i;
    }
    return out;
  }
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') return v.substr(1, v.size() - 2);
  return v;
}

// The top-level `key: value` lines of a meta.yaml (nested lists skipped).
inline std::map<std::string, std::string> flatYaml(const std::filesystem::path& p) {
  std::map<std::string, std::string> out;
  const std::optional<SmallFile> file = readSmallFile(p, kFlatYamlLimit);
  std::istringstream in(file ? file->text : std::string());
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == ' ' || line[0] == '-' || line[0] == '#') continue;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    out[line.substr(0, colon)] = yamlScalar(trim(std::string_view(line).substr(colon + 2)));
  }
  return out;
}

}  // namespace ckpt::detail
