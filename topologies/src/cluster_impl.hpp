// Internal: the Boost graph behind lagom::topologies::Cluster and the per-node route table.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <vector>

#include "lagom/topologies/cluster.hpp"

namespace lagom::topologies {

namespace internal {

struct VertexProps {
  Endpoint endpoint;
};

struct EdgeProps {
  std::size_t id = 0;
  nccl::LinkClass link_class = nccl::LinkClass::kPcie;
  double bandwidth_GBps = 0;  // physical, per direction
  double latency_us = 0;
  int count = 1;
  double nccl_bw_GBps = 0;  // the same link in NCCL's topology units (communicator.hpp)
};

using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexProps, EdgeProps>;

// A route inside one node, in node-local numbering (node n's vertex v is n * vertices_per_node
// + v, its edge e is n * edges_per_node + e).
struct LocalRoute {
  std::vector<std::size_t> vertices;  // from source to destination, both included
  std::vector<std::size_t> edges;     // edges[k] joins vertices[k] and vertices[k + 1]
  nccl::PathType type = nccl::PathType::kLoc;
  double bottleneck_GBps = 0;  // +infinity when empty
  bool reachable = false;
};

// A network switch and its uplinks (link id, parent switch index, cables in the bundle).
struct NetSwitch {
  std::size_t vertex = 0;
  int pod = 0;  // leaves and spines: their pod; cores: -1
  struct Up {
    std::size_t link = 0;
    int parent = 0;
    int cables = 1;
  };
  std::vector<Up> up;
  int up_cables = 0;  // the sum over `up`
};

// One fabric link a transfer crosses, with the share of its bytes that takes it (ECMP).
struct FabricHop {
  std::size_t link = 0;
  std::size_t from = 0;  // global vertex it leaves
  std::size_t to = 0;
  double share = 1.0;
  int stage = 0;  // uplink stage, 1: leaf -> spine, 2: spine -> core
};

}  // namespace internal

struct Cluster::Impl {
  ClusterSpec spec;
  internal::Graph graph;
  std::vector<internal::Graph::edge_descriptor> edges;  // by link id

  std::size_t vertices_per_node = 0;
  std::size_t edges_per_node = 0;
  // Node-local vertex numbers.
  std::vector<std::size_t> gpu_vertex;  // per local GPU
  std::vector<std::size_t> nic_vertex;  // per NIC
  std::vector<int> nic_of_gpu;          // per local GPU; -1 without NICs
  // Network: the link id of node n's NIC i is nic_link_base + n * nics + i. The switches,
  // leaves first (a single switch is leaf 0; a rail-optimized fabric's leaf r is rail r, then
  // the spine); leaf_of_nic[n * nics + i] is the leaf NIC i of node n hangs off.
  std::size_t nic_link_base = 0;
  std::vector<internal::NetSwitch> switches;
  std::vector<int> leaf_of_nic;
  int fabric_tiers = 1;  // 1: single switch; 2: leaves and spine(s); 3: and cores

  // Node `node`'s NIC `nic`: its vertex (global numbering) and the link to its leaf.
  std::size_t nic_vertex_of(int node, int nic) const {
    return static_cast<std::size_t>(node) * vertices_per_node +
           nic_vertex[static_cast<std::size_t>(nic)];
  }
  std::size_t nic_link(int node, int nic) const {
    return nic_link_base + static_cast<std::size_t>(node) * spec.network.nics.size() +
           static_cast<std::size_t>(nic);
  }
  int leaf_of(int node, int nic) const {
    return leaf_of_nic[static_cast<std::size_t>(node) * spec.network.nics.size() +
                       static_cast<std::size_t>(nic)];
  }
  // Uplink stages a transfer from leaf a to leaf b climbs: 0 on one leaf, 1 through the spines,
  // 2 through the cores (different pods of a 3-tier fat-tree).
  int stages_between(int leaf_a, int leaf_b) const;
  // The uplinks `stages` stages up from `leaf`, each with the share of the leaf's upward bytes
  // that takes it: ECMP splits at every switch over its uplinks in proportion to their cables.
  // Appends in stage order, then link id order. With `down`, the same links in the other
  // direction (what comes down to the leaf from that height; the fabric is cabled alike at every
  // switch of a tier, so that is the mirror of the spread up).
  void up_spread(int leaf, int stages, bool down, std::vector<internal::FabricHop>& out) const;
  // The fabric links between two leaves, in travel order of stages, with their ECMP shares.
  void fabric_route(int leaf_a, int leaf_b, std::vector<internal::FabricHop>& out) const;

  // Per GPU: ClusterSpec::slow_gpus' factors; empty when none is slow.
  std::vector<double> compute_slowdown;

  // routes[src][dst] for every pair of node-local vertices.
  std::vector<std::vector<internal::LocalRoute>> routes;

  const internal::EdgeProps& edge(std::size_t id) const { return graph[edges[id]]; }
  const internal::LocalRoute& route(std::size_t src, std::size_t dst) const {
    return routes[src][dst];
  }
};

}  // namespace lagom::topologies
