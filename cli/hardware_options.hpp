// The options every modelling command shares: --cluster, --nodes, --profile.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/topologies/cluster.hpp"

namespace lagom::cli {

struct HardwareOptions {
  std::string cluster;                // preset name or cluster JSON file
  int nodes = 0;                      // 0: the cluster's own node count
  std::string profile;                // "" : the built-in profile of the cluster's GPU type
  std::vector<std::string> nccl_env;  // NAME=VALUE, over the cluster file's nccl_env
};

void add_hardware_options(boost::program_options::options_description& desc, HardwareOptions& opts);

struct Hardware {
  topologies::Cluster cluster;
  hardware::HardwareProfile profile;
};

// Loads the cluster (with --nodes) and the profile; lagom::Error for unknown presets (listing
// the known ones), bad node counts, unreadable or malformed files, or a profile whose GPU type
// differs from the cluster's.
Hardware load_hardware(const HardwareOptions& opts);

}  // namespace lagom::cli
