// NCCL 2.28.9 tuning emulation: every expectation is derived here from reference/nccl.md §1-§2.
#include "lagom/nccl/tuning.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "lagom/common/error.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/config_override.hpp"
#include "lagom/nccl/env.hpp"
#include "lagom/nccl/legality.hpp"
#include "test_util.hpp"

namespace lagom::nccl {
namespace {

using test::error_of;

constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMiB = 1024 * kKiB;
constexpr std::int64_t kGiB = 1024 * kMiB;

// An HGX/DGX H100 (8 GPUs, 18 NVLink4 links each to 4 NVSwitches) as NCCL 2.28 sees it.
// Ring/Tree search: 6 rings at 60 GB/s (6 x 60 <= 18 x 20.6 = 370.8), duplicated by
// ncclTopoDupChannels into 12 x 30; postset doubles to 24 collective channels, as NCCL logs on
// such nodes report ("24 coll channels, 24 collnet channels, 16 nvls channels, 32 p2p channels,
// 32 p2p channels per peer"). NVLS graph: 8 heads at 40 GB/s intra / 60 GB/s inter, which gives
// the ~480 GB/s NVLS busbw of reference/nccl.md §2.6. Single node: typeInter is PIX.
CommInfo h100_nodes(int nodes) {
  CommInfo c;
  c.compcap = 90;
  c.nnodes = nodes;
  c.nranks = 8 * nodes;
  GraphInfo g;
  g.nchannels = nodes == 1 ? 12 : 8;
  g.bw_intra_GBps = nodes == 1 ? 30.0 : 40.0;
  g.bw_inter_GBps = g.bw_intra_GBps;
  g.type_intra = PathType::kNvl;
  g.type_inter = PathType::kPix;
  c.ring = g;
  c.tree = g;
  c.nvls.nchannels = 8;
  c.nvls.bw_intra_GBps = 40.0;
  c.nvls.bw_inter_GBps = 60.0;
  c.nvls_support = true;
  c.has_nvswitch = true;
  c.all_nvlink = nodes == 1;
  return c;
}
CommInfo h100_node() {
  return h100_nodes(1);
}

// Eight GPUs behind PCIe switches, no NVLink: one ring at PCI_BW (12 GB/s).
CommInfo pcie_node() {
  CommInfo c;
  c.compcap = 80;
  c.nranks = 8;
  c.nnodes = 1;
  GraphInfo g;
  g.nchannels = 1;
  g.bw_intra_GBps = 12.0;
  g.bw_inter_GBps = 12.0;
  g.type_intra = PathType::kPxb;
  g.type_inter = PathType::kPix;
  c.ring = g;
  c.tree = g;
  return c;
}

// One GPU on each of 4 nodes (PAT's case).
CommInfo one_gpu_per_node() {
  CommInfo c = h100_nodes(1);
  c.nranks = 4;
  c.nnodes = 4;
  c.ring.nchannels = c.tree.nchannels = 4;
  c.ring.bw_intra_GBps = c.tree.bw_intra_GBps = 40.0;
  c.ring.bw_inter_GBps = c.tree.bw_inter_GBps = 40.0;
  c.nvls = {};
  c.nvls_support = false;
  return c;
}

double lat(const Tables& t, CollKind c, Algorithm a, Protocol p) {
  return t.latency(c, a, p);
}

// ---- names ------------------------------------------------------------------------------------

TEST(CommConfig, NamesRoundTripCaseInsensitively) {
  for (int a = 0; a < kAlgorithmCount; ++a) {
    auto algo = static_cast<Algorithm>(a);
    EXPECT_EQ(parse_algorithm(to_string(algo)), algo);
  }
  EXPECT_EQ(parse_algorithm("ring"), Algorithm::kRing);
  EXPECT_EQ(parse_algorithm("nvls"), Algorithm::kNvls);
  EXPECT_EQ(parse_algorithm("NVLSTree"), Algorithm::kNvlsTree);
  EXPECT_EQ(parse_algorithm("collnet_direct"), Algorithm::kCollNetDirect);  // tuner CSV token
  EXPECT_EQ(parse_algorithm("nvls_tree"), Algorithm::kNvlsTree);
  EXPECT_EQ(parse_algorithm("rings"), std::nullopt);
  EXPECT_EQ(parse_protocol("ll128"), Protocol::kLL128);
  EXPECT_EQ(parse_protocol("SIMPLE"), Protocol::kSimple);
  EXPECT_EQ(parse_protocol("LL64"), std::nullopt);
  EXPECT_EQ(to_string(Protocol::kLL128), "LL128");
  EXPECT_EQ(to_string(Algorithm::kNvls), "NVLS");
  EXPECT_EQ(parse_transport("net"), Transport::kNet);
  EXPECT_EQ(parse_transport("P2P/PCIe"), Transport::kP2pPcie);
  EXPECT_EQ(parse_transport("shm"), Transport::kShm);
  EXPECT_EQ(parse_coll_kind("all_reduce"), CollKind::kAllReduce);
  EXPECT_EQ(parse_coll_kind("ReduceScatter"), CollKind::kReduceScatter);
  EXPECT_EQ(parse_coll_kind("alltoall"), CollKind::kAllToAll);
  EXPECT_EQ(parse_coll_kind("gather"), std::nullopt);
  // NCCL's function indices.
  EXPECT_EQ(index_of(CollKind::kAllReduce), 4);
  EXPECT_EQ(index_of(Algorithm::kPat), 6);
}

TEST(CommConfig, FromWorkloadOpKinds) {
  using traces::OpKind;
  EXPECT_EQ(coll_kind_of(OpKind::kAllReduce), CollKind::kAllReduce);
  EXPECT_EQ(coll_kind_of(OpKind::kAllGather), CollKind::kAllGather);
  EXPECT_EQ(coll_kind_of(OpKind::kReduceScatter), CollKind::kReduceScatter);
  EXPECT_EQ(coll_kind_of(OpKind::kBroadcast), CollKind::kBroadcast);
  EXPECT_EQ(coll_kind_of(OpKind::kReduce), CollKind::kReduce);
  EXPECT_EQ(coll_kind_of(OpKind::kAllToAll), CollKind::kAllToAll);
  EXPECT_EQ(coll_kind_of(OpKind::kSend), CollKind::kSendRecv);
  EXPECT_EQ(coll_kind_of(OpKind::kRecv), CollKind::kSendRecv);
  EXPECT_EQ(coll_kind_of(OpKind::kCompute), std::nullopt);
  EXPECT_EQ(coll_kind_of(OpKind::kMemcpy), std::nullopt);
}

TEST(CommConfig, ToString) {
  CommConfig c{Algorithm::kRing, Protocol::kSimple, Transport::kP2pNvlink, 24, 544, 2 * kMiB};
  EXPECT_EQ(to_string(c), "Ring/Simple P2P/NVLink nc=24 nt=544 chunk=2 MiB");
}

// ---- derived communicator fields ----------------------------------------------------------------

TEST(NcclTuning, DerivesChannelCountsAsNcclInit) {
  // One node: 2 x 12 search channels = 24; NVLS 16 on sm90; p2p pow2Up(24) = 32 channels, and
  // NVSwitch peers do not limit the per-peer count: 32.
  CommInfo c = resolve_comm_info(h100_node());
  EXPECT_EQ(c.nchannels, 24);
  EXPECT_EQ(c.nvls_channels, 16);
  EXPECT_EQ(c.nvls_heads, 8);
  EXPECT_EQ(c.p2p_nchannels, 32);
  EXPECT_EQ(c.p2p_nchannels_per_peer, 32);
  // Two nodes: 2 x 8 = 16 (ring bwIntra 40 <= 45: no sm90 doubling); network peers get 2
  // channels (as in the "16 coll channels ... 2 p2p channels per peer" logs of nccl#1453).
  CommInfo m = resolve_comm_info(h100_nodes(2));
  EXPECT_EQ(m.nchannels, 16);
  EXPECT_EQ(m.p2p_nchannels, 16);
  EXPECT_EQ(m.p2p_nchannels_per_peer, 2);
  // A ring bwIntra above 45 GB/s on sm90 multi-node doubles channels below 16.
  CommInfo fast = h100_nodes(2);
  fast.ring.nchannels = fast.tree.nchannels = 4;
  fast.ring.bw_intra_GBps = 48;
  EXPECT_EQ(resolve_comm_info(fast).nchannels, 16);
  // NCCL_MAX_CTAS caps the collective channels.
  CommInfo capped = h100_node();
  capped.max_ctas = 8;
  EXPECT_EQ(resolve_comm_info(capped).nchannels, 8);
  EXPECT_EQ(resolve_comm_info(capped).nvls_channels, 8);
}

TEST(NcclTuning, RejectsImpossibleCommunicators) {
  CommInfo c = h100_node();
  c.nnodes = 16;
  EXPECT_NE(error_of([&] { resolve_comm_info(c); }).find("nnodes"), std::string::npos);
  c = h100_node();
  c.nranks = 0;
  EXPECT_NE(error_of([&] { tune_model(c); }).find("nranks"), std::string::npos);
}

// ---- latency table (§2.4, worked numbers §2.6) --------------------------------------------------

TEST(NcclTuning, SingleNodeLatenciesMatchTheFormulasAndWorkedNumbers) {
  const Tables t = tune_model(h100_node());
  const int n = 8;
  // Ring AllReduce on NVLink: baseLat + nsteps * hwLat[NVLINK][Ring], nsteps = 2(n-1) = 14.
  const int ar_steps = 2 * (n - 1);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL), 6.6 + ar_steps * 0.6,
              1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128),
              14.0 + ar_steps * 1.9, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple),
              8.4 + ar_steps * 3.4, 1e-4);
  // Tree AllReduce: baseLat + 2 * ((ppn-1) * intraLat + log2(nNodes) * interLat), one node.
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL), 6.8 + 2 * 7 * 0.6,
              1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL128), 14.0 + 2 * 7 * 1.25,
              1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple), 8.4 + 2 * 7 * 4.0,
              1e-4);
  // NVLS: lat = intraLat (base ignored).
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple), 25.0, 1e-4);
  // AllGather Ring: nsteps = n-1 = 7.
  EXPECT_NEAR(lat(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kLL), 6.6 + 7 * 0.6, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple), 8.4 + 7 * 3.4,
              1e-4);
  // Broadcast Ring without sameChannels: nsteps = n hops; Simple takes Tree's hop latency.
  EXPECT_NEAR(lat(t, CollKind::kBroadcast, Algorithm::kRing, Protocol::kLL), 6.6 + 8 * 0.6, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kBroadcast, Algorithm::kRing, Protocol::kSimple), 8.4 + 8 * 4.0,
              1e-4);

  // The worked table of reference/nccl.md §2.6, as printed there.
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL), 15.0, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128), 40.6, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), 56.0, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL), 15.2, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL128), 31.5, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple), 64.4, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kLL128), 27.3, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple), 32.2, 1e-4);
}

TEST(NcclTuning, TwoNodeLatenciesMatchTheFormulasAndWorkedNumbers) {
  const Tables t = tune_model(h100_nodes(2));
  // Ring AllReduce, 16 ranks on 2 nodes: nsteps = 30, nInterSteps = 2(nNodes-1) = 2.
  // intraLat = max(hwLat[NVLINK][Ring][p], netOverhead (1 us Intel, x3 for Simple)),
  // interLat = hwLat[NET][Ring][p].
  const int steps = 30;
  const int inter = 2;
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL),
              6.6 + (steps - inter) * std::max(0.6, 1.0) + inter * 2.7, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128),
              14.0 + (steps - inter) * std::max(1.9, 1.0) + inter * 4.0, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple),
              8.4 + (steps - inter) * std::max(3.4, 3.0) + inter * 14.0, 1e-4);
  // Tree: 2 * (7 * intraLat + log2(2) * hwLat[NET][Tree][p]).
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL),
              6.8 + 2 * (7 * 0.6 + 1 * 5.0), 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple),
              8.4 + 2 * (7 * 4.0 + 1 * 14.0), 1e-4);
  // NVLSTree: intraLat + 2 log2(nNodes) interLat; NVLS (needs collnet here): intra + inter.
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple),
              25.0 + 2 * 1 * 20.9, 1e-4);
  // §2.6 worked numbers.
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL), 40.0, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128), 75.2, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), 131.6, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL), 25.2, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL128), 48.5, 1e-4);
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple), 92.4, 1e-4);
}

TEST(NcclTuning, AmdHostsPayTwiceTheNetOverhead) {
  CommInfo c = h100_nodes(2);
  c.cpu_vendor = CpuVendor::kAmd;
  const Tables t = tune_model(c);
  // intraLat = max(0.6, 2.0) for LL: 6.6 + 28 * 2.0 + 2 * 2.7.
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL), 6.6 + 28 * 2.0 + 5.4,
              1e-4);
}

TEST(NcclTuning, PatLatencyWithOneGpuPerNode) {
  const Tables t = tune_model(one_gpu_per_node());
  // PAT: 8.0 + log2(nNodes) * interLat / 3.5 + nRanks * 2.8; ppn == 1 uses the Tree network
  // latency (14 us for Simple).
  EXPECT_NEAR(lat(t, CollKind::kAllGather, Algorithm::kPat, Protocol::kSimple),
              8.0 + 2 * 14.0 / 3.5 + 4 * 2.8, 1e-4);
  EXPECT_GT(t.bandwidth(CollKind::kAllGather, Algorithm::kPat, Protocol::kSimple), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kPat, Protocol::kSimple), 0);
  // PAT is off with several GPUs per node (NCCL_PAT_ENABLE=2).
  const Tables h = tune_model(h100_nodes(2));
  EXPECT_EQ(h.bandwidth(CollKind::kAllGather, Algorithm::kPat, Protocol::kSimple), 0);
}

// ---- bandwidth table (§2.3) -------------------------------------------------------------------

TEST(NcclTuning, SingleNodeBandwidthsMatchTheFormulas) {
  const Tables t = tune_model(h100_node());
  const double n = 8;
  const double ar_ratio = n / (2 * (n - 1));  // nRanks / nsteps
  const double ag_ratio = n / (n - 1);
  const double b = 12 * 30.0;  // search channels x bwIntra
  const double tol = 1e-3;
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), b * ar_ratio,
              tol);
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL),
              std::min(141.0, b * 0.5) * ar_ratio, tol);
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128),
              std::min(0.92 * b, 36.7 * 12) * ar_ratio, tol);
  EXPECT_NEAR(t.bandwidth(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple), b * ag_ratio,
              tol);
  // Tree AllReduce: min(0.92 B, nCh x perChMaxTreeBw 38.7), then x 0.5; LL: / 3.8, capped at 141.
  const double tree_simple = std::min(0.92 * b, 12 * 38.7);
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple),
              tree_simple * 0.5, tol);
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL),
              std::min(tree_simple / 3.8, 141.0) * 0.5, tol);
  // Tree LL128 on one node: x 7/9, capped at nCh x 36.7.
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL128),
              std::min(tree_simple * 7.0 / 9.0, 12 * 36.7) * 0.5, tol);
  // NVLS AllReduce: per channel min(bwIntra x 0.85 x (nCh-1)/nCh x 2, bwInter), x nCh x ratio.
  const double nvls_ch = std::min(40.0 * 0.85 * 7.0 / 8.0 * 2.0, 60.0);
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple),
              8 * nvls_ch * ar_ratio, tol);
  // ... its bus bandwidth is the ~476 GB/s that H100 nodes measure (nccl#1455: ~480).
  EXPECT_NEAR(8 * nvls_ch, 476.0, 0.01);
  // NVLS AllGather: x (ppn-1)/ppn instead of x 2, and no bus-to-algorithm conversion.
  EXPECT_NEAR(t.bandwidth(CollKind::kAllGather, Algorithm::kNvls, Protocol::kSimple),
              8 * std::min(40.0 * 0.85 * 7.0 / 8.0 * 7.0 / 8.0, 60.0), tol);
  // Disabled: NVLSTree on one node, CollNet without collnet, PAT for AllReduce, LL for NVLS.
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kCollNetDirect, Protocol::kSimple), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kCollNetChain, Protocol::kSimple), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kPat, Protocol::kSimple), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kNvls, Protocol::kLL), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kBroadcast, Algorithm::kTree, Protocol::kSimple), 0);
}

TEST(NcclTuning, TwoNodeNvlsTreeBandwidth) {
  const Tables t = tune_model(h100_nodes(2));
  // NVLSTree on 2 nodes: min(40 x 0.85 x 7/8 x 2, 2 x bwInter, perChMaxNVLSTreeBw[Hopper][2] =
  // 57.7) per channel, x 8 channels x nRanks / nsteps = 16 / 30.
  const double per_ch = std::min({40.0 * 0.85 * 7.0 / 8.0 * 2.0, 2 * 60.0, 57.7});
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple),
              8 * per_ch * 16.0 / 30.0, 1e-3);
  // Multi-node NVLS needs collnet; LL on 2 nodes is capped by llMaxBws[Intel CPU][2 nodes] = 39.
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple), 0);
  EXPECT_NEAR(t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL),
              std::min(39.0, 8 * 40.0 * 0.5) * 16.0 / 30.0, 1e-3);
}

TEST(NcclTuning, Ll128EnableRules) {
  // NVLink intra and PIX inter on Hopper: enabled.
  EXPECT_GT(
      tune_model(h100_node()).bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128),
      0);
  // PCIe-only intra-node paths (PXB > NVB): disabled.
  EXPECT_EQ(
      tune_model(pcie_node()).bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128),
      0);
  // Mixed compute capabilities: disabled.
  CommInfo mixed = h100_node();
  mixed.compcap = 80;
  mixed.max_compcap = 90;
  EXPECT_EQ(tune_model(mixed).bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128),
            0);
  // Inter-node path through PXN: allowed on Hopper (NCCL_LL128_C2C=1) but not on Ampere (<= PXB).
  CommInfo pxn = h100_nodes(2);
  pxn.ring.type_inter = PathType::kPxn;
  EXPECT_GT(tune_model(pxn).bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128), 0);
  pxn.compcap = 80;
  EXPECT_EQ(tune_model(pxn).bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128), 0);
  // NCCL_PROTO=LL128 forces it on even where NCCL would not enable it.
  CommInfo forced = pcie_node();
  forced.env.proto = "LL128";
  const Tables t = tune_model(forced);
  EXPECT_GT(t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), 0);
}

TEST(NcclTuning, PcieRingUsesFewerSimpleThreads) {
  // ringGraph bwIntra x nChannels = 12 <= PCI_BW: Ring/Simple max threads 256 instead of 512.
  const Tables t = tune_model(pcie_node());
  EXPECT_EQ(t.max_threads[index_of(Algorithm::kRing)][index_of(Protocol::kSimple)], 256);
  EXPECT_EQ(t.max_threads[index_of(Algorithm::kTree)][index_of(Protocol::kSimple)], 512);
  // PCI hop latencies: Ring Simple AllReduce = 8.4 + 14 x 5.7.
  EXPECT_NEAR(t.latency(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), 8.4 + 14 * 5.7,
              1e-4);
  // The chosen transport is P2P over PCIe.
  EXPECT_EQ(default_config(pcie_node(), CollKind::kAllReduce, kGiB).transport, Transport::kP2pPcie);
}

TEST(NcclTuning, EnvironmentListsFollowNcclSyntax) {
  CommInfo c = h100_node();
  c.env.algo = "ring;allreduce:tree,nvls";
  Tables t = tune_model(c);
  EXPECT_GT(t.bandwidth(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllGather, Algorithm::kNvls, Protocol::kSimple), 0);
  EXPECT_EQ(t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), 0);
  EXPECT_GT(t.bandwidth(CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple), 0);
  c.env.algo = "^NVLS";
  EXPECT_EQ(default_config(c, CollKind::kAllReduce, kGiB).algo, Algorithm::kRing);
  c.env.algo = "ring,bogus";
  EXPECT_NE(error_of([&] { tune_model(c); }).find("bogus"), std::string::npos);
  c.env.algo = "ring;tree";
  EXPECT_NE(error_of([&] { tune_model(c); }).find("prefix"), std::string::npos);
  c.env.algo = "";
  c.env.proto = "^LL,LL128,Simple";
  EXPECT_NE(
      error_of([&] { default_config(c, CollKind::kAllReduce, 8); }).find("no algorithm/protocol"),
      std::string::npos);
}

// ---- per-call time (§2.5) ---------------------------------------------------------------------

TEST(NcclTuning, AlgoTimeIsLatencyPlusBytesOverBandwidth) {
  const Tables t = tune_model(h100_node());
  const std::int64_t s = 64 * kMiB;
  const double l = t.latency(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple);
  const double bw = t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple);
  EXPECT_NEAR(algo_time_us(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, s),
              l + static_cast<double>(s) / (1000 * bw),
              1e-3 * (l + static_cast<double>(s) / (1000 * bw)));
  // Ring pays its latency once per pipelined op.
  EXPECT_NEAR(algo_time_us(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, s, 3),
              3 * l + static_cast<double>(s) / (1000 * bw), 0.1);
  // Tree AllReduce: bandwidth x treeCorrectionFactor[proto][log2(nBytes / 64)]: 64 KiB -> index
  // 10 (Simple .6); other algorithms batch up to 1024/96 = 10 ops per latency.
  const std::int64_t s2 = 64 * kKiB;
  const double tl = t.latency(CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple);
  const double tbw = t.bandwidth(CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple) * 0.6;
  EXPECT_NEAR(algo_time_us(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, s2),
              tl + static_cast<double>(s2) / (1000 * tbw), 1e-3);
  EXPECT_NEAR(algo_time_us(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, s2, 10),
              tl + static_cast<double>(s2) / (1000 * tbw), 1e-3);
  EXPECT_NEAR(algo_time_us(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, s2, 11),
              2 * tl + static_cast<double>(s2) / (1000 * tbw), 1e-3);
  // Disabled combinations cost -1.
  EXPECT_EQ(algo_time_us(t, CollKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple, s),
            -1.0);
}

TEST(NcclTuning, RingPlateauOnMultiNodeSimpleAllReduce) {
  const Tables t = tune_model(h100_nodes(2));
  const double l = t.latency(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple);
  const double bw = t.bandwidth(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple);
  // nBytes / (nChannels 16 x nRanks 16) >= 64, i.e. from 16 KiB: latency x 1.4 (sm80+).
  const std::int64_t big = 16 * 16 * 64;
  EXPECT_NEAR(algo_time_us(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, big),
              1.4 * l + static_cast<double>(big) / (1000 * bw), 1e-3);
  EXPECT_NEAR(algo_time_us(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, big - 1),
              l + static_cast<double>(big - 1) / (1000 * bw), 1e-3);
  EXPECT_NEAR(1.4 * l, 184.24, 1e-3);  // §2.6: "131.6 (x1.4 = 184.2 once on the plateau)"
}

// ---- NCCL's choice (§2.7, §1.3-1.5) -----------------------------------------------------------

TEST(NcclDefault, H100NodePicksNvlsForLargeAllReduce) {
  const Tables t = tune_model(h100_node());
  const Choice c = choose(t, CollKind::kAllReduce, kGiB);
  EXPECT_EQ(c.config.algo, Algorithm::kNvls);
  EXPECT_EQ(c.config.proto, Protocol::kSimple);
  EXPECT_EQ(c.config.transport, Transport::kP2pNvlink);
  // NVLS runs comm->nvlsChannels (16) CTAs of NCCL_MAX_NTHREADS (640) threads.
  EXPECT_EQ(c.config.nchannels, 16);
  EXPECT_EQ(c.config.nthreads, 640);
  // Chunk: min(stepSize 512 KiB, NCCL_NVLS_CHUNKSIZE 128 KiB); a channel's share (1 GiB / 16 =
  // 64 MiB) is not below 64 x nHeads(8) x 128 KiB = 64 MiB, so no shrinking.
  EXPECT_EQ(c.config.chunk_bytes, 128 * kKiB);
  const double expected =
      25.0 + static_cast<double>(kGiB) /
                 (1000 * t.bandwidth(CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple));
  EXPECT_NEAR(c.predicted_us, expected, 1e-4 * expected);
}

TEST(NcclDefault, SmallMessagesPickLlWithOneChannel) {
  const CommConfig c = default_config(h100_node(), CollKind::kAllReduce, 8);
  EXPECT_EQ(c.algo, Algorithm::kRing);
  EXPECT_EQ(c.proto, Protocol::kLL);
  // 8 B < nc x 512 thr x (8 x nRanks) for every nc >= 2: one channel; then threads halve while
  // a multiple of 128 (512 -> 256 -> 128 -> 64) and are raised to the 3-warp minimum.
  EXPECT_EQ(c.nchannels, 1);
  EXPECT_EQ(c.nthreads, 96);
  EXPECT_EQ(c.chunk_bytes, 32 * kKiB);  // LL: stepSize 64 KiB / 2
  EXPECT_FALSE(why_illegal(h100_node(), CollKind::kAllReduce, c).has_value());
}

TEST(NcclDefault, ChannelReductionFollowsThreadThresholds) {
  const Tables t = tune_model(h100_node());
  // Ring/LL: threshold 8 x nRanks = 64 B per thread; 512 threads. Expected nc: start from 24 and
  // decrease while nBytes < nc x 512 x 64; expected nt: halve while nBytes < nc x nt x 64 and
  // nt % 128 == 0; at least 96.
  for (std::int64_t bytes : {4 * kKiB, 32 * kKiB, 96 * kKiB, 256 * kKiB, 512 * kKiB}) {
    int nc = 24;
    while (bytes < static_cast<std::int64_t>(nc) * 512 * 64 && nc >= 2) {
      --nc;
    }
    int nt = 512;
    while (bytes < static_cast<std::int64_t>(nc) * nt * 64 && nt % 128 == 0) {
      nt /= 2;
    }
    nt = std::max(nt, 96);
    const CommConfig c =
        config_for(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL, bytes);
    EXPECT_EQ(c.nthreads, nt) << bytes;
    // The cells of 16 KiB traffic (x4 for LL, x2 for AllReduce: 2 KiB of data) fill nc channels.
    EXPECT_EQ(c.nchannels, std::min<std::int64_t>(nc, std::max<std::int64_t>(1, bytes / 2048)))
        << bytes;
  }
  // 256 KiB is the first size using 8 channels: 256 KiB = 8 x 512 x 64.
  EXPECT_EQ(choose(t, CollKind::kAllReduce, 256 * kKiB).max_channels, 8);
  EXPECT_EQ(choose(t, CollKind::kAllReduce, 256 * kKiB).config.proto, Protocol::kLL);
}

TEST(NcclDefault, RingSimpleUsesTheTwoMegabyteChunk) {
  // 1 GiB AllGather on the H100 node: Ring/Simple (NVLS AllGather has no x2 and loses).
  const CommConfig c = default_config(h100_node(), CollKind::kAllGather, kGiB);
  EXPECT_EQ(c.algo, Algorithm::kRing);
  EXPECT_EQ(c.proto, Protocol::kSimple);
  EXPECT_EQ(c.nchannels, 24);
  EXPECT_EQ(c.nthreads, 512 + 32);  // the extra sync warp
  // chunk = (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8) x CHUNKSTEPS 4 = 2 MiB.
  EXPECT_EQ(c.chunk_bytes, 4 * kMiB / 8 * 4);
  // Broadcast uses CHUNKSTEPS 1: 512 KiB.
  const CommConfig b = default_config(h100_node(), CollKind::kBroadcast, kGiB);
  EXPECT_EQ(b.algo, Algorithm::kRing);
  EXPECT_EQ(b.proto, Protocol::kSimple);
  EXPECT_EQ(b.chunk_bytes, 512 * kKiB);
  // A larger NCCL_BUFFSIZE scales it.
  CommInfo big = h100_node();
  big.env.buffsize_bytes = 8 * kMiB;
  EXPECT_EQ(default_config(big, CollKind::kAllGather, kGiB).chunk_bytes, 4 * kMiB);
}

TEST(NcclDefault, ProtocolChunkSizes) {
  const Tables t = tune_model(h100_node());
  // LL128: stepSize 614400 B of lines; 15 of 16 u64 carry data: 576000 B, a multiple of the
  // 3840 B grain.
  const CommConfig l128 =
      config_for(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kLL128, 64 * kMiB);
  EXPECT_EQ(l128.chunk_bytes, 4915200 / 8 / 16 * 15);
  EXPECT_EQ(l128.chunk_bytes % 3840, 0);
  EXPECT_EQ(l128.nthreads, 640);
  // A 16 MiB AllGather is where Ring/LL128 wins by default.
  EXPECT_EQ(default_config(h100_node(), CollKind::kAllGather, 16 * kMiB).proto, Protocol::kLL128);
}

TEST(NcclDefault, NvlsChunkShrinksWithTheChannelShare) {
  const Tables t = tune_model(h100_node());
  // 2 MiB AllReduce on NVLS: 16 channels, 128 KiB each; with nHeads 8:
  //   128 KiB < 64 x 8 x 128 KiB -> 64 KiB; < 8 x 8 x 64 KiB -> 32 KiB; < 2 x 8 x 32 KiB -> 16 KiB.
  auto expected_chunk = [](std::int64_t share) {
    std::int64_t chunk = 128 * kKiB;
    const std::int64_t ops = 8;
    if (share < 64 * ops * chunk && chunk > 65536) {
      chunk = 65536;
    }
    if (share < 8 * ops * chunk && chunk > 32768) {
      chunk = 32768;
    }
    if (share < 2 * ops * chunk && chunk > 16384) {
      chunk = 16384;
    }
    return chunk;
  };
  for (std::int64_t bytes : {2 * kMiB, 16 * kMiB, 128 * kMiB, kGiB}) {
    const CommConfig c =
        config_for(t, CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple, bytes);
    EXPECT_EQ(c.nchannels, 16) << bytes;
    EXPECT_EQ(c.chunk_bytes, expected_chunk(bytes / 16)) << bytes;
  }
  EXPECT_EQ(default_config(h100_node(), CollKind::kAllReduce, 2 * kMiB).algo, Algorithm::kNvls);
}

TEST(NcclDefault, TwoNodesPickTreeLlForTinyAndNvlsTreeForLarge) {
  const Tables t = tune_model(h100_nodes(2));
  const CommConfig tiny = choose(t, CollKind::kAllReduce, 8).config;
  EXPECT_EQ(tiny.algo, Algorithm::kTree);  // 25.2 us < Ring/LL 40.0 us
  EXPECT_EQ(tiny.proto, Protocol::kLL);
  EXPECT_EQ(tiny.nthreads, 640);  // Tree always runs NCCL_MAX_NTHREADS
  EXPECT_EQ(tiny.transport, Transport::kNet);
  const CommConfig large = choose(t, CollKind::kAllReduce, kGiB).config;
  EXPECT_EQ(large.algo, Algorithm::kNvlsTree);
  EXPECT_EQ(large.nchannels, 16);
  EXPECT_EQ(large.chunk_bytes, 128 * kKiB);
  // Tree/LL128 (2 MiB): chunk 576000 halves while share / chunk < nstepsLL128 x {64, 16} / ppn,
  // nstepsLL128 = 1 + log2(2) + 0.1 x 8 = 2.8; the share is 2 MiB / 16 channels = 128 KiB.
  const CommConfig mid =
      config_for(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL128, 2 * kMiB);
  std::int64_t chunk = 576000;
  const std::int64_t share = 2 * kMiB / 16;
  while (static_cast<double>(share / chunk) < 2.8 * 64 / 8 && chunk > 131072) {
    chunk /= 2;
  }
  while (static_cast<double>(share / chunk) < 2.8 * 16 / 8 && chunk > 32768) {
    chunk /= 2;
  }
  EXPECT_EQ(mid.chunk_bytes, chunk / 3840 * 3840);
  EXPECT_EQ(mid.nchannels, 16);
}

TEST(NcclDefault, PatForAllGatherWithOneGpuPerNode) {
  const Tables t = tune_model(one_gpu_per_node());
  const CommConfig c =
      config_for(t, CollKind::kAllGather, Algorithm::kPat, Protocol::kSimple, 256 * kKiB);
  EXPECT_EQ(c.nthreads, 640);
  // PAT AllGather chunk: 512 KiB halved while chunk x nCh(1) x 32 > share (floor 64 KiB).
  EXPECT_EQ(c.chunk_bytes, 64 * kKiB);
}

TEST(NcclDefault, TunerPluginChannelOverride) {
  const Tables t = tune_model(h100_node());
  // A plugin's nChannels replaces nMaxChannels; the cells then spread over that many channels.
  const CommConfig c = config_for(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple,
                                  kGiB, /*plugin_nchannels=*/4);
  EXPECT_EQ(c.nchannels, 4);
  EXPECT_EQ(c.chunk_bytes, 2 * kMiB);
}

TEST(NcclDefault, OneRankIsALocalCopy) {
  CommInfo c = h100_node();
  c.nranks = 1;
  const Choice one = choose(tune_model(c), CollKind::kAllReduce, kMiB);
  EXPECT_EQ(one.config.algo, Algorithm::kRing);
  EXPECT_EQ(one.config.nchannels, 1);
  EXPECT_EQ(one.predicted_us, 0.0);
}

TEST(NcclDefault, NegativeBytesAreAnError) {
  EXPECT_NE(
      error_of([] { default_config(h100_node(), CollKind::kAllReduce, -1); }).find("negative"),
      std::string::npos);
}

TEST(NcclDefault, PointToPoint) {
  // Send/recv on NVLink: LL while bytes <= p2pnChannelsPerPeer (32) x 16 KiB = 512 KiB.
  const Tables t = tune_model(h100_node());
  const CommConfig small = choose(t, CollKind::kSendRecv, 4 * kKiB).config;
  EXPECT_EQ(small.proto, Protocol::kLL);
  EXPECT_EQ(small.algo, Algorithm::kRing);
  EXPECT_EQ(small.nthreads, 640);
  EXPECT_EQ(small.chunk_bytes, 524288 / 8 / 2);  // LL step 64 KiB, half of it data
  EXPECT_EQ(small.nchannels, 1);
  const CommConfig big = choose(t, CollKind::kSendRecv, kGiB).config;
  EXPECT_EQ(big.proto, Protocol::kSimple);
  EXPECT_EQ(big.chunk_bytes, 512 * kKiB);  // NCCL_P2P_NVL_CHUNKSIZE
  // Parts: start at nChannelsMin = 4 (halved from 32 while x 8 ranks > 32 p2p channels), then
  // double while the part exceeds 32 x stepSize (16 MiB) and channels <= 32 / 2.
  int nch = 4;
  std::int64_t part = kGiB / nch;
  while (part > 32 * 512 * kKiB && nch <= 16) {
    nch *= 2;
    part = kGiB / nch;
  }
  EXPECT_EQ(big.nchannels, nch);
  EXPECT_FALSE(why_illegal(h100_node(), CollKind::kSendRecv, big).has_value());
  // Across nodes the network connection has no LL buffers: Simple, 128 KiB steps, /4 below a
  // step and /2 below 8 steps.
  const Tables m = tune_model(h100_nodes(2));
  const CommConfig net_small = choose(m, CollKind::kSendRecv, 4 * kKiB).config;
  EXPECT_EQ(net_small.proto, Protocol::kSimple);
  EXPECT_EQ(net_small.chunk_bytes, 128 * kKiB / 4);
  EXPECT_EQ(choose(m, CollKind::kSendRecv, 512 * kKiB).config.chunk_bytes, 64 * kKiB);
  EXPECT_EQ(choose(m, CollKind::kSendRecv, 4 * kMiB).config.chunk_bytes, 128 * kKiB);
  // AllToAll sends nbytes / nRanks to each peer; its CTAs are the union over all peers.
  const CommConfig a2a = choose(t, CollKind::kAllToAll, 64 * kMiB).config;
  EXPECT_EQ(a2a.proto, Protocol::kSimple);  // 8 MiB per peer > 512 KiB
  EXPECT_EQ(a2a.nchannels, 32);
}

// A plan that pins the p2p path's protocol (LL where NCCL runs Simple, or the reverse) gets the
// chunk NCCL sizes for that protocol, not the other's: LL's buffer holds far less than Simple's
// 512 KiB p2p chunk. (Pinning only the protocol used to keep Simple's chunk and fail the
// legality check, which stopped `lagom tune` of every MoE step on dgx-h100 in NCCL's space.)
TEST(NcclP2p, APinnedProtocolGetsItsOwnChunk) {
  const auto has = [](const std::string& msg, const char* word) {
    return msg.find(word) != std::string::npos;
  };
  const auto why = [](const CommInfo& info, CollKind coll, const CommConfig& c) {
    return why_illegal(info, coll, c).value_or("");
  };
  const Tables t = tune_model(h100_node());
  for (CollKind coll : {CollKind::kAllToAll, CollKind::kSendRecv}) {
    for (std::int64_t bytes : {std::int64_t{4} * kKiB, 128 * kMiB}) {
      const CommConfig own = choose(t, coll, bytes).config;
      for (Protocol p : {Protocol::kLL, Protocol::kSimple}) {
        SCOPED_TRACE(::testing::Message()
                     << to_string(coll) << " " << bytes << " " << to_string(p));
        const CommConfig pinned = resolve_config(t, coll, bytes, ConfigOverride{{}, p, 0, 0, 0});
        EXPECT_EQ(pinned.proto, p);
        EXPECT_FALSE(why_illegal(t, coll, pinned).has_value());
        if (p == own.proto) {
          EXPECT_EQ(pinned, own);  // pinning NCCL's own protocol changes nothing
        }
        EXPECT_EQ(p2p_config_for(t, coll, p, bytes).chunk_bytes, pinned.chunk_bytes);
      }
      EXPECT_LT(p2p_config_for(t, coll, Protocol::kLL, bytes).chunk_bytes,
                p2p_config_for(t, coll, Protocol::kSimple, bytes).chunk_bytes);
      // LL128 is refused by name, not run as another protocol.
      EXPECT_TRUE(
          has(error_of([&] {
                resolve_config(t, coll, bytes, ConfigOverride{{}, Protocol::kLL128, 0, 0, 0});
              }),
              "never LL128"));
    }
  }
  // Across nodes NCCL's network p2p connections have no LL buffers unless asked for, so its
  // network peers would run Simple: LL is refused there, and allowed with the buffers.
  CommInfo two = h100_nodes(2);
  const CommConfig ll = p2p_config_for(tune_model(two), CollKind::kAllToAll, Protocol::kLL, kMiB);
  EXPECT_TRUE(has(why(two, CollKind::kAllToAll, ll), "NCCL_ALLOC_P2P_NET_LL_BUFFERS"));
  two.env.alloc_p2p_net_ll_buffers = true;
  EXPECT_EQ(why(two, CollKind::kAllToAll, ll), "");
}

// ---- legality -----------------------------------------------------------------------------------

TEST(NcclLegality, EveryDefaultIsLegal) {
  for (const CommInfo& info : {h100_node(), h100_nodes(2), pcie_node(), one_gpu_per_node()}) {
    const Tables t = tune_model(info);
    for (int k = 0; k < kCollKindCount; ++k) {
      const auto coll = static_cast<CollKind>(k);
      for (std::int64_t bytes = 8; bytes <= 4 * kGiB; bytes *= 4) {
        const CommConfig c = choose(t, coll, bytes).config;
        const auto why = why_illegal(info, coll, c);
        EXPECT_FALSE(why.has_value()) << to_string(coll) << " " << bytes << ": " << *why;
      }
    }
  }
}

TEST(NcclLegality, NamesTheRuleViolated) {
  const CommInfo h = h100_node();
  const CommConfig ok{Algorithm::kRing, Protocol::kSimple, Transport::kP2pNvlink, 8, 544, 2 * kMiB};
  auto why = [](const CommInfo& info, CollKind coll, CommConfig c) {
    return why_illegal(info, coll, c).value_or("");
  };
  auto has = [](const std::string& msg, const char* word) {
    return msg.find(word) != std::string::npos;
  };
  EXPECT_EQ(why(h, CollKind::kAllReduce, ok), "");

  CommConfig c = ok;
  c.algo = Algorithm::kNvls;
  c.nthreads = 640;
  c.chunk_bytes = 128 * kKiB;
  EXPECT_EQ(why(h, CollKind::kAllReduce, c), "");
  // NVLS on PCIe / without NVSwitch.
  CommConfig nvls_pcie = c;
  nvls_pcie.transport = Transport::kP2pPcie;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, nvls_pcie), "NVLink SHARP"));
  EXPECT_TRUE(has(why(pcie_node(), CollKind::kAllReduce, c), "NVSwitch"));
  // NVLS or PAT with a protocol other than Simple.
  CommConfig nvls_ll = c;
  nvls_ll.proto = Protocol::kLL;
  nvls_ll.chunk_bytes = 32 * kKiB;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, nvls_ll), "Simple protocol only"));
  CommConfig pat_ll{Algorithm::kPat, Protocol::kLL, Transport::kNet, 4, 640, 32 * kKiB};
  EXPECT_TRUE(has(why(one_gpu_per_node(), CollKind::kAllGather, pat_ll), "Simple protocol only"));
  // PAT when not enabled (8 GPUs per node).
  CommConfig pat = ok;
  pat.algo = Algorithm::kPat;
  pat.nthreads = 640;
  EXPECT_TRUE(has(why(h, CollKind::kAllGather, pat), "PAT is not enabled"));
  EXPECT_EQ(why(one_gpu_per_node(), CollKind::kAllGather, pat), "");
  // Algorithm not allowed for the function.
  EXPECT_TRUE(has(why(one_gpu_per_node(), CollKind::kAllReduce, pat), "does not implement"));
  CommConfig tree = ok;
  tree.algo = Algorithm::kTree;
  tree.nthreads = 640;
  EXPECT_TRUE(has(why(h, CollKind::kBroadcast, tree), "does not implement"));
  EXPECT_EQ(why(h, CollKind::kAllReduce, tree), "");
  // NVLSTree on one node.
  CommConfig nvlstree = c;
  nvlstree.algo = Algorithm::kNvlsTree;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, nvlstree), "single node"));
  nvlstree.transport = Transport::kNet;
  EXPECT_EQ(why(h100_nodes(2), CollKind::kAllReduce, nvlstree), "");
  // Multi-node NVLS without collnet.
  CommConfig nvls_net = c;
  nvls_net.transport = Transport::kNet;
  EXPECT_TRUE(has(why(h100_nodes(2), CollKind::kAllReduce, nvls_net), "CollNet"));
  // LL128 where NCCL disables it.
  CommConfig ll128{Algorithm::kRing, Protocol::kLL128, Transport::kP2pPcie, 4, 640, 576000};
  EXPECT_TRUE(has(why(pcie_node(), CollKind::kAllReduce, ll128), "disables LL128"));
  ll128.transport = Transport::kP2pNvlink;
  EXPECT_EQ(why(h, CollKind::kAllReduce, ll128), "");
  // Channels outside 1..64.
  CommConfig ch = ok;
  ch.nchannels = 0;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, ch), "channels"));
  ch.nchannels = 65;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, ch), "1..64"));
  // Threads: multiple of 32, 64..640, LL128 from 160.
  CommConfig th = ok;
  th.nthreads = 500;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, th), "multiple of the warp size"));
  th.nthreads = 32;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, th), "64..640"));
  th.nthreads = 672;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, th), "64..640"));
  CommConfig th128 = ll128;
  th128.nthreads = 128;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, th128), "160..640"));
  // Chunk below the protocol grain (and above the buffer).
  CommConfig chunk = ok;
  chunk.chunk_bytes = 256;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, chunk), "grain of 512"));
  CommConfig chunk128 = ll128;
  chunk128.chunk_bytes = 3839;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, chunk128), "grain of 3840"));
  chunk.chunk_bytes = 8 * kMiB;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, chunk), "connection buffer"));
  // CollNet without collnet.
  CommConfig collnet = ok;
  collnet.algo = Algorithm::kCollNetDirect;
  collnet.nthreads = 640;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, collnet), "collnetEnable"));
  collnet.algo = Algorithm::kCollNetChain;
  EXPECT_TRUE(has(why(h, CollKind::kAllReduce, collnet), "collnetEnable"));
  // NCCL_ALGO exclusions.
  CommInfo no_ring = h;
  no_ring.env.algo = "^ring";
  EXPECT_TRUE(has(why(no_ring, CollKind::kAllReduce, ok), "NCCL_ALGO"));
  // p2p collectives: Ring schedule, LL or Simple.
  CommConfig p2p{Algorithm::kRing, Protocol::kSimple, Transport::kP2pNvlink, 4, 640, 512 * kKiB};
  EXPECT_EQ(why(h, CollKind::kAllToAll, p2p), "");
  p2p.proto = Protocol::kLL128;
  p2p.chunk_bytes = 3840 * 10;
  EXPECT_TRUE(has(why(h, CollKind::kSendRecv, p2p), "never LL128"));
  p2p.proto = Protocol::kSimple;
  p2p.algo = Algorithm::kTree;
  EXPECT_TRUE(has(why(h, CollKind::kSendRecv, p2p), "p2p path"));
}

// NCCL environment variables as a job exports them (apply_env): channel bounds combine as
// connect.cc combines them, tuning fields land where NCCL's init reads them, and a name or value
// NCCL would not know is an error that names it.
TEST(Env, SetsWhatNcclInitReads) {
  CommInfo c = h100_node();
  apply_env({{"NCCL_MAX_CTAS", "8"}}, c);
  EXPECT_EQ(resolve_comm_info(c).nchannels, 8);  // 24 capped at 8
  CommInfo two = h100_nodes(2);
  two.ring.nchannels = two.tree.nchannels = 1;  // 2 collective channels by default
  ASSERT_EQ(resolve_comm_info(two).nchannels, 2);
  apply_env({{"NCCL_MIN_CTAS", "8"}}, two);
  EXPECT_EQ(resolve_comm_info(two).nchannels, 8);
  // The deprecated NCCL_MIN_NCHANNELS raises the floor too; the larger floor wins, the smaller
  // ceiling wins.
  CommInfo both = h100_nodes(2);
  both.ring.nchannels = both.tree.nchannels = 1;
  apply_env({{"NCCL_MIN_CTAS", "4"},
             {"NCCL_MIN_NCHANNELS", "6"},
             {"NCCL_MAX_CTAS", "32"},
             {"NCCL_MAX_NCHANNELS", "5"}},
            both);
  EXPECT_EQ(both.min_ctas, 6);
  EXPECT_EQ(both.max_ctas, 5);
  EXPECT_EQ(resolve_comm_info(both).nchannels, 5);  // min > max: both become max
  CommInfo t = h100_node();
  apply_env({{"NCCL_NTHREADS", "256"},
             {"NCCL_BUFFSIZE", "8388608"},
             {"NCCL_PROTO", "^LL128"},
             {"NCCL_NET_OVERHEAD", "2500"}},
            t);
  EXPECT_EQ(t.env.nthreads, 256);
  EXPECT_EQ(t.env.buffsize_bytes, 8 * kMiB);
  EXPECT_EQ(t.env.proto, "^LL128");
  EXPECT_DOUBLE_EQ(t.env.net_overhead_us, 2.5);
  // NCCL_BUFFSIZE sets Ring/Simple's chunk (BUFFSIZE / NCCL_STEPS * ... as config_for
  // derives it): doubling the buffer doubles NCCL's large-message chunk.
  const Tables base = tune_model(resolve_comm_info(h100_node()));
  CommInfo big = h100_node();
  apply_env({{"NCCL_BUFFSIZE", std::to_string(8 * kMiB)}}, big);
  const Tables bigt = tune_model(resolve_comm_info(big));
  EXPECT_EQ(
      config_for(bigt, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, kGiB).chunk_bytes,
      2 * config_for(base, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, kGiB)
              .chunk_bytes);
}

TEST(Env, RejectsUnknownNamesAndBadValues) {
  CommInfo c = h100_node();
  const std::string unknown = error_of([&] { apply_env({{"NCCL_MIN_CTA", "8"}}, c); });
  EXPECT_NE(unknown.find("unknown NCCL environment variable 'NCCL_MIN_CTA'"), std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("NCCL_MIN_CTAS"), std::string::npos) << unknown;  // lists the known
  EXPECT_NE(error_of([&] {
              apply_env({{"NCCL_MIN_CTAS", "8x"}}, c);
            }).find("NCCL_MIN_CTAS=8x: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_env({{"NCCL_MAX_CTAS", "65"}}, c);
            }).find("NCCL_MAX_CTAS=65: must be in 1..64"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_env({{"NCCL_NTHREADS", ""}}, c);
            }).find("NCCL_NTHREADS=: expected an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace lagom::nccl
