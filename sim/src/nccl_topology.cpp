// What NCCL would know about a communicator on one of our clusters.
#include "lagom/sim/nccl_topology.hpp"

#include <algorithm>
#include <array>

namespace lagom::sim {
namespace {

PathType to_nccl(topologies::PathType t) {
  // Both enums carry NCCL's PATH_* values.
  return static_cast<PathType>(static_cast<int>(t));
}

// sm90 intra-node search speeds, GB/s per channel (reference/nccl.md §2.2).
constexpr std::array<double, 11> kSm90Intra = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
constexpr std::array<double, 13> kPreSm90Intra = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};

// NCCL's per-NVLink-link bandwidth constants (src/graph/topo.h; reference/nccl.md §2.2).
double nccl_nvlink_link_GBps(int compcap) {
  if (compcap >= 100) {
    return 40.1;
  }
  if (compcap >= 90) {
    return 20.6;
  }
  if (compcap == 86) {
    return 12.0;
  }
  return 20.0;
}

}  // namespace

NcclCommInfo nccl_comm_info(const topologies::Cluster& cluster,
                            const topologies::CommunicatorInfo& comm) {
  const topologies::ClusterSpec& spec = cluster.spec();
  NcclCommInfo info;
  info.compcap = spec.compute_capability;
  info.nranks = comm.nranks;
  info.nnodes = comm.nnodes;
  info.max_local_ranks = comm.ranks_per_node_max;
  switch (spec.cpu.vendor) {
    case topologies::CpuVendor::kIntel:
      info.cpu_vendor = CpuVendor::kIntel;
      break;
    case topologies::CpuVendor::kAmd:
      info.cpu_vendor = CpuVendor::kAmd;
      break;
    case topologies::CpuVendor::kOther:
      info.cpu_vendor = CpuVendor::kOther;
      break;
  }
  NcclGraphInfo g;
  g.nchannels = std::max(1, comm.nccl.channels);
  g.bw_intra_GBps = comm.nccl.bw_intra_GBps;
  g.bw_inter_GBps = comm.nccl.bw_inter_GBps;
  g.type_intra = to_nccl(comm.nccl.type_intra);
  g.type_inter = to_nccl(comm.nccl.type_inter);
  info.ring = g;
  info.tree = g;

  const bool nvswitch = spec.intra_node.kind == topologies::IntraNodeKind::kNvSwitch;
  info.has_nvswitch = nvswitch;
  info.all_nvlink = comm.nnodes == 1 && comm.intra_path_type == topologies::PathType::kNvl;
  if (comm.nvls_available && spec.intra_node.nvlink) {
    const int heads = std::max(1, comm.ranks_per_node_max);
    const double per_head =
        spec.intra_node.nvlink->links_per_gpu * nccl_nvlink_link_GBps(info.compcap) / heads;
    const auto& ladder = info.compcap >= 90
                             ? std::vector<double>(kSm90Intra.begin(), kSm90Intra.end())
                             : std::vector<double>(kPreSm90Intra.begin(), kPreSm90Intra.end());
    std::size_t i = 0;
    while (i + 1 < ladder.size() && ladder[i] > per_head) {
      ++i;
    }
    info.nvls_support = true;
    info.nvls.nchannels = heads;
    info.nvls.bw_intra_GBps = ladder[i];
    info.nvls.bw_inter_GBps = ladder[i > 0 ? i - 1 : 0];
    info.nvls.type_intra = PathType::kNvl;
    info.nvls.type_inter = g.type_inter;
  }
  apply_nccl_env(spec.nccl_env, info);
  return info;
}

}  // namespace lagom::sim
