// Loading workloads from files or from the examples embedded in the binary.
#include "workload_input.hpp"

#include <fmt/format.h>

#include "lagom/common/embedded.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/traces/workload_json.hpp"

namespace lagom::cli {
namespace examples {
std::span<const EmbeddedFile> files();
}

std::vector<std::string> builtin_workloads() {
  std::vector<std::string> out;
  for (std::string_view n : embedded_names(examples::files(), ".json")) {
    out.emplace_back(n);
  }
  return out;
}

LoadedWorkload load_workload(const std::string& spec) {
  std::string text;
  if (spec.starts_with("builtin:")) {
    const std::string name = spec.substr(8);
    const EmbeddedFile* f = find_embedded(examples::files(), name + ".json");
    if (f == nullptr) {
      throw Error(fmt::format("unknown built-in workload '{}' (known: {})", name,
                              fmt::join(builtin_workloads(), ", ")));
    }
    text = std::string(f->content);
  } else {
    text = traces::read_text_file(spec, "workload file");
  }
  LoadedWorkload out{traces::parse_workload_json(text, spec), spec,
                     "fnv1a64:" + hex64(fnv1a64(text))};
  return out;
}

}  // namespace lagom::cli
