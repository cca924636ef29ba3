// Loading workloads from files, from the examples embedded in the binary, or from Chakra traces.
#include "workload_input.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <optional>

#include "lagom/common/embedded.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/traces/chakra.hpp"
#include "lagom/traces/workload_json.hpp"
#include "memory_budget.hpp"

namespace lagom::cli {
namespace examples {
std::span<const EmbeddedFile> files();
}

namespace po = boost::program_options;

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
    check_workload_file(spec);
    text = traces::read_text_file(spec, "workload file");
  }
  LoadedWorkload out{traces::parse_workload_json(text, spec), spec,
                     "fnv1a64:" + hex64(fnv1a64(text))};
  return out;
}

void add_workload_input_options(po::options_description& desc, WorkloadInput& in) {
  desc.add_options()("workload,w",
                     po::value(&in.workload)->default_value(std::string(kDefaultWorkload)),
                     "workload JSON file (docs/formats/workload.md) or builtin:NAME")(
      "chakra", po::value(&in.chakra),
      "Chakra execution trace: reads PREFIX.0.et, PREFIX.1.et, ... (docs/formats/chakra.md)")(
      "comm-groups", po::value(&in.comm_groups),
      "with --chakra: JSON {\"<pg_name>\": [ranks...]} giving each communicator's ranks "
      "(default: PREFIX.comm_groups.json if it exists)");
}

LoadedWorkload load_workload_input(const WorkloadInput& in, const po::variables_map& vm) {
  const bool workload_given = vm.count("workload") != 0 && !vm["workload"].defaulted();
  if (!in.comm_groups.empty() && in.chakra.empty()) {
    throw po::error("--comm-groups applies to --chakra traces");
  }
  if (!in.chakra.empty()) {
    if (workload_given) {
      throw po::error("--workload and --chakra are alternatives; give one");
    }
    std::optional<std::string> groups;
    if (!in.comm_groups.empty()) {
      groups = in.comm_groups;
    } else if (std::error_code ec;
               std::filesystem::exists(traces::chakra_comm_groups_path(in.chakra), ec)) {
      groups = traces::chakra_comm_groups_path(in.chakra);
    }
    check_chakra_files(traces::chakra_rank_files(in.chakra));
    traces::ChakraReadInfo info;
    traces::Workload w = traces::read_chakra(in.chakra, groups, &info);
    std::uint64_t hash = info.input_hash;
    if (groups) {
      hash = fnv1a64(traces::read_text_file(*groups, "comm-groups file"), hash);
    }
    return LoadedWorkload{std::move(w), in.chakra, "fnv1a64:" + hex64(hash)};
  }
  return load_workload(in.workload.empty() ? std::string(kDefaultWorkload) : in.workload);
}

}  // namespace lagom::cli
