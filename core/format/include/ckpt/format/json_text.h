#pragma once
// JSON text back into a tree, the exact inverse of dumpJson (json_export.h):
// a `\udcXY` escape (Python's surrogateescape, how dumpJson writes a byte
// that starts no valid UTF-8 sequence) becomes the byte 0xXY again, so a
// name read on another machine is the same bytes here. nlohmann's parser
// rejects such an escape. Numbers keep their kind (unsigned, signed,
// float), so dumpJson of the result prints the same text. For the agent's
// JSON lines (core/remote) and every JSON file we write with dumpJson and
// read back (a branch's lineage.json).

#include <nlohmann/json.hpp>
#include <string_view>

namespace ckpt {

// Throws std::runtime_error naming the byte offset of what is wrong.
// Nesting deeper than 512 levels is refused (a hostile line cannot
// overflow the stack).
nlohmann::ordered_json parseJsonText(std::string_view text);

}  // namespace ckpt
