// What the collective cost model needs to know about a communicator's place on the hardware:
// how its ranks spread over nodes, the bandwidth a ring step gets inside a node and across the
// network, which link classes Ring / Tree / NVLS cross and which one limits each, and the inputs
// NCCL's own tuning model takes from its topology search (typeIntra/typeInter, bwIntra/bwInter
// per channel, search channel count; reference/nccl.md §2.2-2.3).
//
// All bandwidths are per GPU and per direction, in GB/s (1e9 B/s), of the physical links in the
// ClusterSpec, except `nccl`, which is in NCCL's own units (see NcclSearchEstimate).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/traffic.hpp"

namespace lagom::topologies {

// The link classes an algorithm's transfers cross and the one that limits it.
//
// First-order model (the collective cost model refines it with measured efficiencies):
// * Ring: each rank sends to the next over the ranks of a node in local-GPU order; one hop per
//   node per ring leaves through a NIC. The per-GPU rate B is limited by the most loaded
//   intra-node link (`CommunicatorInfo::intra_bw_GBps`) and, across nodes, by what a node's NICs
//   carry together (each byte a GPU sends crosses the node boundary once per ring):
//   B <= sum over the node's NICs of min(NIC, its PCIe path).
// * Tree: NCCL's intra-node chain plus a double binary tree between nodes. The chain crosses
//   the same links as the ring; in the double binary tree a node receives and sends about 2S
//   bytes per all-reduce of S, as the ring does, so the first-order limits are the ring's.
// * NVLS: each GPU sends its data to the NVSwitch once and receives the result once, so the
//   limit inside a node is the GPU's NVLink bandwidth to the switch plane; across nodes
//   (NVLSTree) also the node's NICs.
struct AlgorithmPaths {
  bool available = false;
  std::vector<nccl::LinkClass> link_classes;        // sorted, unique; empty if nothing is crossed
  std::optional<nccl::LinkClass> bottleneck_class;  // none when nothing is crossed (one rank)
  double bottleneck_GBps = 0;                       // per GPU per direction; +infinity if none
};

// An estimate of what NCCL's topology search (nccl@v2.28.9-1 src/graph/search.cc,
// ncclTopoCompute, ring pattern) finds for this communicator, in NCCL's own bandwidth units:
// NVLink is NCCL's per-link constant (SM80 20.0, SM86 12.0, SM90 20.6 GB/s) times the link
// count, PCIe is 12 GB/s per x16 Gen3 scaled by generation and width, NICs are Gb/s / 8 (an entry
// of `count` NICs is one device of count x the speed, as aws-ofi-nccl presents them), the CPU
// interconnect is the ClusterSpec's figure (the presets use NCCL's own SMP constants).
//
// It replays the search's control flow (speed ladders of reference/nccl.md §2.2, the 0.49 rule
// for lowering the speed, ncclTopoDupChannels, the second pass that raises the speed) but
// replaces the exhaustive ring search by a fluid count of how many rings fit on the links at a
// given speed. It is an estimate: NCCL's real search can find fewer channels (time-outs, exact
// ring shapes) or more (crossing NICs, PXN). Calibrate against NCCL_DEBUG=INFO lines
// "Pattern 4, crossNic ..., nChannels N, bw X/Y, type T1/T2".
struct NcclSearchEstimate {
  nccl::PathType type_intra = nccl::PathType::kLoc;  // worst GPU-GPU path type a ring uses
  nccl::PathType type_inter =
      nccl::PathType::kPix;  // worst GPU-NIC path type (PIX on one node, as NCCL)
  double bw_intra_GBps = 0;  // per search channel
  double bw_inter_GBps = 0;  // per search channel
  int channels = 0;          // search channels (NCCL then roughly doubles them)
};

struct CommunicatorInfo {
  int nranks = 0;
  int nnodes = 0;
  int ranks_per_node_max = 0;
  int ranks_per_node_min = 0;
  bool uniform = true;  // every node holds the same number of ranks

  // Inside a node: the worst path type between ring neighbours and the bandwidth a ring step
  // gets (the most loaded link when every rank of the node sends to its ring successor at
  // once). LOC and +infinity when every node holds one rank.
  nccl::PathType intra_path_type = nccl::PathType::kLoc;
  double intra_bw_GBps = 0;
  std::optional<nccl::LinkClass> intra_bottleneck_class;

  // Across nodes: per-GPU network bandwidth, min(NIC, the PCIe path to it) divided by the
  // ranks of the communicator that share the NIC (a NIC entry of `count` NICs counts as one NIC
  // of count x the bandwidth), for the worst NIC of any node; the worst path type from a rank to
  // its NIC. 0 and LOC on a single node.
  double inter_bw_GBps = 0;
  std::optional<nccl::LinkClass> inter_bottleneck_class;
  nccl::PathType nic_path_type = nccl::PathType::kLoc;

  bool nvls_available = false;  // NVSwitch with NVLink SHARP and >= 2 ranks on a node

  AlgorithmPaths ring;
  AlgorithmPaths tree;
  AlgorithmPaths nvls;

  NcclSearchEstimate nccl;  // ring pattern; NCCL gives Tree the same channel count

  // Where its algorithms' bytes go, link by link (traffic.hpp); shared by copies.
  std::shared_ptr<const CommunicatorTraffic> traffic;
};

// Describes the communicator made of `ranks` (global ranks, any order). lagom::Error for an
// empty list, more ranks than the cluster has GPUs, a rank outside [0, gpu_count) or a rank
// listed twice.
CommunicatorInfo describe_communicator(const Cluster& cluster, std::span<const int> ranks);

}  // namespace lagom::topologies
