// --cluster / --nodes / --profile, shared by the modelling commands.
#include "hardware_options.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>

#include "lagom/common/error.hpp"
#include "lagom/nccl/env.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

void add_hardware_options(po::options_description& desc, HardwareOptions& opts) {
  desc.add_options()(
      "cluster", po::value(&opts.cluster),
      "cluster preset (dgx-h100, hgx-h200, dgx-a100, a40-nvlink, a40-pcie, ...; `lagom "
      "cluster --list`) or cluster JSON file")(
      "nodes", po::value(&opts.nodes), "number of nodes (default: the cluster's, 1 for presets)")(
      "profile", po::value(&opts.profile),
      "hardware profile: built-in name (h100-sxm, ...) or JSON file (default: the built-in "
      "profile of the cluster's GPU type)")(
      "nccl-env", po::value(&opts.nccl_env)->composing(),
      "NAME=VALUE: an NCCL environment variable the job runs with, e.g. NCCL_MIN_CTAS=8 "
      "(repeatable; over the cluster file's nccl_env; docs/models.md §2)");
}

Hardware load_hardware(const HardwareOptions& opts) {
  if (opts.cluster.empty()) {
    throw Error("--cluster is required (a preset such as dgx-h100, or a cluster JSON file)");
  }
  std::optional<int> nodes;
  if (opts.nodes != 0) {
    if (opts.nodes < 1) {
      throw Error(fmt::format("--nodes must be at least 1, got {}", opts.nodes));
    }
    nodes = opts.nodes;
  }
  topologies::Cluster cluster = topologies::load_cluster(opts.cluster, nodes);
  if (!opts.nccl_env.empty()) {
    topologies::ClusterSpec spec = cluster.spec();
    for (const std::string& kv : opts.nccl_env) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw Error(fmt::format("--nccl-env '{}': expected NAME=VALUE", kv));
      }
      spec.nccl_env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    cluster = topologies::Cluster(std::move(spec));
  }
  {
    nccl::CommInfo check;  // names and values are checked here, before any modelling
    try {
      nccl::apply_env(cluster.spec().nccl_env, check);
    } catch (const Error& e) {
      throw Error(fmt::format("cluster '{}': {}", cluster.name(), e.what()));
    }
  }
  hardware::HardwareProfile profile =
      opts.profile.empty() ? hardware::default_profile_for_gpu(cluster.spec().gpu_type)
                           : hardware::load_profile(opts.profile);
  if (profile.gpu_type != cluster.spec().gpu_type) {
    throw Error(fmt::format("profile '{}' describes {} GPUs but cluster '{}' has {}",
                            profile.origin, profile.gpu_type, cluster.name(),
                            cluster.spec().gpu_type));
  }
  return Hardware{std::move(cluster), std::move(profile)};
}

}  // namespace lagom::cli
