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
  // Network: the link id of node n's NIC i is nic_link_base + n * nics + i; on a rail-optimized
  // fabric the link from leaf r to the spine is spine_link_base + r.
  std::size_t nic_link_base = 0;
  std::size_t spine_link_base = 0;

  // Per GPU: ClusterSpec::slow_gpus' factors; empty when none is slow.
  std::vector<double> compute_slowdown;

  // routes[src][dst] for every pair of node-local vertices.
  std::vector<std::vector<internal::LocalRoute>> routes;

  const internal::EdgeProps& edge(std::size_t id) const { return graph[edges[id]]; }
  const internal::LocalRoute& route(std::size_t src, std::size_t dst) const {
    return routes[src][dst];
  }
  // The network links between NIC `nic_a` of node `node_a` and NIC `nic_b` of node `node_b`,
  // with the vertices they pass (global numbering), in travel order.
  void network_route(int node_a, int nic_a, int node_b, int nic_b,
                     std::vector<std::size_t>& vertices, std::vector<std::size_t>& links) const;
};

}  // namespace lagom::topologies
