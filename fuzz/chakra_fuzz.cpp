// Fuzzes the Chakra ET reader (docs/formats/chakra.md) with a comm-groups file. One input is a
// set: parts separated by "@@LAGOM@@", the first the comm-groups JSON (empty: none), the rest
// the rank files PREFIX.0.et, PREFIX.1.et, ... (at most 4). A plain input is rank 0's file
// alone. The reader takes paths, so the parts are chakra_text to a per-process scratch directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/traces/chakra.hpp"
#include "lagom/traces/execution_graph.hpp"

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kChakraPartSeparator = "@@LAGOM@@";
constexpr std::size_t kChakraMaxRanks = 4;

const fs::path& chakra_scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("lagom-chakra-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

void chakra_put(const fs::path& p, std::string_view bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int lagom::fuzz::chakra(const std::uint8_t* data, std::size_t size) {
  std::string_view text = lagom::fuzz::text_of(data, size);
  std::vector<std::string_view> parts;
  for (std::size_t at; (at = text.find(kChakraPartSeparator)) != std::string_view::npos;) {
    parts.push_back(text.substr(0, at));
    text.remove_prefix(at + kChakraPartSeparator.size());
  }
  parts.push_back(text);
  std::optional<std::string> groups;
  if (parts.size() > 1) {
    if (!parts.front().empty()) {
      groups = (chakra_scratch() / "set.comm_groups.json").string();
      chakra_put(*groups, parts.front());
    }
    parts.erase(parts.begin());
  }
  if (parts.size() > kChakraMaxRanks) {
    parts.resize(kChakraMaxRanks);
  }
  const std::string prefix = (chakra_scratch() / "set").string();
  for (std::size_t r = 0; r < kChakraMaxRanks; ++r) {
    const fs::path p = prefix + "." + std::to_string(r) + ".et";
    if (r < parts.size()) {
      chakra_put(p, parts[r]);
    } else {
      std::error_code ignored;
      fs::remove(p, ignored);
    }
  }
  return lagom::fuzz::guarded([&] {
    const lagom::traces::Workload w = lagom::traces::read_chakra(prefix, groups);
    (void)lagom::traces::analyze(w, "fuzz");
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::chakra)
