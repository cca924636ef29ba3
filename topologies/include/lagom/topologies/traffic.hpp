// Where a communicator's bytes go on the hardware graph: for each of the communication patterns
// NCCL's algorithms use, the bytes that cross every direction of every physical link per byte of
// the pattern's unit volume (its footprint). The collective model takes its bandwidth limits and
// wire latencies from footprints (sim/collective_model.hpp), and the contention model turns them
// into flows on the same links (sim/resource_contention.hpp), so a collective alone and a
// collective among others see the same hardware.
//
// The patterns (ranks of a node in local-GPU order, nodes in the order the communicator's ranks
// first reach them, as NCCL numbers nodes and chains its inter-node rings; reference/nccl.md
// §1-2):
//  * ring: every rank sends U bytes to its ring successor. On one node the ring is closed inside
//    it. Across nodes each channel's ring runs a chain through a node's GPUs and leaves it
//    through a NIC; NCCL rotates the chain per channel, so averaged over channels each of a
//    node's k closed-ring edges carries (k-1)/k U, and each GPU is the exit (and the entry) of
//    1/k of the traffic to (from) the next node over its own NIC.
//  * network: only the node-to-node part of the ring, U per node each way (Tree, NVLSTree and
//    CollNet between nodes use it with their own volumes; the double binary tree's parents and
//    children are approximated by ring neighbours, which cross the same NICs).
//  * chain: NCCL's intra-node chain of Tree, U up (i -> i+1) and U down (i+1 -> i) on each edge.
//  * tree: NCCL's Tree AllReduce of U bytes: the chain, plus 2(N-1)/N U per node each way
//    between N nodes (network pattern).
//  * nvls: every rank to the NVSwitch and back, U each way on its NVLink ports; nvls_up and
//    nvls_down are its two directions alone (NVLS AllGather multicasts a rank's shard up and
//    receives the others' down; ReduceScatter the other way round).
//  * all_to_all: every rank sends U/n to every other rank (n-1 shares: intra-node pairs by their
//    routes, remote ones through a NIC of the sender's node and the receiver's own NIC).
//  * pair(a, b): U from a to b along Cluster::path.
//  * shift: every rank sends U to the next in communicator order (the pairs of pair()).
// Sends between nodes (all_to_all, pair: NCCL's point-to-point) follow PXN, on by default since
// NCCL 2.12 (NCCL_P2P_PXN_LEVEL 2; off with NCCL_PXN_DISABLE=1 in the cluster's nccl_env): a send
// from local GPU g to a GPU of local index d on another node goes over NVLink to local GPU d
// when d is in the communicator on g's node, reaches g over NVLink and sits at PIX or PXB from
// its NIC, and leaves through d's NIC, so on a rail-optimized fabric it stays on d's rail
// (nccl@v2.28.9 src/graph/search.cc ncclTopoGetNetDev; the receiver uses its own NIC,
// src/transport/net.cc). Rings and trees use the NICs of their channels and are not affected.
//
// Every pattern is computed once, when first asked for (thread-safe), from Cluster routes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "lagom/topologies/cluster.hpp"

namespace lagom::topologies {

// `per_byte` bytes cross link `link` in direction `dir` (0: from Cluster::link(link).a to .b,
// 1: the other way) per byte of the pattern's unit.
struct LinkLoad {
  std::uint32_t link = 0;
  std::uint8_t dir = 0;
  double per_byte = 0;
};

struct Footprint {
  std::vector<LinkLoad> loads;  // sorted by (link, dir), one entry each
  // Per link class: the largest per_byte / bandwidth_GBps over its loads (0 when not crossed).
  // A unit volume of V bytes needs at least V * worst[c] / 1e3 us on class c's links.
  std::array<double, nccl::kLinkClassCount> worst{};
  std::array<double, nccl::kLinkClassCount> worst_per_byte{};  // that link's per_byte
  double intra_latency_us = 0;  // the slowest intra-node hop (sum of its links' latencies)
  double net_latency_us = 0;    // the slowest node-to-node hop, GPU to GPU
  bool crosses_network = false;
};

class CommunicatorTraffic {
 public:
  // `ranks` as for describe_communicator (validated there); the cluster is shared, not copied.
  CommunicatorTraffic(const Cluster& cluster, std::span<const int> ranks);

  const Footprint& ring() const;
  const Footprint& network() const;
  const Footprint& chain() const;
  const Footprint& tree() const;
  const Footprint& nvls() const;
  const Footprint& nvls_up() const;    // GPU -> switch only
  const Footprint& nvls_down() const;  // switch -> GPU only
  const Footprint& all_to_all() const;
  // Every rank sends U to the next in communicator order, the last to the first (nccl-tests'
  // sendrecv), each send on its own path as pair() routes it.
  const Footprint& shift() const;
  // U from `from` to `to` (cluster ranks); not cached.
  Footprint pair(int from, int to) const;

  const Cluster& cluster() const { return cluster_; }
  std::span<const int> ranks() const { return ranks_; }
  int nodes() const { return static_cast<int>(by_node_.size()); }

 private:
  // NCCL's PXN for a send from local GPU g of `node` to a GPU of local index d on another node:
  // the local GPU whose NIC it leaves by (d when PXN applies, else g). See the file comment.
  int send_via(int node, int g, int d) const;
  int send_via(const std::vector<int>& locals, int g, int d) const;  // `node`'s members

  enum Which {
    kRing,
    kNetwork,
    kChain,
    kTree,
    kNvls,
    kNvlsUp,
    kNvlsDown,
    kAllToAll,
    kShift,
    kCount
  };
  const Footprint& get(Which w) const;
  Footprint build(Which w) const;

  Cluster cluster_;
  std::vector<int> ranks_;  // sorted
  bool pxn_ = true;         // NCCL_PXN_DISABLE is not 1 in the cluster's nccl_env
  std::vector<std::pair<int, std::vector<int>>>
      by_node_;  // node -> its local GPUs (sorted), nodes in rank order
  mutable std::array<std::once_flag, kCount> once_;
  mutable std::array<Footprint, kCount> cache_;
};

}  // namespace lagom::topologies
