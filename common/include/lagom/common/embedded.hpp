// Data files compiled into the binary (presets, examples), looked up by name.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace lagom {

struct EmbeddedFile {
  std::string_view name;     // file name, e.g. "dgx-h100.json"
  std::string_view content;  // the bytes, not NUL-terminated in the view
};

// The file called `name` in `files`, or nullptr.
const EmbeddedFile* find_embedded(std::span<const EmbeddedFile> files, std::string_view name);

// The names in `files` without `suffix` (e.g. ".json"), sorted.
std::vector<std::string_view> embedded_names(std::span<const EmbeddedFile> files,
                                             std::string_view suffix);

}  // namespace lagom
