#pragma once
// The YAML that yaml.safe_dump (PyYAML, default_flow_style=False) and Go's
// gopkg.in/yaml.v3 Marshal write for a tree of plain values (internal): block
// mappings and sequences at any indentation (a sequence in a mapping at the
// key's own indentation, as PyYAML writes it, or deeper, as yaml.v3 does),
// plain / single- / double-quoted scalars (a long one folded over several
// lines), `|` and `>` block scalars, the empty flow collections `[]` and
// `{}` and simple flow sequences of scalars. Scalars resolve as YAML 1.1's
// core schema: null, booleans, integers, floats (.inf, .nan) and strings.
// Anchors, tags and complex keys are not written by either and not read.
// No YAML library: W&B's config.yaml is the one file that needs more than
// flat_yaml.h.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ckpt::detail {

// The document as JSON. What cannot be read ends the reading: `*error` gets
// "line N: why" and what was read before it is returned.
[[nodiscard]] nlohmann::json parseBlockYaml(std::string_view text, std::string* error = nullptr);

}  // namespace ckpt::detail
