// NCCL 2.18.3 emulation (--nccl-version 2.18): every expectation is worked here from 2.18.3's
// rules as docs/models.md §2 lists them (src/graph/tuning.cc, src/enqueue.cc, src/init.cc,
// src/graph/connect.cc of nccl@v2.18.3-1), beside what 2.28.9 does on the same communicator.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "lagom/common/error.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/env.hpp"
#include "lagom/nccl/legality.hpp"
#include "lagom/nccl/tuning.hpp"
#include "test_util.hpp"

namespace lagom::nccl::v218 {

using test::error_of;

constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMiB = 1024 * kKiB;

// One node of the paper's cluster A as NCCL 2.18.3 sees it: 8 A40s (sm86) on a dual-EPYC host,
// the ring search's 4 channels at 12 GB/s crossing the sockets (SYS).
CommInfo a40_node(Version v) {
  CommInfo c;
  c.version = v;
  c.compcap = 86;
  c.nranks = 8;
  c.nnodes = 1;
  c.cpu_vendor = CpuVendor::kAmd;
  GraphInfo g;
  g.nchannels = 4;
  g.bw_intra_GBps = 12.0;
  g.bw_inter_GBps = 12.0;
  g.type_intra = PathType::kSys;
  g.type_inter = PathType::kPix;
  c.ring = g;
  c.tree = g;
  return c;
}

// Two H100 nodes: 8 search channels at 40 GB/s, NVLS with 8 heads.
CommInfo h100_two_nodes(Version v) {
  CommInfo c;
  c.version = v;
  c.compcap = 90;
  c.nnodes = 2;
  c.nranks = 16;
  GraphInfo g;
  g.nchannels = 8;
  g.bw_intra_GBps = 40.0;
  g.bw_inter_GBps = 40.0;
  g.type_intra = PathType::kNvl;
  g.type_inter = PathType::kPix;
  c.ring = g;
  c.tree = g;
  c.nvls.nchannels = 8;
  c.nvls.bw_intra_GBps = 40.0;
  c.nvls.bw_inter_GBps = 60.0;
  c.nvls_support = true;
  c.has_nvswitch = true;
  return c;
}

double bw(const Tables& t, CollKind c, Algorithm a, Protocol p) {
  return t.bandwidth(c, a, p);
}
double lat(const Tables& t, CollKind c, Algorithm a, Protocol p) {
  return t.latency(c, a, p);
}

TEST(Nccl218, VersionsByName) {
  EXPECT_EQ(version_named("2.18"), Version::k2_18);
  EXPECT_EQ(version_named("2.18.3"), Version::k2_18);
  EXPECT_EQ(version_named("2.28.9"), Version::k2_28);
  EXPECT_EQ(to_string(Version::k2_18), "2.18");
  EXPECT_EQ(max_channels(Version::k2_18), 32);
  EXPECT_EQ(max_channels(Version::k2_28), 64);
  const std::string e = error_of([] { version_named("2.19"); });
  EXPECT_NE(e.find("'2.19'"), std::string::npos) << e;
  EXPECT_NE(e.find("2.18"), std::string::npos) << e;
  EXPECT_NE(e.find("2.28"), std::string::npos) << e;
}

TEST(Nccl218, InitDoublesTheSearchChannelsWithinItsMaxChannels) {
  // ncclTopoPostset: 2 x 4 = 8 on cluster A (the paper's NC = 8). MIN/MAX_CTAS are capped at
  // 2.18's MAXCHANNELS of 32.
  EXPECT_EQ(resolve_comm_info(a40_node(Version::k2_18)).nchannels, 8);
  CommInfo big = a40_node(Version::k2_18);
  big.ring.nchannels = big.tree.nchannels = 16;
  EXPECT_EQ(resolve_comm_info(big).nchannels, 32);
  big.version = Version::k2_28;
  EXPECT_EQ(resolve_comm_info(big).nchannels, 32);
  big.ring.nchannels = big.tree.nchannels = 24;
  EXPECT_EQ(resolve_comm_info(big).nchannels, 48);
  big.version = Version::k2_18;
  EXPECT_EQ(resolve_comm_info(big).nchannels, 32);
  CommInfo ctas = a40_node(Version::k2_18);
  ctas.min_ctas = 40;
  ctas.max_ctas = 64;
  const CommInfo r = resolve_comm_info(ctas);
  EXPECT_EQ(r.max_ctas, 32);
  EXPECT_EQ(r.nchannels, 32);  // raised to minCTAs = 32
  // sm90 across nodes: 2.18 doubles again only for compcap 90 while 2 nc fits in 32 (8 -> 16 ->
  // 32); 2.28 only while nc < 16 (16 stays).
  CommInfo h = h100_two_nodes(Version::k2_18);
  h.ring.bw_intra_GBps = h.tree.bw_intra_GBps = 48.0;
  EXPECT_EQ(resolve_comm_info(h).nchannels, 32);
  h.version = Version::k2_28;
  EXPECT_EQ(resolve_comm_info(h).nchannels, 16);
  // p2p: across nodes 2.18 gives each peer 2 channels without 2.28's halving by rank count.
  CommInfo p = h100_two_nodes(Version::k2_18);
  p.nranks = 64;
  p.nnodes = 8;
  EXPECT_EQ(resolve_comm_info(p).p2p_nchannels_per_peer, 2);
  p.version = Version::k2_28;
  EXPECT_EQ(resolve_comm_info(p).p2p_nchannels_per_peer, 1);
}

TEST(Nccl218, ClusterABandwidthsFollowTwoEighteensRefinements) {
  const Tables t = tune_model(a40_node(Version::k2_18));
  const double b = 4 * 12.0;  // search channels x bwIntra
  const double ar = 8.0 / 14.0;
  const double ag = 8.0 / 7.0;
  const double tol = 1e-3;
  EXPECT_NEAR(bw(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), b * ar, tol);
  // Ring LL: a quarter for AllReduce (and across nodes), a third for a one-node AllGather; the
  // cap llMaxBws[Ampere][1 node] = 87.7 does not bind.
  EXPECT_NEAR(bw(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL), b / 4 * ar, tol);
  EXPECT_NEAR(bw(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kLL), b / 3 * ag, tol);
  // 2.28 halves it for every function.
  const Tables n = tune_model(a40_node(Version::k2_28));
  EXPECT_NEAR(bw(n, CollKind::kAllGather, Algorithm::kRing, Protocol::kLL), b / 2 * ag, tol);
  // Tree AllReduce: min(0.92 B, nCh x perChMaxTreeBw[Ampere][1 node] = 24.0), x 0.5.
  EXPECT_NEAR(bw(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple),
              std::min(0.92 * b, 4 * 24.0) * 0.5, tol);
  // Only AllReduce has Tree (and CollNet/NVLS); PAT does not exist.
  EXPECT_EQ(bw(t, CollKind::kAllGather, Algorithm::kPat, Protocol::kSimple), 0);
  EXPECT_EQ(bw(n, CollKind::kReduceScatter, Algorithm::kRing, Protocol::kLL128), 0);  // SYS
}

TEST(Nccl218, ClusterALatenciesUseTwoEighteensConstants) {
  const Tables t = tune_model(a40_node(Version::k2_18));
  const Tables n = tune_model(a40_node(Version::k2_28));
  // Ring AllReduce over PCI (the ring's paths are SYS): 8.4 + 14 x 5.7, the same in both.
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), 8.4 + 14 * 5.7,
              1e-4);
  // Tree Simple: no base latency in 2.18 and 6 us per PCI hop: 2 x 7 x 6 = 84 (2.28: 8.4 +
  // 2 x 7 x 4.0 = 64.4).
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple), 84.0, 1e-4);
  EXPECT_NEAR(lat(n, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple), 64.4, 1e-4);
}

TEST(Nccl218, TwoNodesCountTwoNNodesNetworkStepsAndNvlsUsesFixedRatios) {
  const Tables t = tune_model(h100_two_nodes(Version::k2_18));
  // Ring AllReduce Simple: nInterSteps = 2 nNodes = 4 of 2(n-1) = 30 steps; intra hops at
  // max(3.4, 3 x 1.0 net overhead), network hops at 14.
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple),
              8.4 + 26 * 3.4 + 4 * 14.0, 1e-3);
  // NVLSTree: 23 + 2 (nNodes - 1) x 19; bandwidth 8 x 40 x 0.7 nNodes / (2 (nNodes - 1)).
  EXPECT_NEAR(lat(t, CollKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple), 23.0 + 38.0,
              1e-4);
  EXPECT_NEAR(bw(t, CollKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple),
              8 * 40.0 * 0.7 * 2 / 2, 1e-3);
}

TEST(Nccl218, Ll128IsOffOnAnA40AndPatDoesNotExist) {
  // An sm86 pair on NVLink: 2.28 enables LL128, 2.18 only on sm70, sm80 and sm90.
  CommInfo c = a40_node(Version::k2_28);
  c.nranks = 2;
  c.ring.type_intra = c.tree.type_intra = PathType::kNvl;
  const CommConfig ll128{Algorithm::kRing, Protocol::kLL128, Transport::kP2pNvlink, 2, 640,
                         3840 * 10};
  EXPECT_FALSE(why_illegal(c, CollKind::kAllReduce, ll128).has_value());
  c.version = Version::k2_18;
  const auto why = why_illegal(c, CollKind::kAllReduce, ll128);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("NCCL 2.18 disables LL128"), std::string::npos) << *why;
  // Channels past 2.18's MAXCHANNELS, Tree for AllGather and PAT are refused, naming 2.18.
  const CommInfo a = a40_node(Version::k2_18);
  const auto too_many = why_illegal(
      a, CollKind::kAllReduce,
      CommConfig{Algorithm::kRing, Protocol::kSimple, Transport::kP2pPcie, 33, 512, 2 * kMiB});
  ASSERT_TRUE(too_many.has_value());
  EXPECT_NE(too_many->find("1..32"), std::string::npos) << *too_many;
  const auto tree_ag = why_illegal(
      a, CollKind::kAllGather,
      CommConfig{Algorithm::kTree, Protocol::kSimple, Transport::kP2pPcie, 2, 512, 512 * kKiB});
  ASSERT_TRUE(tree_ag.has_value());
  EXPECT_NE(tree_ag->find("NCCL 2.18 does not implement Tree for AllGather"), std::string::npos)
      << *tree_ag;
  EXPECT_TRUE(why_illegal(a, CollKind::kAllGather,
                          CommConfig{Algorithm::kPat, Protocol::kSimple, Transport::kP2pPcie, 2,
                                     512, 512 * kKiB})
                  .has_value());
}

TEST(Nccl218, NcclsChoiceOnClusterAIsThePapersBaseline) {
  // A 64 MiB all-reduce: Ring/Simple on all 8 channels with 2 MiB chunks (the paper's NC = 8,
  // C = 2 MB); 2.18 runs every channel on the whole buffer, with no 16 KiB cells.
  const Tables t = tune_model(a40_node(Version::k2_18));
  const CommConfig c = choose(t, CollKind::kAllReduce, 64 * kMiB).config;
  EXPECT_EQ(c.algo, Algorithm::kRing);
  EXPECT_EQ(c.proto, Protocol::kSimple);
  EXPECT_EQ(c.nchannels, 8);
  EXPECT_EQ(c.chunk_bytes, 2 * kMiB);
  EXPECT_EQ(c.nthreads, 512 + 32);
  // Channels fall while nBytes < nc x nt x 64 (the Simple threshold): 256 KiB on Ring/Simple
  // keeps 8 (8 x 512 x 64 = 256 KiB), 128 KiB drops to 4.
  EXPECT_EQ(config_for(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 256 * kKiB)
                .nchannels,
            8);
  EXPECT_EQ(config_for(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 128 * kKiB)
                .nchannels,
            4);
  // LL: the raw 64 KiB step halved, not rounded to a grain; Tree keeps its 512 + 128 threads.
  EXPECT_EQ(
      config_for(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL, 64 * kMiB).chunk_bytes,
      32 * kKiB);
  EXPECT_EQ(
      config_for(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 64 * kMiB).nthreads,
      640);
  // Tree/Simple shrinks with the tree depth d = ppn - 1 + log2 nNodes = 7: 16 MiB / (8 channels
  // x chunk) is below 8 d = 56 from 512 KiB down to the 128 KiB floor of that loop, then below
  // 4 d = 28 at 128 KiB (16) -> 64 KiB (32), which the third loop (below d) keeps.
  EXPECT_EQ(config_for(t, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 16 * kMiB)
                .chunk_bytes,
            64 * kKiB);
}

TEST(Nccl218, PointToPointPiecesFollowTheP2pChunkAlone) {
  // 8 H100s on NVSwitch, 2.18: 24 channels -> 32 p2p channels, 32 per peer. A 64 KiB send is
  // one 64 KiB piece (the minimum, 512 KiB / 8) and, above 16 KiB a piece, Simple; 2.28 sends
  // it as LL (64 KiB <= 32 per peer x 16 KiB).
  CommInfo c = h100_two_nodes(Version::k2_18);
  c.nnodes = 1;
  c.nranks = 8;
  c.ring.nchannels = c.tree.nchannels = 12;
  c.all_nvlink = true;
  const CommConfig s = choose(tune_model(c), CollKind::kSendRecv, 64 * kKiB).config;
  EXPECT_EQ(s.proto, Protocol::kSimple);
  EXPECT_EQ(s.nchannels, 1);
  EXPECT_EQ(s.chunk_bytes, 512 * kKiB);
  c.version = Version::k2_28;
  EXPECT_EQ(choose(tune_model(c), CollKind::kSendRecv, 64 * kKiB).config.proto, Protocol::kLL);
  // 1 MiB: 4 pieces of 256 KiB (nChannelsMin 32 -> 4 while x 8 ranks > 32).
  c.version = Version::k2_18;
  EXPECT_EQ(choose(tune_model(c), CollKind::kSendRecv, kMiB).config.nchannels, 4);
}

TEST(Nccl218, EnvironmentOfTwoEighteen) {
  CommInfo c = a40_node(Version::k2_18);
  for (const char* name : {"NCCL_PAT_ENABLE", "NCCL_LL128_C2C", "NCCL_NVLS_CHUNKSIZE"}) {
    const std::string e = error_of([&] { apply_env({{name, "1"}}, c); });
    EXPECT_NE(e.find("does not exist in NCCL 2.18"), std::string::npos) << name << ": " << e;
  }
  CommInfo per_coll = a40_node(Version::k2_18);
  per_coll.env.algo = "allreduce:ring";
  EXPECT_NE(error_of([&] { tune_model(per_coll); }).find("one plain list"), std::string::npos);
  CommInfo pat = a40_node(Version::k2_18);
  pat.env.algo = "ring,pat";
  EXPECT_NE(error_of([&] { tune_model(pat); }).find("no PAT"), std::string::npos);
  // NCCL_ALGO=Tree never disables Ring outside AllReduce in 2.18 (an AllGather still runs).
  CommInfo tree = a40_node(Version::k2_18);
  tree.env.algo = "tree";
  const Tables t = tune_model(tree);
  EXPECT_GT(bw(t, CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple), 0);
  EXPECT_EQ(bw(t, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple), 0);
  tree.version = Version::k2_28;
  EXPECT_EQ(bw(tune_model(tree), CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple), 0);
}

TEST(Nccl218, EveryDefaultIsLegal) {
  for (const CommInfo& info : {a40_node(Version::k2_18), h100_two_nodes(Version::k2_18)}) {
    const Tables t = tune_model(info);
    for (int k = 0; k < kCollKindCount; ++k) {
      const auto coll = static_cast<CollKind>(k);
      for (std::int64_t bytes = 8; bytes <= 4 * 1024 * kMiB; bytes *= 4) {
        const CommConfig c = choose(t, coll, bytes).config;
        const auto why = why_illegal(info, coll, c);
        EXPECT_FALSE(why.has_value()) << to_string(coll) << " " << bytes << ": " << *why;
      }
    }
  }
}

}  // namespace lagom::nccl::v218
