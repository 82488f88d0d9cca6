#pragma once
// What the config tests (tst_config, tst_batch_split) share: a small valid
// model section and the QTest data types their tables carry.

#include <QMetaType>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ckpt::test {

using Fields = std::vector<std::string>;  // the fields a ConfigError names

// MODEL.md's required fields, small: every rule across model fields holds.
inline nlohmann::ordered_json smallModel() {
  return nlohmann::ordered_json::parse(
      R"({"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "ffn_hidden_size": 80,
          "max_seq_len": 32})");
}

}  // namespace ckpt::test

Q_DECLARE_METATYPE(std::string)
Q_DECLARE_METATYPE(ckpt::test::Fields)
