// Where a workload comes from: a file path, or a built-in example ("builtin:NAME").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lagom/traces/workload.hpp"

namespace lagom::cli {

inline constexpr std::string_view kDefaultWorkload = "builtin:fsdp-4gpu";

struct LoadedWorkload {
  traces::Workload workload;
  std::string source;      // what the user passed
  std::string input_hash;  // "fnv1a64:<16 hex>" of the bytes read
};

// Throws lagom::Error for a missing file, an unknown built-in (listing the known ones) or a
// malformed document.
LoadedWorkload load_workload(const std::string& spec);

// Names of the built-in example workloads ("fsdp-4gpu", ...).
std::vector<std::string> builtin_workloads();

}  // namespace lagom::cli
