// The hardware graph and path queries; expectations are derived from the presets' numbers.
#include "lagom/topologies/cluster.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"

namespace lagom::topologies {
namespace {

using test::error_of;

// Vertices and links a spec must produce: per node the GPUs, the NVSwitch plane, the PCIe
// switches, the sockets and the NICs; then the network switches.
std::size_t expected_vertices(const ClusterSpec& s) {
  const std::size_t per_node = static_cast<std::size_t>(s.gpus_per_node) +
                               (s.intra_node.kind == IntraNodeKind::kNvSwitch ? 1 : 0) +
                               s.pcie.switches.size() + static_cast<std::size_t>(s.cpu.sockets) +
                               s.network.nics.size();
  std::size_t network =
      s.network.fabric.kind == FabricKind::kRailOptimized ? s.network.nics.size() + 1 : 1;
  if (s.network.fabric.kind == FabricKind::kFatTree) {
    const FatTreeLayout l = fat_tree_layout(s);
    network = static_cast<std::size_t>(l.leaves + l.spines() + l.cores());
  }
  return static_cast<std::size_t>(s.nodes) * per_node + network;
}

std::size_t expected_links(const ClusterSpec& s) {
  const std::size_t nvlink = s.intra_node.kind == IntraNodeKind::kNvSwitch
                                 ? static_cast<std::size_t>(s.gpus_per_node)
                                 : s.intra_node.pairs.size();
  const std::size_t sockets = static_cast<std::size_t>(s.cpu.sockets);
  const std::size_t per_node = nvlink + s.pcie.switches.size() +
                               static_cast<std::size_t>(s.gpus_per_node) + s.network.nics.size() +
                               sockets * (sockets - 1) / 2;
  const std::size_t nics = s.network.nics.size();
  std::size_t spine = s.network.fabric.kind == FabricKind::kRailOptimized ? nics : 0;
  if (s.network.fabric.kind == FabricKind::kFatTree) {
    // Every leaf to each spine of its pod, every spine to each core of its plane.
    const FatTreeLayout l = fat_tree_layout(s);
    spine = static_cast<std::size_t>(l.leaves * l.spines_per_pod + l.spines() * l.cores_per_plane);
  }
  return static_cast<std::size_t>(s.nodes) * (per_node + nics) + spine;
}

TEST(Cluster, GraphHasOneVertexPerDeviceAndOneEdgePerLink) {
  for (const std::string& name : list_cluster_presets()) {
    for (int nodes : {1, 3}) {
      SCOPED_TRACE(name + " x" + std::to_string(nodes));
      const Cluster c = load_cluster(name, nodes);
      EXPECT_EQ(c.vertex_count(), expected_vertices(c.spec()));
      EXPECT_EQ(c.link_count(), expected_links(c.spec()));
      std::size_t gpus = 0;
      for (std::size_t v = 0; v < c.vertex_count(); ++v) {
        gpus += c.vertex(v).kind == VertexKind::kGpu ? 1 : 0;
      }
      EXPECT_EQ(gpus, static_cast<std::size_t>(c.gpu_count()));
      for (std::size_t id = 0; id < c.link_count(); ++id) {
        EXPECT_EQ(c.link(id).id, id);
        EXPECT_GT(c.link(id).bandwidth_GBps, 0.0);
      }
    }
  }
}

TEST(Cluster, RankToNodeAndLocalGpu) {
  const Cluster c = load_cluster("dgx-h100", 3);
  for (int r = 0; r < c.gpu_count(); ++r) {
    const GpuLocation l = c.locate(r);
    EXPECT_EQ(l.node, r / 8);
    EXPECT_EQ(l.local, r % 8);
  }
  EXPECT_NE(error_of([&] { c.locate(24); })
                .find("rank 24 is not in cluster 'dgx-h100' (3 nodes x 8 "
                      "GPUs: ranks 0..23)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.locate(-1); }).find("rank -1"), std::string::npos);
  EXPECT_NE(error_of([&] { c.path(0, 99); }).find("rank 99"), std::string::npos);
}

TEST(Cluster, SameGpuIsLoc) {
  const Path p = load_cluster("dgx-h100").path(3, 3);
  EXPECT_EQ(p.type, nccl::PathType::kLoc);
  EXPECT_TRUE(p.hops.empty());
  EXPECT_TRUE(std::isinf(p.bottleneck_GBps));
  EXPECT_FALSE(p.bottleneck_class.has_value());
}

TEST(Cluster, NvSwitchPathIsTwoNvlinkHops) {
  const Cluster c = load_cluster("dgx-h100");
  const NvLinkSpec& nv = *c.spec().intra_node.nvlink;
  // 18 NVLink4 links x 25 GB/s per direction = 450 GB/s from a GPU to the switch plane.
  const double gpu_nvlink_GBps = nv.links_per_gpu * nv.link_bandwidth_GBps;
  for (int b = 1; b < 8; ++b) {
    const Path p = c.path(0, b);
    EXPECT_EQ(p.type, nccl::PathType::kNvl);
    ASSERT_EQ(p.hops.size(), 2u);
    EXPECT_EQ(p.hops[0].from, (Endpoint{VertexKind::kGpu, 0, 0}));
    EXPECT_EQ(p.hops[0].to.kind, VertexKind::kNvSwitch);
    EXPECT_EQ(p.hops[1].to, (Endpoint{VertexKind::kGpu, 0, b}));
    EXPECT_EQ(p.hops[0].link_class, nccl::LinkClass::kNvlink);
    EXPECT_DOUBLE_EQ(p.bottleneck_GBps, gpu_nvlink_GBps);
    EXPECT_EQ(p.bottleneck_class, nccl::LinkClass::kNvlink);
    EXPECT_DOUBLE_EQ(p.latency_us, 2 * nv.latency_us);
  }
  EXPECT_DOUBLE_EQ(c.path(0, 1).bottleneck_GBps, 450.0);
}

TEST(Cluster, AcrossNodesOnOneRail) {
  const Cluster c = load_cluster("dgx-h100", 2);
  const ClusterSpec& s = c.spec();
  // GPU 0 -> its PCIe switch -> NIC 0 -> leaf 0 -> node 1's NIC 0 -> switch -> GPU 8.
  const Path p = c.path(0, 8);
  EXPECT_EQ(p.type, nccl::PathType::kNet);
  ASSERT_EQ(p.hops.size(), 6u);
  const nccl::LinkClass expected[] = {nccl::LinkClass::kPcie,    nccl::LinkClass::kPcie,
                                      nccl::LinkClass::kNetwork, nccl::LinkClass::kNetwork,
                                      nccl::LinkClass::kPcie,    nccl::LinkClass::kPcie};
  for (std::size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(p.hops[k].link_class, expected[k]) << k;
  }
  EXPECT_EQ(p.hops[2].from, (Endpoint{VertexKind::kNic, 0, 0}));
  EXPECT_EQ(p.hops[2].to, (Endpoint{VertexKind::kNetworkSwitch, -1, 0}));
  EXPECT_EQ(c.name_of(p.hops[2].to), "leaf0");
  EXPECT_EQ(c.name_of(p.hops[0].to), "node0/pcie:sw0");
  // 400 Gb/s NDR = 50 GB/s, below PCIe Gen5 x16 (64 GB/s per direction).
  const double nic_GBps = s.network.nic_speed_Gbps / 8.0;
  EXPECT_DOUBLE_EQ(p.bottleneck_GBps, std::min(nic_GBps, s.pcie.link_bandwidth_GBps));
  EXPECT_EQ(p.bottleneck_class, nccl::LinkClass::kNetwork);
  EXPECT_DOUBLE_EQ(p.latency_us, 4 * s.pcie.latency_us + 2 * s.network.fabric.latency_us);
}

TEST(Cluster, AcrossRailsThroughTheSpine) {
  const Cluster c = load_cluster("dgx-h100", 2);
  const Path p = c.path(1, 10);  // rail 1 to rail 2
  EXPECT_EQ(p.type, nccl::PathType::kNet);
  ASSERT_EQ(p.hops.size(), 8u);
  EXPECT_EQ(c.name_of(p.hops[3].to), "spine");
  // A leaf's uplink carries what its 2 NICs can send: 2 x 50 GB/s.
  EXPECT_DOUBLE_EQ(p.hops[3].bandwidth_GBps, 2 * c.spec().network.nic_speed_Gbps / 8.0);
  // The reverse path crosses the same links the other way.
  const Path q = c.path(10, 1);
  ASSERT_EQ(q.hops.size(), p.hops.size());
  for (std::size_t k = 0; k < p.hops.size(); ++k) {
    EXPECT_EQ(q.hops[k].link_id, p.hops[p.hops.size() - 1 - k].link_id);
    EXPECT_EQ(q.hops[k].from, p.hops[p.hops.size() - 1 - k].to);
  }
  EXPECT_DOUBLE_EQ(q.bottleneck_GBps, p.bottleneck_GBps);
}

TEST(Cluster, A40NvlinkPairsAndPcie) {
  const Cluster a = load_cluster("a40-nvlink");
  const ClusterSpec& s = a.spec();
  // A bridged pair: one direct NVLink hop of 4 links x 14.0625 = 56.25 GB/s (112.5 bidirectional).
  const Path pair = a.path(0, 1);
  EXPECT_EQ(pair.type, nccl::PathType::kNvl);
  ASSERT_EQ(pair.hops.size(), 1u);
  EXPECT_DOUBLE_EQ(pair.bottleneck_GBps,
                   s.intra_node.nvlink->links_per_gpu * s.intra_node.nvlink->link_bandwidth_GBps);
  EXPECT_DOUBLE_EQ(pair.bottleneck_GBps * 2, 112.5);
  // Pairs on one socket meet in the CPU's root complex; across sockets they cross xGMI.
  const Path same_socket = a.path(0, 2);
  EXPECT_EQ(same_socket.type, nccl::PathType::kPhb);
  EXPECT_EQ(same_socket.hops.size(), 2u);  // GPU -> cpu0 -> GPU: each GPU on a root port
  EXPECT_DOUBLE_EQ(same_socket.bottleneck_GBps, s.pcie.link_bandwidth_GBps);
  const Path other_socket = a.path(1, 6);
  EXPECT_EQ(other_socket.type, nccl::PathType::kSys);
  EXPECT_EQ(other_socket.bottleneck_class, nccl::LinkClass::kCpuInterconnect);
  EXPECT_DOUBLE_EQ(other_socket.bottleneck_GBps, s.cpu.interconnect_bandwidth_GBps);

  // Without bridges, the pair on one PCIe switch is PIX.
  const Cluster b = load_cluster("a40-pcie");
  const Path pix = b.path(0, 1);
  EXPECT_EQ(pix.type, nccl::PathType::kPix);
  EXPECT_EQ(pix.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(pix.bottleneck_GBps, b.spec().pcie.link_bandwidth_GBps);
  EXPECT_EQ(b.path(0, 2).type, nccl::PathType::kPhb);
  EXPECT_EQ(b.path(0, 4).type, nccl::PathType::kSys);
  EXPECT_EQ(b.path(7, 3).type, nccl::PathType::kSys);
  EXPECT_EQ(b.path(2, 3).type, nccl::PathType::kPix);
}

TEST(Cluster, A40NicIsLimitedByItsPcieSlot) {
  // Two nodes of cluster A: 400 Gb/s = 50 GB/s NIC in a Gen4 x16 slot (32 GB/s per direction).
  const Cluster a = load_cluster("a40-nvlink", 2);
  const Path p = a.path(0, 8);
  EXPECT_EQ(p.type, nccl::PathType::kNet);
  EXPECT_DOUBLE_EQ(p.bottleneck_GBps, std::min(a.spec().network.nic_speed_Gbps / 8.0,
                                               a.spec().pcie.link_bandwidth_GBps));
  EXPECT_EQ(p.bottleneck_class, nccl::LinkClass::kPcie);
  // GPU 6 uses NIC 1 (socket 1); on the single switch the path has no spine.
  EXPECT_EQ(a.nic_of(6), 1);
  const Path q = a.path(6, 14);
  // GPU 6 -> cpu1 -> NIC 1 -> switch (GPUs and NICs on the CPUs' root ports).
  ASSERT_GE(q.hops.size(), 3u);
  EXPECT_EQ(q.hops[2].from, (Endpoint{VertexKind::kNic, 0, 1}));
  EXPECT_EQ(a.name_of(q.hops[2].to), "switch");
}

TEST(Cluster, DgxA100NicIsTwoSwitchesAway) {
  // nvidia-smi topo on DGX A100 reports PXB between a GPU and its NIC.
  const Cluster c = load_cluster("dgx-a100", 2);
  const Path p = c.path(0, 8);
  ASSERT_GE(p.hops.size(), 4u);
  std::size_t switches = 0;
  for (std::size_t k = 0; k + 1 < p.hops.size() && p.hops[k].to.kind != VertexKind::kNic; ++k) {
    switches += p.hops[k].to.kind == VertexKind::kPcieSwitch ? 1 : 0;
  }
  EXPECT_EQ(switches, 3u);  // GPU leaf, root, NIC leaf
  EXPECT_DOUBLE_EQ(p.bottleneck_GBps, 200.0 / 8.0);
}

TEST(Cluster, NicEntryBundlesItsNics) {
  // aws-p5: each GPU's four 100 Gb/s EFA interfaces are one entry of count 4 behind the GPU's
  // PCIe switch; the network is one non-blocking switch.
  const Cluster c = load_cluster("aws-p5", 2);
  const ClusterSpec& s = c.spec();
  const int count = s.network.nics[0].count;
  ASSERT_EQ(count, 4);
  const Path p = c.path(0, 8);
  EXPECT_EQ(p.type, nccl::PathType::kNet);
  // GPU 0 -> sw0 -> NIC 0 -> switch -> node 1's NIC 0 -> sw0 -> GPU 8.
  ASSERT_EQ(p.hops.size(), 6u);
  EXPECT_EQ(p.hops[1].from, (Endpoint{VertexKind::kPcieSwitch, 0, 0}));
  EXPECT_EQ(p.hops[1].to, (Endpoint{VertexKind::kNic, 0, 0}));
  EXPECT_EQ(c.name_of(p.hops[2].to), "switch");
  // The NIC's PCIe links and network links are bundles of `count`, their bandwidths added.
  const Link nic_pcie = c.link(p.hops[1].link_id);
  EXPECT_EQ(nic_pcie.count, count);
  EXPECT_DOUBLE_EQ(nic_pcie.bandwidth_GBps, count * s.pcie.link_bandwidth_GBps);
  const Link nic_net = c.link(p.hops[2].link_id);
  EXPECT_EQ(nic_net.link_class, nccl::LinkClass::kNetwork);
  EXPECT_EQ(nic_net.count, count);
  EXPECT_DOUBLE_EQ(nic_net.bandwidth_GBps, count * s.network.nic_speed_Gbps / 8.0);
  // 4 x 100 Gb/s = 50 GB/s, below the GPU's own Gen5 x16 link (64 GB/s).
  EXPECT_DOUBLE_EQ(p.bottleneck_GBps,
                   std::min(s.pcie.link_bandwidth_GBps, count * s.network.nic_speed_Gbps / 8.0));
  EXPECT_DOUBLE_EQ(p.bottleneck_GBps, 50.0);
  EXPECT_EQ(p.bottleneck_class, nccl::LinkClass::kNetwork);
  EXPECT_DOUBLE_EQ(p.latency_us, 4 * s.pcie.latency_us + 2 * s.network.fabric.latency_us);
  // GPU to GPU inside a node stays on NVLink.
  EXPECT_EQ(c.path(0, 7).type, nccl::PathType::kNvl);
}

TEST(Cluster, RailLeafUplinkCarriesTheWholeNicEntry) {
  ClusterSpec s = load_cluster_spec("dgx-h100", 3);
  for (NicSpec& nic : s.network.nics) {
    nic.count = 2;
  }
  const Cluster c(s);
  const Path p = c.path(1, 10);  // rail 1 to rail 2, through the spine
  ASSERT_EQ(p.hops.size(), 8u);
  EXPECT_EQ(c.name_of(p.hops[3].to), "spine");
  // A leaf's uplink carries what its 3 NIC entries of 2 x 400 Gb/s can send.
  EXPECT_DOUBLE_EQ(p.hops[3].bandwidth_GBps, 3 * 2 * s.network.nic_speed_Gbps / 8.0);
  // Each GPU's path: min(its Gen5 x16 link 64, 2 x 50 = 100) = 64: PCIe now limits.
  EXPECT_DOUBLE_EQ(p.bottleneck_GBps, s.pcie.link_bandwidth_GBps);
  EXPECT_EQ(p.bottleneck_class, nccl::LinkClass::kPcie);
}

TEST(Cluster, ScalesTo16kGpus) {
  const Cluster c = load_cluster("dgx-h100", 2048);
  EXPECT_EQ(c.gpu_count(), 16384);
  EXPECT_EQ(c.vertex_count(), expected_vertices(c.spec()));
  const Path p = c.path(0, 16383);
  EXPECT_EQ(p.type, nccl::PathType::kNet);
  EXPECT_EQ(p.hops.back().to, (Endpoint{VertexKind::kGpu, 2047, 7}));
  // The spine uplink of a leaf carries 2048 NICs' worth: it is never the bottleneck.
  EXPECT_DOUBLE_EQ(p.bottleneck_GBps, 50.0);
}

TEST(Cluster, CopiesShareTheGraph) {
  const Cluster a = load_cluster("a40-pcie");
  const Cluster b = a;
  EXPECT_EQ(b.path(0, 5).hops.size(), a.path(0, 5).hops.size());
  EXPECT_EQ(&a.spec(), &b.spec());
}

}  // namespace
}  // namespace lagom::topologies
