// Footprints of communication patterns on the hardware graph, each expectation worked out from
// the preset's links (docs/formats/cluster.md) and the pattern's definition (traffic.hpp).
#include "lagom/topologies/traffic.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"

namespace lagom::topologies {
namespace {

std::vector<int> all_ranks(const Cluster& c) {
  std::vector<int> r(static_cast<std::size_t>(c.gpu_count()));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

// The load on the direction of `link` that leaves endpoint `from` (0 when not crossed).
double load_from(const Cluster& c, const Footprint& f, std::size_t link, const Endpoint& from) {
  const int dir = c.link(link).a == from ? 0 : 1;
  for (const LinkLoad& l : f.loads) {
    if (l.link == link && l.dir == dir) {
      return l.per_byte;
    }
  }
  return 0;
}

// Sum of the loads on links of class `cls` leaving vertices of kind `from_kind`.
double total_leaving(const Cluster& c, const Footprint& f, nccl::LinkClass cls,
                     VertexKind from_kind) {
  double sum = 0;
  for (const LinkLoad& l : f.loads) {
    const Link link = c.link(l.link);
    const Endpoint& from = l.dir == 0 ? link.a : link.b;
    if (link.link_class == cls && from.kind == from_kind) {
      sum += l.per_byte;
    }
  }
  return sum;
}

std::size_t nvlink_port(const Cluster& c, int node, int gpu) {
  for (std::size_t id = 0; id < c.link_count(); ++id) {
    const Link l = c.link(id);
    if (l.link_class == nccl::LinkClass::kNvlink && l.a == Endpoint{VertexKind::kGpu, node, gpu}) {
      return id;
    }
  }
  ADD_FAILURE() << "no NVLink port for node " << node << " gpu " << gpu;
  return 0;
}

TEST(Traffic, RingOnAnNvSwitchNodeCrossesEachPortOnceEachWay) {
  // 8 GPUs, closed ring: GPU i sends U to i+1 through the switch, so each GPU's port carries U
  // up (its own send) and U down (its predecessor's). The binding link is a 450 GB/s port:
  // worst[nvlink] = 1 / 450. Wire latency of a hop: two NVLink links of 0.3 us.
  const Cluster c = load_cluster("dgx-h100", 1);
  const auto ranks = all_ranks(c);
  const CommunicatorTraffic t(c, ranks);
  const Footprint& f = t.ring();
  for (int g = 0; g < 8; ++g) {
    const std::size_t port = nvlink_port(c, 0, g);
    EXPECT_DOUBLE_EQ(load_from(c, f, port, {VertexKind::kGpu, 0, g}), 1.0) << g;
    EXPECT_DOUBLE_EQ(load_from(c, f, port, {VertexKind::kNvSwitch, 0, 0}), 1.0) << g;
  }
  EXPECT_DOUBLE_EQ(f.worst[static_cast<int>(nccl::LinkClass::kNvlink)], 1.0 / 450.0);
  EXPECT_DOUBLE_EQ(f.worst[static_cast<int>(nccl::LinkClass::kNetwork)], 0.0);
  EXPECT_DOUBLE_EQ(f.intra_latency_us, 0.6);
  EXPECT_FALSE(f.crosses_network);
}

TEST(Traffic, RingOnTheA40HostCrossesTheSocketLinkOnceEachWay) {
  // a40-nvlink: GPUs 0-3 on socket 0, 4-7 on socket 1. Ring 0..7: hop 3 -> 4 crosses xGMI
  // from cpu0 to cpu1, hop 7 -> 0 from cpu1 to cpu0: one U each way on a 16 GB/s link, the
  // narrowest (worst[cpu-interconnect] = 1/16). The bridged hops (0->1, 2->3, ...) are NVLink.
  const Cluster c = load_cluster("a40-nvlink", 1);
  const auto ranks = all_ranks(c);
  const CommunicatorTraffic t_f(c, ranks);
  const Footprint& f = t_f.ring();
  EXPECT_DOUBLE_EQ(f.worst[static_cast<int>(nccl::LinkClass::kCpuInterconnect)], 1.0 / 16.0);
  EXPECT_DOUBLE_EQ(total_leaving(c, f, nccl::LinkClass::kCpuInterconnect, VertexKind::kCpu), 2.0);
  EXPECT_DOUBLE_EQ(total_leaving(c, f, nccl::LinkClass::kNvlink, VertexKind::kGpu), 4.0);
  // The slowest hop's wire: GPU-cpu-xGMI-cpu-GPU = 2 PCIe links of 0.25 + 0.5.
  EXPECT_DOUBLE_EQ(f.intra_latency_us, 1.0);
}

TEST(Traffic, RingAcrossNodesLeavesEachNodeOnceThroughAllItsNics) {
  // 2 dgx-h100 nodes, 16 ranks. Per node the ring's U leaves through the 8 NICs, 1/8 each (every
  // GPU is the exit of 1/8 of the channels, over its own NIC, to the same rail of the next node):
  // the NIC links carry U/8 out and U/8 in, worst[network] = (1/8) / 50 = 1/400, the 400 GB/s
  // ring rate `lagom cluster` reports. Each intra-node ring edge is in 7 of 8 rotations: 7/8.
  const Cluster c = load_cluster("dgx-h100", 2);
  const auto ranks = all_ranks(c);
  const CommunicatorTraffic t_f(c, ranks);
  const Footprint& f = t_f.ring();
  EXPECT_DOUBLE_EQ(total_leaving(c, f, nccl::LinkClass::kNetwork, VertexKind::kNic),
                   2.0);  // 2 nodes
  EXPECT_DOUBLE_EQ(f.worst[static_cast<int>(nccl::LinkClass::kNetwork)], 1.0 / 400.0);
  const std::size_t port = nvlink_port(c, 1, 3);
  EXPECT_DOUBLE_EQ(load_from(c, f, port, {VertexKind::kGpu, 1, 3}), 7.0 / 8.0);
  EXPECT_TRUE(f.crosses_network);
  // Same rail on both sides: no leaf-to-spine link is crossed.
  for (const LinkLoad& l : f.loads) {
    const Link link = c.link(l.link);
    EXPECT_FALSE(link.a.kind == VertexKind::kNetworkSwitch &&
                 link.b.kind == VertexKind::kNetworkSwitch);
  }
  // GPU -> PCIe switch -> NIC -> leaf -> NIC -> PCIe switch -> GPU: 4 x 0.25 + 2 x 0.5.
  EXPECT_DOUBLE_EQ(f.net_latency_us, 2.0);
  // network() is the same node-to-node part alone.
  const CommunicatorTraffic t_n(c, ranks);
  const Footprint& n = t_n.network();
  EXPECT_DOUBLE_EQ(total_leaving(c, n, nccl::LinkClass::kNetwork, VertexKind::kNic), 2.0);
  EXPECT_DOUBLE_EQ(n.worst[static_cast<int>(nccl::LinkClass::kNvlink)], 0.0);
}

TEST(Traffic, SharedNicsCarryTheirGpusTogether) {
  // 2 a40-pcie nodes: one NIC per node serves all 8 GPUs, so its link carries the node's whole U
  // each way (worst[network] = 1 / 12.5 for a 100 Gb/s NIC).
  const Cluster c = load_cluster("a40-pcie", 2);
  const auto ranks = all_ranks(c);
  const CommunicatorTraffic t_f(c, ranks);
  const Footprint& f = t_f.network();
  EXPECT_DOUBLE_EQ(f.worst[static_cast<int>(nccl::LinkClass::kNetwork)], 1.0 / 12.5);
  EXPECT_DOUBLE_EQ(total_leaving(c, f, nccl::LinkClass::kNetwork, VertexKind::kNic), 2.0);
}

TEST(Traffic, TreeChainRunsUpAndDown) {
  // Chain 0-1-...-7 on one dgx-h100 node: edge i -> i+1 carries U up and i+1 -> i U down, so
  // inner GPUs' ports carry 2U each way (their two chain edges) and the ends U.
  const Cluster c = load_cluster("dgx-h100", 1);
  const auto ranks = all_ranks(c);
  const CommunicatorTraffic t_f(c, ranks);
  const Footprint& f = t_f.chain();
  EXPECT_DOUBLE_EQ(load_from(c, f, nvlink_port(c, 0, 0), {VertexKind::kGpu, 0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(load_from(c, f, nvlink_port(c, 0, 3), {VertexKind::kGpu, 0, 3}), 2.0);
  EXPECT_DOUBLE_EQ(f.worst[static_cast<int>(nccl::LinkClass::kNvlink)], 2.0 / 450.0);
}

TEST(Traffic, NvlsUsesEachPortOnceEachWay) {
  const Cluster c = load_cluster("dgx-h100", 1);
  const auto ranks = all_ranks(c);
  const CommunicatorTraffic t_f(c, ranks);
  const Footprint& f = t_f.nvls();
  EXPECT_EQ(f.loads.size(), 16u);
  for (const LinkLoad& l : f.loads) {
    EXPECT_DOUBLE_EQ(l.per_byte, 1.0);
  }
  EXPECT_DOUBLE_EQ(f.intra_latency_us, 0.3);
}

TEST(Traffic, AllToAllSendsAShareToEveryRank) {
  // 16 ranks on 2 dgx-h100 nodes, U per rank split in 16 shares of U/16. Inside a node a GPU
  // sends 7 shares up its NVLink port. 8 shares go to the other node: with PXN (NCCL's default)
  // the share for remote GPU d leaves through local GPU d's NIC, reached over NVLink, so GPU 2's
  // port also carries its 7 shares for the other rails up (7/16 + 7/16), and down the 7 shares
  // the other local GPUs send through GPU 2's NIC. Every NIC carries 8 shares each way (1/2),
  // and nothing crosses rails: the leaf-to-spine links carry nothing.
  const Cluster c = load_cluster("dgx-h100", 2);
  const auto ranks = all_ranks(c);
  const CommunicatorTraffic t_f(c, ranks);
  const Footprint& f = t_f.all_to_all();
  EXPECT_DOUBLE_EQ(load_from(c, f, nvlink_port(c, 0, 2), {VertexKind::kGpu, 0, 2}), 14.0 / 16.0);
  EXPECT_DOUBLE_EQ(load_from(c, f, nvlink_port(c, 0, 2), {VertexKind::kNvSwitch, 0, 0}),
                   14.0 / 16.0);
  EXPECT_DOUBLE_EQ(total_leaving(c, f, nccl::LinkClass::kNetwork, VertexKind::kNic), 16 * 0.5);
  for (const LinkLoad& l : f.loads) {
    const Link link = c.link(l.link);
    EXPECT_FALSE(link.a.kind == VertexKind::kNetworkSwitch &&
                 link.b.kind == VertexKind::kNetworkSwitch)
        << "a share crossed rails";
  }
  // Without PXN (NCCL_PXN_DISABLE=1) each GPU sends through its own NIC: 7 of its 8 remote
  // shares go to other rails and cross the leaf-to-spine links, each leaf's uplink carrying its
  // one GPU per node's 7/16, for 2 nodes 14/16.
  ClusterSpec spec = load_cluster_spec("dgx-h100", 2);
  spec.nccl_env["NCCL_PXN_DISABLE"] = "1";
  const Cluster no_pxn(spec);
  const CommunicatorTraffic t_n(no_pxn, ranks);
  const Footprint& g = t_n.all_to_all();
  EXPECT_DOUBLE_EQ(load_from(no_pxn, g, nvlink_port(no_pxn, 0, 2), {VertexKind::kGpu, 0, 2}),
                   7.0 / 16.0);
  double up = 0;
  for (const LinkLoad& l : g.loads) {
    const Link link = no_pxn.link(l.link);
    const Endpoint& from = l.dir == 0 ? link.a : link.b;
    if (link.a.kind == VertexKind::kNetworkSwitch && link.b.kind == VertexKind::kNetworkSwitch &&
        from.index >= 0) {
      EXPECT_DOUBLE_EQ(l.per_byte, 14.0 / 16.0);
      up += l.per_byte;
    }
  }
  EXPECT_DOUBLE_EQ(up, 8 * 14.0 / 16.0);
}

TEST(Traffic, DescribeCommunicatorCarriesItsTraffic) {
  const Cluster c = load_cluster("a40-nvlink", 1);
  const std::vector<int> ranks{0, 1};
  const CommunicatorInfo info = describe_communicator(c, ranks);
  ASSERT_NE(info.traffic, nullptr);
  // Two bridged GPUs: the ring 0 -> 1 -> 0 stays on the bridge, U each way.
  EXPECT_DOUBLE_EQ(info.traffic->ring().worst[static_cast<int>(nccl::LinkClass::kNvlink)],
                   1.0 / 56.25);
  EXPECT_DOUBLE_EQ(info.traffic->ring().worst[static_cast<int>(nccl::LinkClass::kPcie)], 0.0);
}

}  // namespace
}  // namespace lagom::topologies
