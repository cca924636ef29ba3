// describe_communicator(): spread over nodes, intra/inter bandwidths, per-algorithm bottlenecks
// and the NCCL search estimate, with the expected values derived here from the presets.
#include "lagom/topologies/communicator.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "lagom/nccl/tuning.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"
#include "test_util.hpp"

namespace lagom::topologies {
namespace {

using test::error_of;

std::vector<int> iota(int n, int from = 0) {
  std::vector<int> r(static_cast<std::size_t>(n));
  std::iota(r.begin(), r.end(), from);
  return r;
}

double gpu_nvlink_GBps(const ClusterSpec& s) {
  return s.intra_node.nvlink->links_per_gpu * s.intra_node.nvlink->link_bandwidth_GBps;
}

std::vector<nccl::LinkClass> classes(std::initializer_list<nccl::LinkClass> c) {
  return c;
}

TEST(Communicator, OneDgxH100Node) {
  const Cluster c = load_cluster("dgx-h100");
  const CommunicatorInfo i = describe_communicator(c, iota(8));
  EXPECT_EQ(i.nranks, 8);
  EXPECT_EQ(i.nnodes, 1);
  EXPECT_EQ(i.ranks_per_node_max, 8);
  EXPECT_EQ(i.ranks_per_node_min, 8);
  EXPECT_TRUE(i.uniform);
  // Every ring step goes GPU -> NVSwitch -> GPU; each GPU's 18 x 25 GB/s carries one stream.
  EXPECT_EQ(i.intra_path_type, nccl::PathType::kNvl);
  EXPECT_DOUBLE_EQ(i.intra_bw_GBps, gpu_nvlink_GBps(c.spec()));
  EXPECT_DOUBLE_EQ(i.intra_bw_GBps, 450.0);
  EXPECT_EQ(i.intra_bottleneck_class, nccl::LinkClass::kNvlink);
  EXPECT_EQ(i.inter_bw_GBps, 0.0);
  EXPECT_EQ(i.nic_path_type, nccl::PathType::kLoc);
  EXPECT_TRUE(i.nvls_available);
  for (const AlgorithmPaths* a : {&i.ring, &i.tree, &i.nvls}) {
    EXPECT_TRUE(a->available);
    EXPECT_EQ(a->link_classes, classes({nccl::LinkClass::kNvlink}));
    EXPECT_EQ(a->bottleneck_class, nccl::LinkClass::kNvlink);
    EXPECT_DOUBLE_EQ(a->bottleneck_GBps, 450.0);
  }
}

TEST(Communicator, TwoDgxH100Nodes) {
  const Cluster c = load_cluster("dgx-h100", 2);
  const ClusterSpec& s = c.spec();
  const CommunicatorInfo i = describe_communicator(c, iota(16));
  EXPECT_EQ(i.nnodes, 2);
  EXPECT_EQ(i.ranks_per_node_max, 8);
  EXPECT_DOUBLE_EQ(i.intra_bw_GBps, gpu_nvlink_GBps(s));
  // One 400 Gb/s NIC per GPU (rail-optimized), and its PCIe Gen5 path (64 GB/s) is wider.
  const double nic_GBps = s.network.nic_speed_Gbps / 8.0;
  EXPECT_DOUBLE_EQ(i.inter_bw_GBps, nic_GBps);
  EXPECT_EQ(i.inter_bottleneck_class, nccl::LinkClass::kNetwork);
  EXPECT_EQ(i.nic_path_type, nccl::PathType::kPix);
  // The ring leaves each node once per ring: the 8 NICs together (400 GB/s) limit it below
  // NVLink's 450 GB/s.
  const auto three =
      classes({nccl::LinkClass::kNvlink, nccl::LinkClass::kPcie, nccl::LinkClass::kNetwork});
  EXPECT_EQ(i.ring.link_classes, three);
  EXPECT_DOUBLE_EQ(i.ring.bottleneck_GBps, std::min(gpu_nvlink_GBps(s), 8 * nic_GBps));
  EXPECT_EQ(i.ring.bottleneck_class, nccl::LinkClass::kNetwork);
  EXPECT_EQ(i.tree.link_classes, three);
  EXPECT_TRUE(i.nvls_available);  // NVLSTree across nodes
  EXPECT_EQ(i.nvls.link_classes, three);
  EXPECT_DOUBLE_EQ(i.nvls.bottleneck_GBps, 400.0);
}

TEST(Communicator, TwoAwsP5Nodes) {
  const Cluster c = load_cluster("aws-p5", 2);
  const ClusterSpec& s = c.spec();
  const CommunicatorInfo i = describe_communicator(c, iota(16));
  EXPECT_EQ(i.nnodes, 2);
  EXPECT_EQ(i.intra_path_type, nccl::PathType::kNvl);
  EXPECT_DOUBLE_EQ(i.intra_bw_GBps, gpu_nvlink_GBps(s));
  // Each GPU's four 100 Gb/s EFA interfaces add up to 4 x 12.5 = 50 GB/s, below its Gen5 x16
  // PCIe link (64 GB/s); they sit on the GPU's own switch (PIX).
  const double per_gpu = s.network.nics[0].count * s.network.nic_speed_Gbps / 8.0;
  EXPECT_DOUBLE_EQ(per_gpu, 50.0);
  EXPECT_DOUBLE_EQ(i.inter_bw_GBps, std::min(per_gpu, s.pcie.link_bandwidth_GBps));
  EXPECT_EQ(i.inter_bottleneck_class, nccl::LinkClass::kNetwork);
  EXPECT_EQ(i.nic_path_type, nccl::PathType::kPix);
  // The ring leaves each node once per ring: 32 x 100 Gb/s = 3200 Gb/s = 400 GB/s < 450 NVLink.
  const double node_GBps = s.nics_per_node() * s.network.nic_speed_Gbps / 8.0;
  EXPECT_DOUBLE_EQ(node_GBps, 400.0);
  EXPECT_DOUBLE_EQ(i.ring.bottleneck_GBps, std::min(gpu_nvlink_GBps(s), node_GBps));
  EXPECT_EQ(i.ring.bottleneck_class, nccl::LinkClass::kNetwork);
  EXPECT_EQ(i.ring.link_classes,
            classes({nccl::LinkClass::kNvlink, nccl::LinkClass::kPcie, nccl::LinkClass::kNetwork}));
  EXPECT_DOUBLE_EQ(i.tree.bottleneck_GBps, node_GBps);
  EXPECT_TRUE(i.nvls_available);  // NVSwitch with NVLS, as dgx-h100 (NVLSTree across nodes)
  EXPECT_DOUBLE_EQ(i.nvls.bottleneck_GBps, node_GBps);
}

TEST(Communicator, NicEntriesSharedByGpusSplitTheirSum) {
  // aws-p5 with its 32 interfaces regrouped as 4 entries of 8, each shared by two GPUs.
  ClusterSpec s = load_cluster_spec("aws-p5", 2);
  s.network.affinity = NicAffinity::kShared;
  s.network.nics.clear();
  for (int k = 0; k < 4; ++k) {
    s.network.nics.push_back({fmt::format("sw{}", 2 * k), {2 * k, 2 * k + 1}, 8});
  }
  const Cluster c(s);
  const CommunicatorInfo i = describe_communicator(c, iota(16));
  // Per entry min(8 x 12.5 = 100, one Gen5 x16 link from the GPU = 64) for two GPUs; the odd GPUs
  // reach it through the CPU (PHB).
  const double entry = std::min(8 * s.network.nic_speed_Gbps / 8.0, s.pcie.link_bandwidth_GBps);
  EXPECT_DOUBLE_EQ(i.inter_bw_GBps, entry / 2);
  EXPECT_EQ(i.inter_bottleneck_class, nccl::LinkClass::kPcie);
  EXPECT_EQ(i.nic_path_type, nccl::PathType::kPhb);
  EXPECT_DOUBLE_EQ(i.ring.bottleneck_GBps, 4 * entry);
}

TEST(Communicator, OneRankPerNode) {
  const Cluster c = load_cluster("dgx-h100", 4);
  const std::vector<int> ranks = {0, 8, 16, 24};
  const CommunicatorInfo i = describe_communicator(c, ranks);
  EXPECT_EQ(i.nnodes, 4);
  EXPECT_EQ(i.ranks_per_node_max, 1);
  EXPECT_EQ(i.intra_path_type, nccl::PathType::kLoc);
  EXPECT_TRUE(std::isinf(i.intra_bw_GBps));
  EXPECT_FALSE(i.intra_bottleneck_class.has_value());
  EXPECT_FALSE(i.nvls_available);
  EXPECT_FALSE(i.nvls.available);
  EXPECT_EQ(i.ring.link_classes, classes({nccl::LinkClass::kPcie, nccl::LinkClass::kNetwork}));
  EXPECT_DOUBLE_EQ(i.ring.bottleneck_GBps, 50.0);
}

TEST(Communicator, UnevenNodes) {
  const Cluster c = load_cluster("dgx-a100", 2);
  const std::vector<int> ranks = {9, 0, 1, 2};
  const CommunicatorInfo i = describe_communicator(c, ranks);
  EXPECT_EQ(i.nranks, 4);
  EXPECT_EQ(i.nnodes, 2);
  EXPECT_EQ(i.ranks_per_node_max, 3);
  EXPECT_EQ(i.ranks_per_node_min, 1);
  EXPECT_FALSE(i.uniform);
  EXPECT_FALSE(i.nvls_available);  // A100: no NVLink SHARP
  // GPU and NIC are two switch levels apart on DGX A100.
  EXPECT_EQ(i.nic_path_type, nccl::PathType::kPxb);
  // Node 1 holds one rank, whose NIC (25 GB/s) is all the ring gets there.
  EXPECT_DOUBLE_EQ(i.ring.bottleneck_GBps, 200.0 / 8.0);
}

TEST(Communicator, A40NvlinkOneNode) {
  const Cluster c = load_cluster("a40-nvlink");
  const ClusterSpec& s = c.spec();
  const CommunicatorInfo i = describe_communicator(c, iota(8));
  // Ring 0-1-...-7-0: 0-1, 2-3, 4-5, 6-7 over bridges, 1-2 and 5-6 through a root complex,
  // 3-4 and 7-0 across xGMI, once each way: the socket link is the bottleneck.
  EXPECT_EQ(i.intra_path_type, nccl::PathType::kSys);
  EXPECT_DOUBLE_EQ(i.intra_bw_GBps, s.cpu.interconnect_bandwidth_GBps);
  EXPECT_EQ(i.intra_bottleneck_class, nccl::LinkClass::kCpuInterconnect);
  EXPECT_EQ(i.ring.link_classes, classes({nccl::LinkClass::kNvlink, nccl::LinkClass::kPcie,
                                          nccl::LinkClass::kCpuInterconnect}));
  EXPECT_FALSE(i.nvls_available);
  EXPECT_FALSE(i.nvls.available);

  // One socket's four GPUs: the bridges and one switch uplink each way per pair.
  const CommunicatorInfo half = describe_communicator(c, iota(4));
  EXPECT_EQ(half.intra_path_type, nccl::PathType::kPhb);
  EXPECT_DOUBLE_EQ(half.intra_bw_GBps, s.pcie.link_bandwidth_GBps);
  EXPECT_EQ(half.ring.link_classes, classes({nccl::LinkClass::kNvlink, nccl::LinkClass::kPcie}));

  // A bridged pair alone: NVLink only.
  const std::vector<int> pair = {4, 5};
  const CommunicatorInfo p = describe_communicator(c, pair);
  EXPECT_EQ(p.intra_path_type, nccl::PathType::kNvl);
  EXPECT_DOUBLE_EQ(p.intra_bw_GBps, gpu_nvlink_GBps(s));
}

TEST(Communicator, A40PcieVersusNvlink) {
  const Cluster b = load_cluster("a40-pcie");
  const std::vector<int> pair = {4, 5};
  const CommunicatorInfo p = describe_communicator(b, pair);
  EXPECT_EQ(p.intra_path_type, nccl::PathType::kPix);
  EXPECT_DOUBLE_EQ(p.intra_bw_GBps, b.spec().pcie.link_bandwidth_GBps);
  EXPECT_EQ(p.ring.link_classes, classes({nccl::LinkClass::kPcie}));
  EXPECT_EQ(describe_communicator(b, iota(8)).intra_path_type, nccl::PathType::kSys);
}

TEST(Communicator, A40ClustersAcrossTwoNodes) {
  {
    const Cluster a = load_cluster("a40-nvlink", 2);
    const ClusterSpec& s = a.spec();
    const CommunicatorInfo i = describe_communicator(a, iota(16));
    // Each NIC: min(400 Gb/s = 50 GB/s, Gen4 x16 slot = 32 GB/s), shared by 4 GPUs.
    const double nic_eff = std::min(s.network.nic_speed_Gbps / 8.0, s.pcie.link_bandwidth_GBps);
    EXPECT_DOUBLE_EQ(i.inter_bw_GBps, nic_eff / 4);
    EXPECT_EQ(i.inter_bottleneck_class, nccl::LinkClass::kPcie);
    // The ring: min(xGMI 16, both NICs 64) -> the socket link.
    EXPECT_DOUBLE_EQ(i.ring.bottleneck_GBps,
                     std::min(s.cpu.interconnect_bandwidth_GBps, 2 * nic_eff));
    EXPECT_EQ(i.ring.bottleneck_class, nccl::LinkClass::kCpuInterconnect);
    // GPUs 2 and 3 reach their NIC (on sw0) through the root complex.
    EXPECT_EQ(i.nic_path_type, nccl::PathType::kPhb);
  }
  {
    const Cluster b = load_cluster("a40-pcie", 2);
    const ClusterSpec& s = b.spec();
    const CommunicatorInfo i = describe_communicator(b, iota(16));
    const double nic_GBps = s.network.nic_speed_Gbps / 8.0;  // 12.5 GB/s for 8 GPUs
    EXPECT_DOUBLE_EQ(i.inter_bw_GBps, nic_GBps / 8);
    EXPECT_EQ(i.inter_bottleneck_class, nccl::LinkClass::kNetwork);
    EXPECT_DOUBLE_EQ(i.ring.bottleneck_GBps, nic_GBps);
    EXPECT_EQ(i.ring.bottleneck_class, nccl::LinkClass::kNetwork);
    EXPECT_EQ(i.nic_path_type, nccl::PathType::kSys);  // GPUs 4-7 reach socket 0's NIC over xGMI
  }
}

TEST(Communicator, BadRankLists) {
  const Cluster c = load_cluster("dgx-h100", 2);
  EXPECT_NE(error_of([&] { describe_communicator(c, {}); }).find("at least one rank"),
            std::string::npos);
  EXPECT_NE(error_of([&] { describe_communicator(c, iota(17)); })
                .find("a communicator of 17 ranks does not fit cluster 'dgx-h100' (2 nodes x 8 "
                      "GPUs = 16 GPUs)"),
            std::string::npos);
  const std::vector<int> dup = {0, 3, 5, 3};
  EXPECT_NE(error_of([&] { describe_communicator(c, dup); }).find("rank 3 appears twice"),
            std::string::npos);
  const std::vector<int> out = {0, 16};
  EXPECT_NE(error_of([&] { describe_communicator(c, out); }).find("rank 16 is not in cluster"),
            std::string::npos);
  const std::vector<int> neg = {-1, 2};
  EXPECT_NE(error_of([&] { describe_communicator(c, neg); }).find("rank -1 is not in cluster"),
            std::string::npos);
}

// NCCL's search, replayed by hand from reference/nccl.md §2.2 (speed ladders, per-link
// constants, DupChannels) for the cases below.
TEST(NcclSearchEstimate, OneDgxH100Node) {
  const CommunicatorInfo i = describe_communicator(load_cluster("dgx-h100"), iota(8));
  // Each GPU has 18 NVLinks of SM90_NVLINK_BW = 20.6 in NCCL units: 370.8 GB/s.
  const double total = 18 * 20.6;
  // sm90 intra ladder starts at 60: floor(370.8 / 60) = 6 rings, 360 < 370.8, so lower speeds
  // are tried while they stay above 0.49 x 60: 50 -> 7 x 50 = 350, 40 -> 9 x 40 = 360,
  // 30 -> 12 x 30 = 360: none is better. DupChannels (60 >= 50): 12 channels at 30.
  const int first = static_cast<int>(std::floor(total / 60.0));
  EXPECT_EQ(first, 6);
  EXPECT_EQ(i.nccl.channels, 2 * first);
  EXPECT_DOUBLE_EQ(i.nccl.bw_intra_GBps, 60.0 / 2);
  EXPECT_DOUBLE_EQ(i.nccl.bw_inter_GBps, 60.0 / 2);
  EXPECT_EQ(i.nccl.type_intra, nccl::PathType::kNvl);
  EXPECT_EQ(i.nccl.type_inter, nccl::PathType::kPix);
}

TEST(NcclSearchEstimate, TwoDgxH100Nodes) {
  const CommunicatorInfo i = describe_communicator(load_cluster("dgx-h100", 2), iota(16));
  // maxBw = min(PCIe Gen5 x16 = 48 in NCCL units, NDR 400 Gb/s / 8 = 50) = 48, the top of the
  // sm90 inter ladder. Each NIC takes floor(48 / 48) = 1 ring: 8 rings; each GPU's NVLinks carry
  // 7/8 of them: 8 x 48 x 7/8 = 336 <= 370.8. 8 x 48 = 384 >= 370.8 ends the search, and
  // DupChannels skips sm90 graphs under 50 GB/s with more than 4 channels.
  const double max_bw = std::min(16 * 240.0 / 80.0, 400.0 / 8.0);
  EXPECT_DOUBLE_EQ(max_bw, 48.0);
  EXPECT_EQ(i.nccl.channels, 8);
  EXPECT_DOUBLE_EQ(i.nccl.bw_inter_GBps, max_bw);
  EXPECT_EQ(i.nccl.type_intra, nccl::PathType::kNvl);
  EXPECT_EQ(i.nccl.type_inter, nccl::PathType::kPix);
}

TEST(NcclSearchEstimate, TwoAwsP5Nodes) {
  const CommunicatorInfo i = describe_communicator(load_cluster("aws-p5", 2), iota(16));
  // aws-ofi-nccl presents each GPU's four 100 Gb/s EFA interfaces as one device of 400 Gb/s:
  // NET 400 / 8 = 50, behind the GPU's PCIe Gen5 x16 switch (48 in NCCL units). maxBw = 48, and
  // the search goes as on dgx-h100: one ring per NIC, 8 rings at 48, no DupChannels.
  const double max_bw = std::min(16 * 240.0 / 80.0, 4 * 100.0 / 8.0);
  EXPECT_DOUBLE_EQ(max_bw, 48.0);
  EXPECT_EQ(i.nccl.channels, 8);
  EXPECT_DOUBLE_EQ(i.nccl.bw_inter_GBps, max_bw);
  EXPECT_EQ(i.nccl.type_intra, nccl::PathType::kNvl);
  EXPECT_EQ(i.nccl.type_inter, nccl::PathType::kPix);
}

TEST(NcclSearchEstimate, OneDgxA100Node) {
  const CommunicatorInfo i = describe_communicator(load_cluster("dgx-a100"), iota(8));
  // 12 NVLinks x SM80_NVLINK_BW 20 = 240. Pre-sm90 intra ladder starts at 40: 240 / 40 = 6 rings
  // use all 240, so the search stops; DupChannels (sm80, 40 >= 25): 12 channels at 20.
  EXPECT_EQ(i.nccl.channels, 2 * (12 * 20 / 40));
  EXPECT_DOUBLE_EQ(i.nccl.bw_intra_GBps, 40.0 / 2);
  EXPECT_EQ(i.nccl.type_intra, nccl::PathType::kNvl);
}

TEST(NcclSearchEstimate, OneA40PcieNode) {
  const CommunicatorInfo i = describe_communicator(load_cluster("a40-pcie"), iota(8));
  // The ring crosses xGMI (AMD_BW 16) once each way. maxBw = 24 (Gen4 x16 in NCCL units), so
  // the pre-sm90 intra ladder starts at 20: no ring fits at 20 or 18; 15 fits once; 12, 10 and
  // 9 fit once too (no better); 7 < 0.49 x 15 stops. 15 < 25: no DupChannels; pass 2 cannot
  // fit one ring at 18.
  EXPECT_EQ(i.nccl.channels, 1);
  EXPECT_DOUBLE_EQ(i.nccl.bw_intra_GBps, 15.0);
  EXPECT_EQ(i.nccl.type_intra, nccl::PathType::kSys);
  EXPECT_EQ(i.nccl.type_inter, nccl::PathType::kPix);
}

// The paper's cluster A under the NCCL each version's search rules (docs/models.md §2).
ClusterSpec a40_host(nccl::Version v, bool pcie_switches, nccl::CpuVendor vendor, int nodes = 1) {
  ClusterSpec s = load_cluster_spec("a40-nvlink", nodes);
  s.nccl_version = v;
  s.cpu.vendor = vendor;
  if (vendor == nccl::CpuVendor::kIntel) {
    s.cpu.interconnect_bandwidth_GBps = 10.0;  // Skylake's UPI figure in NCCL
  }
  if (pcie_switches) {  // a switch per bridged pair, two per socket
    s.pcie.switches = {{"sw0", "cpu0"}, {"sw1", "cpu0"}, {"sw2", "cpu1"}, {"sw3", "cpu1"}};
    s.pcie.gpu_attach = {"sw0", "sw0", "sw1", "sw1", "sw2", "sw2", "sw3", "sw3"};
    s.network.nics[0].attach = "sw0";
    s.network.nics[1].attach = "sw2";
  }
  return s;
}

TEST(NcclSearchEstimate, ClusterAUnderNccl218FindsThePapersEightChannels) {
  // 2.18.3 joins AMD sockets at LOC_BW and may run rings backwards (sameChannels 0). maxBw 24
  // (Gen4 x16), totalBw 48 (4 NVLinks x 12): at 20 a GPU's own x16 link carries one ring each
  // way (2 x 20 = 40); at 12 two each way, 4 x 12 = 48 = totalBw: stop. 12 < 25: no duplication;
  // init doubles to the paper's 8.
  const auto direct = [](nccl::Version v) {
    return describe_communicator(Cluster(a40_host(v, false, nccl::CpuVendor::kAmd)), iota(8));
  };
  const CommunicatorInfo d18 = direct(nccl::Version::k2_18);
  EXPECT_EQ(d18.nccl.channels, 4);
  EXPECT_DOUBLE_EQ(d18.nccl.bw_intra_GBps, 12.0);
  // 2.28.9: AMD_BW 16 on the socket link and no reverse rings across AMD sockets: one at 15.
  const CommunicatorInfo d28 = direct(nccl::Version::k2_28);
  EXPECT_EQ(d28.nccl.channels, 1);
  EXPECT_DOUBLE_EQ(d28.nccl.bw_intra_GBps, 15.0);
  // Behind a PCIe switch per pair, each switch uplink carries one ring's hop each way: 2 x 12.
  const CommunicatorInfo sw = describe_communicator(
      Cluster(a40_host(nccl::Version::k2_18, true, nccl::CpuVendor::kAmd)), iota(8));
  EXPECT_EQ(sw.nccl.channels, 2);
  EXPECT_DOUBLE_EQ(sw.nccl.bw_intra_GBps, 12.0);
  // On Intel the 10 GB/s socket link takes one ring (either way) at 10.
  const CommunicatorInfo intel = describe_communicator(
      Cluster(a40_host(nccl::Version::k2_18, false, nccl::CpuVendor::kIntel)), iota(8));
  EXPECT_EQ(intel.nccl.channels, 1);
  EXPECT_DOUBLE_EQ(intel.nccl.bw_intra_GBps, 10.0);
  // Two nodes: the inter ladder's 24 fits one channel per NIC (each behind a Gen4 x16 slot) and
  // a ring each way on each GPU's link: 2 x 24 = 48 = totalBw.
  const CommunicatorInfo two = describe_communicator(
      Cluster(a40_host(nccl::Version::k2_18, false, nccl::CpuVendor::kAmd, 2)), iota(16));
  EXPECT_EQ(two.nccl.channels, 2);
  EXPECT_DOUBLE_EQ(two.nccl.bw_inter_GBps, 24.0);
}

// The NVLS graph NCCL tunes with: 2.28's second search pass raises its bwInter one speed (40 ->
// 50 on 2.28's sm90 ladder), 2.18.3's never does. On 4 H100 nodes that decides 2.18's choice for a
// 1 GiB all-reduce: NVLSTree at 8 x 40 x 0.7 x 4 / 6 = 149 GB/s loses to Ring (8 x 48 x 32 / 62 =
// 198).
TEST(NcclSearchEstimate, Nccl218KeepsTheNvlsGraphsFirstSpeed) {
  ClusterSpec s = load_cluster_spec("dgx-h100", 4);
  s.nccl_version = nccl::Version::k2_18;
  const Cluster c18(s);
  const CommunicatorInfo i = describe_communicator(c18, iota(32));
  const nccl::CommInfo info = nccl_comm_info(c18, i);
  EXPECT_DOUBLE_EQ(info.nvls.bw_intra_GBps, 40.0);
  EXPECT_DOUBLE_EQ(info.nvls.bw_inter_GBps, 40.0);
  const nccl::Tables t = nccl::tune_model(info);
  EXPECT_NEAR(
      t.bandwidth(nccl::CollKind::kAllReduce, nccl::Algorithm::kNvlsTree, nccl::Protocol::kSimple),
      8 * 40.0 * 0.7 * 4 / 6, 1e-3);
  EXPECT_EQ(nccl::choose(t, nccl::CollKind::kAllReduce, std::int64_t{1} << 30).config.algo,
            nccl::Algorithm::kRing);
  const Cluster c28(load_cluster_spec("dgx-h100", 4));
  EXPECT_DOUBLE_EQ(nccl_comm_info(c28, describe_communicator(c28, iota(32))).nvls.bw_inter_GBps,
                   50.0);
}

TEST(NcclSearchEstimate, Nccl218HasSixteenSearchChannelsAndDoublesLast) {
  // One DGX A100 node: 240 GB/s of NVLink; 2.28 finds 6 at 40 and duplicates to 12 at 20. 2.18
  // (MAXCHANNELS 32, so 16 search channels) does the same: 6 < 16.
  ClusterSpec s = load_cluster_spec("dgx-a100", 1);
  s.nccl_version = nccl::Version::k2_18;
  const CommunicatorInfo a = describe_communicator(Cluster(s), iota(8));
  EXPECT_EQ(a.nccl.channels, 12);
  EXPECT_DOUBLE_EQ(a.nccl.bw_intra_GBps, 20.0);
  // One DGX H100 node: 18 x 20.0 (2.18's SM90 NVLink) = 360; 2.18's sm90 ladder starts at 60:
  // 6 rings use it all, duplicated to 12 at 30 (2.28: 18 x 20.6, the same 6 x 60, then its pass
  // 2 cannot raise the speed).
  ClusterSpec h = load_cluster_spec("dgx-h100", 1);
  h.nccl_version = nccl::Version::k2_18;
  const CommunicatorInfo b = describe_communicator(Cluster(h), iota(8));
  EXPECT_EQ(b.nccl.channels, 12);
  EXPECT_DOUBLE_EQ(b.nccl.bw_intra_GBps, 30.0);
}

}  // namespace
}  // namespace lagom::topologies
