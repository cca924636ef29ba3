// The options every modelling command shares: --cluster, --nodes, --profile.
#pragma once

#include <boost/any.hpp>
#include <boost/program_options/options_description.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/topologies/cluster.hpp"

namespace lagom::cli {

// --nodes as given: 0 when absent, else a whole integer from 1 to topologies::kMaxNodes (the
// option's validator refuses "0", "-1", "2x" and 1e9 with the range in the error).
struct NodeCount {
  int value = 0;
  bool given() const { return value != 0; }
};
// boost::program_options' hook for NodeCount (found by argument-dependent lookup).
void validate(boost::any& out, const std::vector<std::string>& values, NodeCount*, int);

struct HardwareOptions {
  std::string cluster;                // preset name or cluster JSON file
  NodeCount nodes;                    // absent: the cluster's own node count
  std::string profile;                // "" : the built-in profile of the cluster's GPU type
  std::vector<std::string> nccl_env;  // NAME=VALUE, over the cluster file's nccl_env
  std::string nccl_version;           // "2.18" or "2.28", over the cluster file's ("": keep)
  // What-if overrides of cluster and profile fields (docs/whatif.md): PATH=VALUE and
  // PATH=FACTOR; every --set first, then every --scale, each in the order given.
  std::vector<std::string> set;
  std::vector<std::string> scale;
  // Straggler and failure what-ifs (docs/whatif.md, "Stragglers"): GPU=FACTOR, A-B=FACTOR, and
  // node numbers (a generated step drops the data-parallel replicas that use a down node).
  std::vector<std::string> slow_gpu;
  std::vector<std::string> slow_link;
  std::vector<std::string> down_node;
  bool degraded() const { return !slow_gpu.empty() || !slow_link.empty(); }
};

// The what-ifs a command honours; the others are refused (boost::program_options::error) with
// `why`, so that none is accepted and ignored.
struct WhatIfSupport {
  bool slow_gpu = false;
  bool slow_link = false;
  bool down_node = false;
};
void refuse_unsupported_what_ifs(const HardwareOptions& opts, WhatIfSupport supported,
                                 std::string_view why);

// --down-node's node numbers, each checked against `nodes` (sorted, without repeats).
std::vector<int> down_nodes(const HardwareOptions& opts, int nodes);

void add_hardware_options(boost::program_options::options_description& desc, HardwareOptions& opts);
// --nccl-version's check (a usage error naming the versions), for commands that declare it.
void check_nccl_version(const std::string& text);

struct Hardware {
  topologies::Cluster cluster;
  hardware::HardwareProfile profile;
  std::vector<std::string> overrides;  // applied, as written ("--set network.nic_speed_Gbps=800")
};

// The cluster document after --set/--scale (and --nodes in its nodes.count), as `lagom cluster
// --export` writes it: a file load_hardware reads back to the same cluster.
nlohmann::ordered_json overridden_cluster_document(const HardwareOptions& opts);

// Loads the cluster (with --nodes) and the profile; lagom::Error for unknown presets (listing
// the known ones), bad node counts, unreadable or malformed files, or a profile whose GPU type
// differs from the cluster's.
Hardware load_hardware(const HardwareOptions& opts);
// The cluster alone, as load_hardware builds it (every what-if applied), for commands that need
// no hardware profile.
topologies::Cluster load_cluster_with_what_ifs(const HardwareOptions& opts);

}  // namespace lagom::cli
