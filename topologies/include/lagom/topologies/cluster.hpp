// A Cluster: the hardware graph built from a ClusterSpec (GPUs, NVSwitch planes, PCIe switches,
// CPU sockets, NICs, network switches; links with class, per-direction bandwidth and latency)
// and the queries the simulator asks of it: where a rank lives and which links a transfer
// between two ranks crosses.
//
// Path types follow NCCL's topology code (nccl@v2.28.9-1 src/graph/topo.h; reference/nccl.md
// §1-2): LOC same GPU, NVL over NVLink (directly or through an NVSwitch), PIX through one PCIe
// switch, PXB through several PCIe switches without a CPU, PHB through a CPU's host bridge, SYS
// across the CPU interconnect, NET across the network. Lower is better; the numeric values are
// NCCL's, so `static_cast<int>(t)` can be compared with NCCL's logs.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/nccl/topo.hpp"
#include "lagom/topologies/cluster_spec.hpp"

namespace lagom::topologies {

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kCpu, kNic, kNetworkSwitch };

// One vertex of the graph. `index` is the local GPU, NIC, socket or switch number within the
// node. Network switches have a negative `node`: -1 for leaves (index: the leaf, which on a
// rail-optimized fabric is its rail) and for the spine of a rail-optimized fabric or the single
// switch (index -1); on a fat-tree -2 for spines and -3 for cores (index: the spine or core).
struct Endpoint {
  VertexKind kind = VertexKind::kGpu;
  int node = -1;
  int index = -1;
  auto operator<=>(const Endpoint&) const = default;
};

// One physical link (or a bundle of `count` identical links, e.g. 18 NVLinks to the switch
// plane). Links are full duplex: `bandwidth_GBps` is available in each direction.
struct Link {
  std::size_t id = 0;
  Endpoint a;
  Endpoint b;
  nccl::LinkClass link_class = nccl::LinkClass::kPcie;
  double bandwidth_GBps = 0;  // per direction, all `count` links together
  double latency_us = 0;
  int count = 1;
};

// One link as a transfer crosses it, in the direction of travel.
struct Hop {
  std::size_t link_id = 0;
  Endpoint from;
  Endpoint to;
  nccl::LinkClass link_class = nccl::LinkClass::kPcie;
  double bandwidth_GBps = 0;
  double latency_us = 0;
  // The fraction of the transfer's bytes that cross this link: 1, except on a fabric's
  // equal-cost uplinks, where ECMP spreads the bytes over them in proportion to their cables.
  double share = 1.0;
};

struct CommunicatorInfo;  // communicator.hpp

struct GpuLocation {
  int node = 0;
  int local = 0;  // GPU index within its node
};

// On a fabric with several equal-cost routes (a fat-tree's spines and cores) a path lists every
// link of every one of them, stage by stage, each hop with the share of the bytes it carries.
struct Path {
  int from_rank = 0;
  int to_rank = 0;
  nccl::PathType type = nccl::PathType::kLoc;
  std::vector<Hop> hops;       // in order from `from_rank` to `to_rank`; empty for LOC
  double bottleneck_GBps = 0;  // min over hops of bandwidth / share; +infinity for LOC
  std::optional<nccl::LinkClass> bottleneck_class;  // the class of the slowest hop; none for LOC
  double latency_us = 0;  // sum over hops of latency x share (one route's latency)
};

class Cluster {
 public:
  // Validates `spec` (lagom::Error if it is inconsistent) and builds the graph.
  explicit Cluster(ClusterSpec spec);
  ~Cluster();
  Cluster(const Cluster&);
  Cluster& operator=(const Cluster&);
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;

  const ClusterSpec& spec() const;
  const std::string& name() const { return spec().name; }
  int nodes() const { return spec().nodes; }
  int gpus_per_node() const { return spec().gpus_per_node; }
  int gpu_count() const { return spec().gpu_count(); }

  // Rank r lives on node r / gpus_per_node, local GPU r % gpus_per_node. lagom::Error if r is
  // not a rank of this cluster.
  GpuLocation locate(int rank) const;

  // The links a transfer from rank `a` to rank `b` crosses, its NCCL path type and bottleneck.
  // Inside a node the path is the one with the fewest hops (then the widest), never forwarded
  // through another GPU; across nodes it is GPU -> its NIC -> fabric -> the peer's NIC -> GPU.
  Path path(int a, int b) const;

  // The whole graph, for reports and tests. Vertices and links are numbered densely.
  std::size_t vertex_count() const;
  std::size_t link_count() const;
  Endpoint vertex(std::size_t v) const;
  Link link(std::size_t id) const;

  // A readable name: "node0/gpu3", "node0/pcie:sw2", "node1/nic0", "leaf3", "spine", "switch".
  std::string name_of(const Endpoint& e) const;

  // How many times longer GPU `gpu`'s compute kernels take than the profile says: the spec's
  // slow_gpus factor, else 1.
  double compute_slowdown(int gpu) const;

  // The NIC (local index) that carries local GPU `local`'s inter-node traffic; lagom::Error if
  // the cluster has no NICs.
  int nic_of(int local) const;

  struct Impl;  // internal (topologies/src/cluster_impl.hpp)

 private:
  friend CommunicatorInfo describe_communicator(const Cluster& cluster, std::span<const int> ranks);
  friend class CommunicatorTraffic;
  void apply_slow_parts(Impl& m) const;  // ClusterSpec::slow_gpus and slow_links
  std::shared_ptr<const Impl> impl_;     // immutable once built, so copies share it
};

// load_cluster_spec() + Cluster(spec): a preset name or a file, with an optional node count.
Cluster load_cluster(std::string_view name_or_path, std::optional<int> nodes = {});

// Whether every GPU of a node sees the hardware alike, so that identical work placed on any of
// them behaves identically (what makes a folded step's mirrors exact, models/ fold_tp): ""
// when it does, else which two local GPUs differ and how. A GPU's view: its paths to the
// node's other GPUs (as a multiset of hop sequences: class, bandwidth, latency), and, on more
// than one node, its path to the same GPU of the next node with, on each hop, how many of the
// node's GPUs' such paths cross that link (NIC and PCIe switch sharing).
std::string gpus_differ(const Cluster& cluster);

// Whether two sets of cluster GPUs have a node in common (a folded communicator's instance and a
// mirror that can share its NVLink, PCIe or NIC).
bool share_a_node(const Cluster& cluster, std::span<const std::uint32_t> a,
                  std::span<const std::uint32_t> b);

std::string_view to_string(VertexKind kind);  // "gpu", "nvswitch", ...
std::string describe(const Endpoint& e);      // "node0/gpu3", "node1/nic0", "leaf2", "core-switch"

}  // namespace lagom::topologies
