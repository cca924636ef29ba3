// Where a workload comes from: a JSON file, a built-in example ("builtin:NAME") or a Chakra trace.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
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

// The input options of the commands that take a workload (simulate, export). A new kind of input
// is a field here, its option in add_workload_input_options() and a branch in
// load_workload_input().
struct WorkloadInput {
  std::string workload;     // --workload FILE|builtin:NAME (default kDefaultWorkload)
  std::string chakra;       // --chakra PREFIX: PREFIX.<rank>.et
  std::string comm_groups;  // --comm-groups FILE (with --chakra)
};

// Declares --workload (with its default), --chakra and --comm-groups.
void add_workload_input_options(boost::program_options::options_description& desc,
                                WorkloadInput& in);

// Loads the input the command line chose (the default built-in when it chose none).
// boost::program_options::error for contradictory options, lagom::Error for bad input. With
// --chakra and no --comm-groups, PREFIX.comm_groups.json is used when it exists.
LoadedWorkload load_workload_input(const WorkloadInput& in,
                                   const boost::program_options::variables_map& vm);

}  // namespace lagom::cli
