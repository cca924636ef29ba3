// What NCCL would know about a communicator on one of our clusters.
#include "lagom/topologies/nccl_comm_info.hpp"

#include <algorithm>
#include <span>

#include "lagom/nccl/env.hpp"
#include "lagom/nccl/topo.hpp"

namespace lagom::topologies {

nccl::CommInfo nccl_comm_info(const Cluster& cluster, const CommunicatorInfo& comm) {
  const ClusterSpec& spec = cluster.spec();
  nccl::CommInfo info;
  info.version = spec.nccl_version;
  info.compcap = spec.compute_capability;
  info.nranks = comm.nranks;
  info.nnodes = comm.nnodes;
  info.max_local_ranks = comm.ranks_per_node_max;
  info.cpu_vendor = spec.cpu.vendor;
  nccl::GraphInfo g;
  g.nchannels = std::max(1, comm.nccl.channels);
  g.bw_intra_GBps = comm.nccl.bw_intra_GBps;
  g.bw_inter_GBps = comm.nccl.bw_inter_GBps;
  g.type_intra = comm.nccl.type_intra;
  g.type_inter = comm.nccl.type_inter;
  info.ring = g;
  info.tree = g;

  const bool nvswitch = spec.intra_node.kind == IntraNodeKind::kNvSwitch;
  info.has_nvswitch = nvswitch;
  info.all_nvlink = comm.nnodes == 1 && comm.intra_path_type == nccl::PathType::kNvl;
  if (comm.nvls_available && spec.intra_node.nvlink) {
    const int heads = std::max(1, comm.ranks_per_node_max);
    const double per_head =
        spec.intra_node.nvlink->links_per_gpu * nccl::nvlink_bw(info.compcap, info.version) / heads;
    const std::span<const double> ladder =
        nccl::speed_ladder(info.compcap, /*inter=*/false, info.version);
    std::size_t i = 0;
    while (i + 1 < ladder.size() && ladder[i] > per_head) {
      ++i;
    }
    info.nvls_support = true;
    info.nvls.nchannels = heads;
    info.nvls.bw_intra_GBps = ladder[i];
    // 2.28's second search pass raises an NVLS graph's bwInter one speed; 2.18.3's never does (it
    // raises bwIntra only, and keeps an NVLS graph only for more channels).
    info.nvls.bw_inter_GBps =
        info.version == nccl::Version::k2_18 ? ladder[i] : ladder[i > 0 ? i - 1 : 0];
    info.nvls.type_intra = nccl::PathType::kNvl;
    info.nvls.type_inter = g.type_inter;
  }
  nccl::apply_env(spec.nccl_env, info);
  return info;
}

}  // namespace lagom::topologies
