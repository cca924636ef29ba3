// Lookup in tables of embedded data files.
#include "lagom/common/embedded.hpp"

#include <algorithm>

namespace lagom {

const EmbeddedFile* find_embedded(std::span<const EmbeddedFile> files, std::string_view name) {
  auto it = std::find_if(files.begin(), files.end(),
                         [&](const EmbeddedFile& f) { return f.name == name; });
  return it == files.end() ? nullptr : &*it;
}

std::vector<std::string_view> embedded_names(std::span<const EmbeddedFile> files,
                                             std::string_view suffix) {
  std::vector<std::string_view> names;
  for (const EmbeddedFile& f : files) {
    std::string_view n = f.name;
    if (n.ends_with(suffix)) {
      n.remove_suffix(suffix.size());
    }
    names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace lagom
