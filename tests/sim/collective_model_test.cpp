// Physical sanity of the collective cost model: every expectation is derived here from how the
// algorithms move bytes (reference/nccl.md §1, §4.3) and from the profile's own parameters.
#include "lagom/sim/collective_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "lagom/common/error.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/legality.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using nccl::Algorithm;
using nccl::CollKind;
using nccl::CommConfig;
using nccl::kAlgorithmCount;
using nccl::kProtocolCount;
using nccl::Protocol;

using nccl::LinkClass;
using nccl::Protocol;
using test::error_of;

constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMiB = 1024 * kKiB;
constexpr std::int64_t kGiB = 1024 * kMiB;

// 8 B .. 16 GiB by x2, as nccl-tests' -b 8 -e 16G -f 2.
std::vector<std::int64_t> sizes() {
  std::vector<std::int64_t> out;
  for (std::int64_t s = 8; s <= 16 * kGiB; s *= 2) {
    out.push_back(s);
  }
  return out;
}

constexpr CollKind kAllKinds[] = {
    CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kBroadcast,
    CollKind::kReduce,    CollKind::kAllToAll,  CollKind::kSendRecv};

// One communicator over every GPU of a preset, with the built-in profile for its GPU and what
// NCCL would know about it.
struct Machine {
  std::string name;
  topologies::Cluster cluster;
  topologies::CommunicatorInfo comm;
  hardware::HardwareProfile profile;
  nccl::CommInfo info;
  nccl::Tables tables;

  Machine(const char* preset, int nodes)
      : name(std::string(preset) + " x" + std::to_string(nodes)),
        cluster(topologies::load_cluster(preset, nodes)) {
    std::vector<int> ranks(static_cast<std::size_t>(cluster.gpu_count()));
    std::iota(ranks.begin(), ranks.end(), 0);
    comm = topologies::describe_communicator(cluster, ranks);
    profile = hardware::default_profile_for_gpu(cluster.spec().gpu_type);
    info = nccl_comm_info(cluster, comm);
    tables = nccl::tune_model(info);
  }
  // The model refers to `profile`: build it where the Machine lives.
  CollectiveModel model() const { return CollectiveModel(profile, comm); }
  bool nvswitch() const {
    return cluster.spec().intra_node.kind == topologies::IntraNodeKind::kNvSwitch;
  }
};

// The four machines of the brief; built once (a deque never moves its elements, so models that
// refer to a Machine's profile stay valid).
const std::deque<Machine>& machines() {
  static const std::deque<Machine> all = [] {
    std::deque<Machine> s;
    s.emplace_back("dgx-h100", 1);
    s.emplace_back("dgx-h100", 2);
    s.emplace_back("a40-pcie", 1);
    s.emplace_back("dgx-a100", 1);
    return s;
  }();
  return all;
}
const Machine& h100_node() {
  return machines()[0];
}
const Machine& h100_two_nodes() {
  return machines()[1];
}

// The (algorithm, protocol) pairs NCCL's model enables for `kind` here (a zero bandwidth marks a
// disabled pair, reference/nccl.md §2.3); p2p collectives run Ring (our convention) with LL or
// Simple.
std::vector<std::pair<Algorithm, Protocol>> legal_pairs(const Machine& s, CollKind kind) {
  std::vector<std::pair<Algorithm, Protocol>> out;
  if (!is_tuned(kind)) {
    out.emplace_back(Algorithm::kRing, Protocol::kLL);
    out.emplace_back(Algorithm::kRing, Protocol::kSimple);
    return out;
  }
  for (int a = 0; a < kAlgorithmCount; ++a) {
    for (int p = 0; p < kProtocolCount; ++p) {
      const auto algo = static_cast<Algorithm>(a);
      const auto proto = static_cast<Protocol>(p);
      if (s.tables.bandwidth(kind, algo, proto) > 0) {
        out.emplace_back(algo, proto);
      }
    }
  }
  return out;
}

// Fixed configurations for `kind`: for every legal pair, what NCCL runs it with (channels,
// threads, chunk) at 8 B, 1 MiB and 1 GiB; for p2p collectives NCCL's own choice at those sizes.
std::vector<CommConfig> fixed_configs(const Machine& s, CollKind kind) {
  std::vector<CommConfig> out;
  for (std::int64_t anchor : {std::int64_t{8}, kMiB, kGiB}) {
    if (!is_tuned(kind)) {
      out.push_back(nccl::default_config(s.info, kind, anchor));
      continue;
    }
    for (const auto& [algo, proto] : legal_pairs(s, kind)) {
      out.push_back(nccl::config_for(s.tables, kind, algo, proto, anchor));
    }
  }
  return out;
}

std::string describe(const Machine& s, CollKind kind, std::int64_t bytes, const CommConfig& c) {
  return s.name + " " + std::string(to_string(kind)) + " " + std::to_string(bytes) + " B " +
         to_string(c);
}

// --- Size ---------------------------------------------------------------------------------------

// With channels, threads and chunk fixed, every term of the model is non-decreasing in S: launch
// and hop latencies do not depend on it, the chunk-step counts are ceilings of S / (nc n C) or
// S / (nc C), the bytes through the bottleneck are proportional to S and the pipeline fill to
// min(C, S / nc). So doubling the size never makes a collective faster.
TEST(CollectiveModel, TimeNeverDecreasesWithSizeForAFixedConfig) {
  for (const Machine& s : machines()) {
    const CollectiveModel m = s.model();
    for (CollKind kind : kAllKinds) {
      for (const CommConfig& c : fixed_configs(s, kind)) {
        ASSERT_EQ(nccl::why_illegal(s.info, kind, c), std::nullopt) << describe(s, kind, 0, c);
        double prev = 0;
        for (std::int64_t bytes : sizes()) {
          const double t = m.estimate(kind, bytes, c).time_us;
          EXPECT_GE(t, prev) << describe(s, kind, bytes, c);
          prev = t;
        }
      }
    }
  }
}

// The same for every configuration NCCL's default picks: the config NCCL runs at 2S, given S
// bytes, is not slower than at 2S. Where the default sequence itself gets faster from S to 2S
// (the disabled test below), it is therefore always because NCCL switched to a configuration the
// model rates faster, never because one configuration got faster with more bytes.
TEST(CollectiveModel, NcclDefaultsGetFasterOnlyWhereNcclSwitchesConfig) {
  for (const Machine& s : machines()) {
    const CollectiveModel m = s.model();
    for (CollKind kind : kAllKinds) {
      CommConfig prev_config;
      double prev = 0;
      for (std::int64_t bytes : sizes()) {
        const CommConfig c = nccl::default_config(s.info, kind, bytes);
        ASSERT_EQ(nccl::why_illegal(s.info, kind, c), std::nullopt) << describe(s, kind, bytes, c);
        const double t = m.estimate(kind, bytes, c).time_us;
        EXPECT_LE(m.estimate(kind, bytes / 2, c).time_us, t) << describe(s, kind, bytes, c);
        if (t < prev) {
          EXPECT_NE(c, prev_config) << describe(s, kind, bytes, c);
        }
        prev = t;
        prev_config = c;
      }
    }
  }
}

// The property one expects, and what real nccl-tests logs show to within noise: NCCL's default
// time never decreases with size. The model breaks it today in two ways:
//  * at NCCL's protocol/algorithm switch points the model rates the next configuration faster
//    than NCCL does, e.g. on one H100 node AllReduce takes longer at 1 MiB on Ring/LL than at
//    2 MiB on NVLS (the prior nvls_step_us = 1 us against NCCL's 25 us NVLS latency); on PCIe
//    A40s AllReduce/AllGather/ReduceScatter at 1 MiB (LL) take longer than at 2 MiB (Simple),
//    AllToAll at 256 vs 512 KiB; Send/Recv 1 MiB (LL) vs 2 MiB (Simple) on H100 and A100, 32 vs
//    64 KiB on A40; on 2 x 8 H100 AllReduce at 256 KiB (Tree/LL) vs 512 KiB (Tree/LL128) and
//    2 MiB (Tree/LL128) vs 4 MiB (NVLSTree);
//  * the pipeline fill, (depth - 1) chunk times, is charged at chunk granularity for LL and
//    LL128 too, although those protocols forward every 16-byte (LL) or 128-byte (LL128) line as
//    soon as it arrives. On 2 x 8 H100 a chain Broadcast/Reduce of 32 KiB (one 32 KiB chunk
//    through 15 hops, LL at 256 threads: 1.5 GB/s per channel) is charged about 300 us of fill,
//    more than the 64 KiB one at 512 threads; 1 MiB on LL is slower than 2 MiB on LL128.
// Enable it when the LL/LL128 fill and the NVLS/LL priors are revisited.
TEST(CollectiveModel, DISABLED_NcclDefaultTimeNeverDecreasesWithSize) {
  for (const Machine& s : machines()) {
    const CollectiveModel m = s.model();
    for (CollKind kind : kAllKinds) {
      double prev = 0;
      for (std::int64_t bytes : sizes()) {
        const CommConfig c = nccl::default_config(s.info, kind, bytes);
        const double t = m.estimate(kind, bytes, c).time_us;
        EXPECT_GE(t, prev) << describe(s, kind, bytes, c);
        prev = t;
      }
    }
  }
}

// --- Bandwidth ----------------------------------------------------------------------------------

// Bytes one schedule must move, per direction: through a GPU's intra-node links (averaged over
// the GPUs of a node where the schedule loads them unevenly) and through a node's NICs.
struct Volume {
  double gpu_intra = 0;
  double node_net = 0;
};

// n ranks on N nodes, ppn per node, S bytes (nccl-tests' size column):
//  * Ring: every rank sends factor * S to its successor, factor = 2(n-1)/n for AllReduce and
//    (n-1)/n for AllGather/ReduceScatter (the nccl-tests busbw factor, reference/nccl.md §4.3).
//    Each ring enters and leaves a node once, so a node's NICs send factor * S, and of a node's
//    ppn ring edges ppn - 1 stay inside it (all n on one node).
//  * Chain Broadcast/Reduce (ring order): each of the n - 1 edges carries S; N - 1 of them cross
//    nodes, so a node's NICs send S and its GPUs (n - N)/n S on average.
//  * Tree AllReduce: the intra-node chain carries S up (reduce) and S down (broadcast) over each
//    of its ppn - 1 edges, in opposite directions. On an NVSwitch every GPU sends both through
//    its own uplink: 2(ppn-1)/ppn S on average; elsewhere each edge carries S per direction.
//    Between nodes the double binary tree makes each node send 2(N-1)/N S (S for N = 2: each
//    node is the child in one tree and the parent in the other, for half the buffer each).
//  * NVLS AllReduce: each GPU pushes S into the switch and receives the reduced S back; NVLS
//    AllGather/ReduceScatter move the (n-1)/n S that is not local. NVLSTree adds the tree's
//    2(N-1)/N S per node between nodes.
//  * AllToAll: S/n to each peer: (ppn-1)/n S stays in the node, and the node's ppn GPUs send
//    (n - ppn)/n S each over the NICs.
//  * Send/Recv: S from one GPU (over the network when the communicator spans nodes).
Volume volume(const Machine& s, CollKind kind, Algorithm algo, double S) {
  const double n = s.comm.nranks;
  const double N = s.comm.nnodes;
  const double ppn = s.comm.ranks_per_node_max;
  const bool multi = s.comm.nnodes > 1;
  const double ring_edges_inside = multi ? (ppn - 1) / ppn : 1.0;
  Volume v;
  if (kind == CollKind::kAllToAll) {
    v.gpu_intra = (ppn - 1) / n * S;
    v.node_net = multi ? ppn * (n - ppn) / n * S : 0;
    return v;
  }
  if (kind == CollKind::kSendRecv) {
    (multi ? v.node_net : v.gpu_intra) = S;
    return v;
  }
  if (kind == CollKind::kBroadcast || kind == CollKind::kReduce) {
    v.gpu_intra = (n - N) / n * S;
    v.node_net = multi ? S : 0;
    return v;
  }
  const bool ar = kind == CollKind::kAllReduce;
  const double factor = (ar ? 2.0 : 1.0) * (n - 1) / n;
  switch (algo) {
    case Algorithm::kRing:
      v.gpu_intra = ring_edges_inside * factor * S;
      v.node_net = multi ? factor * S : 0;
      break;
    case Algorithm::kTree:
      v.gpu_intra = s.nvswitch() ? 2.0 * (ppn - 1) / ppn * S : S;
      v.node_net = multi ? 2.0 * (N - 1) / N * S : 0;
      break;
    case Algorithm::kNvls:
    case Algorithm::kNvlsTree:
      v.gpu_intra = ar ? S : (n - 1) / n * S;
      v.node_net = multi ? 2.0 * (N - 1) / N * S : 0;
      break;
    default:
      ADD_FAILURE() << "no volume for " << to_string(algo);
  }
  return v;
}

// The bytes a GPU (a node) moves per direction divided by the time can never exceed the
// bottleneck link: CommunicatorInfo::intra_bw_GBps inside a node (what each GPU gets when all
// send to their ring successors: on an NVSwitch the GPU's own NVLink bandwidth) and, across
// nodes, the node's NICs together (inter_bw_GBps per GPU times ppn). Checked for NCCL's default
// and for every legal (algorithm, protocol) at NCCL's channels, at every size.
TEST(CollectiveModel, NeverMovesBytesFasterThanTheBottleneckLink) {
  for (const Machine& s : machines()) {
    const CollectiveModel m = s.model();
    const double intra_GBps = s.comm.intra_bw_GBps;
    const double node_nics_GBps = s.comm.inter_bw_GBps * s.comm.ranks_per_node_max;
    for (CollKind kind : kAllKinds) {
      for (std::int64_t bytes : sizes()) {
        std::vector<CommConfig> configs = {nccl::default_config(s.info, kind, bytes)};
        if (is_tuned(kind)) {
          for (const auto& [algo, proto] : legal_pairs(s, kind)) {
            configs.push_back(nccl::config_for(s.tables, kind, algo, proto, bytes));
          }
        }
        for (const CommConfig& c : configs) {
          const double t_us = m.estimate(kind, bytes, c).time_us;
          const Volume v = volume(s, kind, c.algo, static_cast<double>(bytes));
          // A single Send/Recv pair on PCIe may avoid the link that limits a ring.
          if (kind != CollKind::kSendRecv || s.nvswitch()) {
            EXPECT_LE(v.gpu_intra / (t_us * 1e3), intra_GBps) << describe(s, kind, bytes, c);
          }
          if (s.comm.nnodes > 1) {
            EXPECT_LE(v.node_net / (t_us * 1e3), node_nics_GBps) << describe(s, kind, bytes, c);
          }
        }
      }
    }
  }
}

// --- Channels -----------------------------------------------------------------------------------

// Ring/Simple AllReduce of 1 GiB on one H100 node, NCCL's threads (544) and chunk. Every rank
// sends V = 2(n-1)/n S. One channel moves at most channel_GBps (nvlink Simple), far below the
// link (intra_bw * efficiency), so it takes V / channel_GBps; from
// nc_sat = ceil(intra_bw * efficiency / channel_GBps) channels on, the link binds and the
// transfer takes V / (intra_bw * efficiency).
TEST(CollectiveModel, ChannelsSpeedUpUntilTheLinkSaturates) {
  const Machine& s = h100_node();
  const CollectiveModel m = s.model();
  const auto& cp = s.profile.collective;
  const auto& nvlink = cp.link(nccl::LinkClass::kNvlink);
  const double channel_GBps = nvlink.proto(nccl::Protocol::kSimple).channel_GBps.value;
  const double link_GBps = s.comm.intra_bw_GBps * nvlink.efficiency.value;
  const int n = s.comm.nranks;
  const std::int64_t S = kGiB;
  const double V = 2.0 * (n - 1) / n * static_cast<double>(S);

  CommConfig c =
      nccl::config_for(s.tables, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, S);
  ASSERT_GE(c.nthreads, nvlink.proto(nccl::Protocol::kSimple).saturation_threads.value);
  c.nchannels = 1;
  const CollectiveEstimate one = m.estimate(CollKind::kAllReduce, S, c);
  c.nchannels = 16;
  const CollectiveEstimate sixteen = m.estimate(CollKind::kAllReduce, S, c);
  EXPECT_GT(one.time_us, sixteen.time_us);
  EXPECT_NEAR(one.transfer_us, V / (channel_GBps * 1e3), 1e-9 * one.transfer_us);
  ASSERT_GE(16 * channel_GBps, link_GBps);
  EXPECT_NEAR(sixteen.transfer_us, V / (link_GBps * 1e3), 1e-9 * sixteen.transfer_us);
}

// Beyond saturation the bytes cannot move faster; what changes is the launch cost
// (+per_channel_us per channel) and the ring's chunk steps: each channel runs
// loops(nc) = ceil(S / (nc n C)) loops of 2(n-1) steps, chunk_us each. So
//   T(nc) - T(nc_sat) = (nc - nc_sat) per_channel - (loops(nc_sat) - loops(nc)) 2(n-1) chunk_us,
// and the time never drops below T(nc_sat) minus the chunk steps saved.
TEST(CollectiveModel, ChannelsBeyondSaturationOnlyTradeLaunchCostForChunkSteps) {
  const Machine& s = h100_node();
  const CollectiveModel m = s.model();
  const auto& cp = s.profile.collective;
  const auto& nvlink = cp.link(nccl::LinkClass::kNvlink);
  const auto& simple = nvlink.proto(nccl::Protocol::kSimple);
  const double link_GBps = s.comm.intra_bw_GBps * nvlink.efficiency.value;
  const int nc_sat = static_cast<int>(std::ceil(link_GBps / simple.channel_GBps.value));
  const int n = s.comm.nranks;
  const std::int64_t S = kGiB;
  const double V = 2.0 * (n - 1) / n * static_cast<double>(S);

  CommConfig c =
      nccl::config_for(s.tables, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, S);
  const double C = static_cast<double>(c.chunk_bytes);
  auto loops = [&](int nc) { return std::ceil(static_cast<double>(S) / (nc * n * C)); };
  c.nchannels = nc_sat;
  const CollectiveEstimate base = m.estimate(CollKind::kAllReduce, S, c);
  EXPECT_NEAR(base.transfer_us, V / (link_GBps * 1e3), 1e-9 * base.transfer_us);
  for (int nc = nc_sat + 1; nc <= 64; ++nc) {
    c.nchannels = nc;
    const CollectiveEstimate e = m.estimate(CollKind::kAllReduce, S, c);
    EXPECT_NEAR(e.transfer_us, base.transfer_us, 1e-9 * base.transfer_us) << nc;
    const double expected = (nc - nc_sat) * cp.per_channel_us.value -
                            (loops(nc_sat) - loops(nc)) * 2 * (n - 1) * simple.chunk_us.value;
    EXPECT_NEAR(e.time_us - base.time_us, expected, 1e-9 * base.time_us) << nc;
    EXPECT_GE(e.time_us, base.time_us - base.sync_us) << nc;
  }
}

// --- Protocols ----------------------------------------------------------------------------------

// At 8 bytes a collective is launch plus hop latencies, and LL's per-hop latency is the lowest
// (NCCL's hwLatencies, reference/nccl.md §2.2, are the profile priors); at 1 GiB bandwidth
// dominates, and LL carries 8 data bytes per 16-byte line (half the wire) at a lower per-channel
// rate. Same algorithm, NCCL's channels, threads and chunk for each protocol.
TEST(CollectiveModel, LlBeatsSimpleAtEightBytesAndLosesAtOneGiB) {
  for (const Machine& s : machines()) {
    const CollectiveModel m = s.model();
    std::vector<Algorithm> algos = {Algorithm::kRing};
    if (s.comm.nnodes > 1) {
      algos.push_back(Algorithm::kTree);
    }
    for (Algorithm algo : algos) {
      for (CollKind kind : {CollKind::kAllReduce, CollKind::kBroadcast}) {
        if (kind != CollKind::kAllReduce && algo != Algorithm::kRing) {
          continue;
        }
        auto time = [&](Protocol p, std::int64_t bytes) {
          return m.estimate(kind, bytes, nccl::config_for(s.tables, kind, algo, p, bytes)).time_us;
        };
        const std::string what =
            s.name + " " + std::string(to_string(kind)) + " " + std::string(to_string(algo));
        EXPECT_LT(time(Protocol::kLL, 8), time(Protocol::kSimple, 8)) << what;
        EXPECT_GT(time(Protocol::kLL, kGiB), time(Protocol::kSimple, kGiB)) << what;
      }
    }
  }
}

// NCCL 2.28 on one 8-GPU H100 node picks NVLS for a 1 GiB AllReduce (NVLS busbw ~480 GB/s vs
// ~370 for Ring, reference/nccl.md §2.6).
TEST(CollectiveModel, NcclDefaultForOneGiBAllReduceOnAnH100NodeIsNvls) {
  const CommConfig c = nccl::default_config(h100_node().info, CollKind::kAllReduce, kGiB);
  EXPECT_EQ(c.algo, Algorithm::kNvls);
  EXPECT_EQ(c.proto, Protocol::kSimple);
}

// --- Chunk size ---------------------------------------------------------------------------------

// A pipelined algorithm of depth d on nc channels moves L = ceil(S / (nc C)) chunks per channel
// in L + d - 1 chunk steps, each costing an overhead u, and pays a fill of (d - 1) C / r, r the
// per-channel payload rate at the bottleneck (its capacity / nc, over the bytes it carries per
// byte of S). So, up to rounding,
//   T(C) = const + u S / (nc C) + (d - 1) C / r,
// smallest at C* = sqrt(u S r / (nc (d - 1))): tiny chunks (Simple's 512-byte grain) pay many
// steps, one chunk per channel (C = S / nc, no pipelining) pays the fill of the whole share, and
// a moderate chunk near C* beats both. That needs u > 0, which the profile must say.
struct Resource {
  double bytes_per_S;  // bytes through it per byte of S
  double capacity_GBps;
};

struct PipelineCase {
  const Machine* setup;
  CollKind kind;
  Algorithm algo;
  int depth;      // hops a chunk crosses one after another (collective_model.hpp)
  double step_u;  // overhead of one chunk step, averaged over the hops
  std::vector<Resource> resources;
  int heads = 1;  // NVLS: each pipeline stage moves a chunk per head (one head per local GPU)
};

void check_pipeline(const PipelineCase& pc, std::int64_t S) {
  const Machine& s = *pc.setup;
  const CollectiveModel m = s.model();
  CommConfig c = nccl::config_for(s.tables, pc.kind, pc.algo, Protocol::kSimple, S);
  const std::string what = s.name + " " + std::string(to_string(pc.kind)) + " " + to_string(c);
  ASSERT_GT(pc.step_u, 0) << what << ": without a chunk-step overhead small chunks are free";
  // The bottleneck: the largest bytes / capacity. A channel's payload streams at the bottleneck's
  // capacity / (nc x its bytes per byte of S): the fill's chunk time is C over that rate.
  const Resource* worst = &pc.resources.front();
  for (const Resource& r : pc.resources) {
    if (r.bytes_per_S / r.capacity_GBps > worst->bytes_per_S / worst->capacity_GBps) {
      worst = &r;
    }
  }
  const double rate_GBps = worst->capacity_GBps / (c.nchannels * worst->bytes_per_S);
  const double nc = c.nchannels;
  const double best =
      std::sqrt(pc.step_u * static_cast<double>(S) * rate_GBps * 1e3 / (nc * (pc.depth - 1))) /
      pc.heads;
  // C* rounded to a power of two, as chunk sizes are.
  const auto moderate = static_cast<std::int64_t>(std::exp2(std::round(std::log2(best))));
  const std::int64_t tiny = 512;
  const std::int64_t whole = S / c.nchannels;
  ASSERT_LT(tiny, moderate) << what;
  ASSERT_LT(moderate, whole) << what;
  auto steps = [&](std::int64_t C) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(S) /
                                               static_cast<double>(c.nchannels * C * pc.heads))) +
           pc.depth - 1;
  };
  std::vector<double> time;
  for (std::int64_t C : {tiny, moderate, whole, c.chunk_bytes}) {
    c.chunk_bytes = C;
    const CollectiveEstimate e = m.estimate(pc.kind, S, c);
    EXPECT_EQ(e.sync_steps, steps(C)) << what << " C=" << C;
    EXPECT_NEAR(e.sync_us, static_cast<double>(steps(C)) * pc.step_u, 1e-9 * e.time_us)
        << what << " C=" << C;
    const double stage = std::min(static_cast<double>(C) * pc.heads, static_cast<double>(whole));
    EXPECT_NEAR(e.fill_us, (pc.depth - 1) * stage / (rate_GBps * 1e3), 1e-9 * e.time_us)
        << what << " C=" << C;
    time.push_back(e.time_us);
  }
  EXPECT_GT(time[0], time[3]) << what << ": 512-byte chunks should cost more than NCCL's";
  EXPECT_GT(time[0], time[1]) << what << ": 512-byte chunks should cost more than " << moderate;
  EXPECT_GT(time[2], time[1]) << what << ": one chunk per channel should cost more than "
                              << moderate;
}

TEST(CollectiveModel, ChunkSizeHasAnOptimumForPipelinedAlgorithms) {
  const std::int64_t S = kGiB;
  auto threads_share = [](const CommConfig& c, const hardware::ProtocolParams& p) {
    return std::min(1.0, c.nthreads / p.saturation_threads.value);
  };

  // NVLS AllReduce, one H100 node: depth 2 (into the switch, back out), overhead nvls_chunk_us.
  // Each GPU moves S through the switch path (intra_bw * nvls_efficiency) and through its
  // channels (nc * channel_GBps, NVLink Simple).
  {
    const Machine& s = h100_node();
    const auto& cp = s.profile.collective;
    const auto& simple = cp.link(nccl::LinkClass::kNvlink).proto(nccl::Protocol::kSimple);
    const CommConfig c =
        nccl::config_for(s.tables, CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple, S);
    check_pipeline({&s,
                    CollKind::kAllReduce,
                    Algorithm::kNvls,
                    2,
                    cp.nvls_chunk_us.value,
                    {{1.0, s.comm.intra_bw_GBps * cp.nvls_efficiency.value},
                     {1.0, c.nchannels * simple.channel_GBps.value * threads_share(c, simple)}},
                    s.comm.ranks_per_node_max},
                   S);
  }
  // Chain Broadcast, one H100 node: n - 1 NVLink hops, S through each GPU's link
  // (intra_bw * efficiency) and its channels.
  {
    const Machine& s = h100_node();
    const auto& cp = s.profile.collective;
    const auto& nvlink = cp.link(nccl::LinkClass::kNvlink);
    const auto& simple = nvlink.proto(nccl::Protocol::kSimple);
    const CommConfig c =
        nccl::config_for(s.tables, CollKind::kBroadcast, Algorithm::kRing, Protocol::kSimple, S);
    check_pipeline({&s,
                    CollKind::kBroadcast,
                    Algorithm::kRing,
                    s.comm.nranks - 1,
                    simple.chunk_us.value,
                    {{1.0, s.comm.intra_bw_GBps * nvlink.efficiency.value},
                     {1.0, c.nchannels * simple.channel_GBps.value * threads_share(c, simple)}}},
                   S);
  }
  // Tree AllReduce on 2 x 8 H100: depth 2(ppn-1) NVLink hops + 2 log2(N) = 2 network hops, the
  // overhead averaged over them. 2S through each GPU's NVLink and its channels (both link
  // classes), 2(N-1)/N S = S through the node's NICs (ppn x inter_bw * network efficiency).
  {
    const Machine& s = h100_two_nodes();
    const auto& cp = s.profile.collective;
    const auto& nvlink = cp.link(nccl::LinkClass::kNvlink);
    const auto& net = cp.link(nccl::LinkClass::kNetwork);
    const auto& nvl_simple = nvlink.proto(nccl::Protocol::kSimple);
    const auto& net_simple = net.proto(nccl::Protocol::kSimple);
    const int ppn = s.comm.ranks_per_node_max;
    const CommConfig c =
        nccl::config_for(s.tables, CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, S);
    const int depth = 2 * (ppn - 1) + 2;
    const double u =
        (2 * (ppn - 1) * nvl_simple.chunk_us.value + 2 * net_simple.chunk_us.value) / depth;
    check_pipeline(
        {&s,
         CollKind::kAllReduce,
         Algorithm::kTree,
         depth,
         u,
         {{2.0, s.comm.intra_bw_GBps * nvlink.efficiency.value},
          {1.0, s.comm.inter_bw_GBps * ppn * net.efficiency.value},
          {2.0, c.nchannels * nvl_simple.channel_GBps.value * threads_share(c, nvl_simple)},
          {2.0, c.nchannels * net_simple.channel_GBps.value * threads_share(c, net_simple)}}},
        S);
  }
}

// A DGX H100 pair with one bandwidth scaled: NVLink (`nvlink` true) or the NICs.
struct ScaledDgx {
  topologies::Cluster cluster;
  topologies::CommunicatorInfo comm;
  hardware::HardwareProfile profile;
  ScaledDgx(bool nvlink, double scale) : cluster(scaled(nvlink, scale)) {
    std::vector<int> ranks(static_cast<std::size_t>(cluster.gpu_count()));
    std::iota(ranks.begin(), ranks.end(), 0);
    comm = topologies::describe_communicator(cluster, ranks);
    profile = hardware::default_profile_for_gpu(cluster.spec().gpu_type);
  }
  static topologies::ClusterSpec scaled(bool nvlink, double scale) {
    topologies::ClusterSpec spec = topologies::load_cluster_spec("dgx-h100", 2);
    if (nvlink) {
      spec.intra_node.nvlink->link_bandwidth_GBps *= scale;
    } else {
      spec.network.nic_speed_Gbps *= scale;
    }
    return spec;
  }
};

// The fill is a share of the transfer, whichever resource binds: a faster link never makes a
// pipelined collective slower. It was once C over the binding resource's capacity per channel,
// which mixed units when a link bound (the busiest link's bytes, not a channel's payload): on a
// DGX's eight NICs the fill came out 8x too long, and a 2-node NVLSTree all-reduce of 8 MiB took
// 204 us with stock NVLink and 120 us with NVLink 12% slower.
TEST(CollectiveModel, AFasterLinkNeverSlowsAPipelinedCollective) {
  struct Case {
    CollKind kind;
    Algorithm algo;
  };
  const Machine& base = h100_two_nodes();
  for (const Case& k : {Case{CollKind::kAllReduce, Algorithm::kNvlsTree},
                        Case{CollKind::kAllReduce, Algorithm::kTree},
                        Case{CollKind::kBroadcast, Algorithm::kRing}}) {
    for (const std::int64_t S : {std::int64_t{1} << 20, std::int64_t{8} << 20, kGiB / 16}) {
      const CommConfig c = nccl::config_for(base.tables, k.kind, k.algo, Protocol::kSimple, S);
      for (const bool nvlink : {true, false}) {
        double last = std::numeric_limits<double>::infinity();
        for (const double scale : {0.5, 0.8, 0.88, 0.9, 1.0, 1.2, 2.0, 4.0}) {
          const ScaledDgx m(nvlink, scale);
          const double t = CollectiveModel(m.profile, m.comm).estimate(k.kind, S, c).time_us;
          EXPECT_LE(t, last * (1 + 1e-12)) << to_string(k.kind) << " " << to_string(c) << " S=" << S
                                           << (nvlink ? " NVLink" : " NIC") << " x" << scale;
          last = t;
        }
      }
    }
  }
}

// nccl-tests' sendrecv on 2 nodes: every rank sends to the next, and the pair that crosses the
// node boundary sends through one NIC, not the node's eight (it read the whole network pattern
// and reported 222 GB/s on 400 Gb/s NICs).
TEST(CollectiveModel, ASendRecvAcrossNodesGetsOneNic) {
  const Machine& s = h100_two_nodes();
  const std::int64_t S = std::int64_t{64} << 20;
  const CommConfig c = nccl::default_config(s.info, CollKind::kSendRecv, S);
  const CollectiveEstimate e = s.model().estimate(CollKind::kSendRecv, S, c);
  const double nic_GBps = s.cluster.spec().nic_bandwidth_GBps();
  EXPECT_LE(static_cast<double>(S) / (e.time_us * 1e3), nic_GBps);
  EXPECT_EQ(e.bottleneck, "network");
}

// Ring is not pipelined across hops (every rank works on its own chunk each step): a larger
// chunk only removes chunk steps, never adds fill.
TEST(CollectiveModel, LargerChunksNeverSlowARing) {
  for (const Machine& s : machines()) {
    const CollectiveModel m = s.model();
    CommConfig c =
        nccl::config_for(s.tables, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, kGiB);
    double prev = 0;
    for (std::int64_t C = 512; C <= 4 * kMiB; C *= 2) {
      c.chunk_bytes = C;
      const CollectiveEstimate e = m.estimate(CollKind::kAllReduce, kGiB, c);
      EXPECT_EQ(e.fill_us, 0.0);
      if (prev > 0) {
        EXPECT_LE(e.time_us, prev) << s.name << " C=" << C;
      }
      prev = e.time_us;
    }
  }
}

// --- Threads ------------------------------------------------------------------------------------

// One Ring/Simple channel on one H100 node is channel-bound at 1 GiB (channel_GBps << link). A
// channel moves channel_GBps * min(1, nt / saturation_threads), so below saturation the transfer
// time scales as saturation / nt, and above it threads change nothing.
TEST(CollectiveModel, ThreadsBelowSaturationSlowAChannelBoundTransferProportionally) {
  const Machine& s = h100_node();
  const CollectiveModel m = s.model();
  const auto& simple =
      s.profile.collective.link(nccl::LinkClass::kNvlink).proto(nccl::Protocol::kSimple);
  const double sat = simple.saturation_threads.value;
  const int n = s.comm.nranks;
  const std::int64_t S = kGiB;
  const double V = 2.0 * (n - 1) / n * static_cast<double>(S);
  CommConfig c =
      nccl::config_for(s.tables, CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, S);
  c.nchannels = 1;
  c.nthreads = static_cast<int>(sat);
  const CollectiveEstimate full = m.estimate(CollKind::kAllReduce, S, c);
  EXPECT_EQ(full.bottleneck, "channels");
  EXPECT_NEAR(full.transfer_us, V / (simple.channel_GBps.value * 1e3), 1e-9 * full.transfer_us);
  for (int nt : {64, 128, 256, 384}) {
    c.nthreads = nt;
    const CollectiveEstimate e = m.estimate(CollKind::kAllReduce, S, c);
    EXPECT_NEAR(e.transfer_us, full.transfer_us * sat / nt, 1e-9 * e.transfer_us) << nt;
    // Nothing else depends on the thread count.
    EXPECT_NEAR(e.time_us - full.time_us, e.transfer_us - full.transfer_us, 1e-9 * e.time_us) << nt;
  }
  c.nthreads = 640;
  EXPECT_DOUBLE_EQ(m.estimate(CollKind::kAllReduce, S, c).time_us, full.time_us);
}

// --- Degenerate inputs --------------------------------------------------------------------------

// One rank or zero bytes: nothing moves, the call costs its launch: launch_us + nc per_channel_us.
TEST(CollectiveModel, OneRankOrZeroBytesCostsTheLaunch) {
  const Machine& s = h100_node();
  const auto& cp = s.profile.collective;
  const std::vector<int> one_rank = {0};
  const topologies::CommunicatorInfo solo = topologies::describe_communicator(s.cluster, one_rank);
  ASSERT_EQ(solo.nranks, 1);
  const CollectiveModel m_solo(s.profile, solo);
  const CollectiveModel m = s.model();
  for (CollKind kind : kAllKinds) {
    CommConfig c = nccl::default_config(s.info, kind, kMiB);
    c.nchannels = 4;
    const double launch = cp.launch_us.value + 4 * cp.per_channel_us.value;
    EXPECT_DOUBLE_EQ(m_solo.estimate(kind, kGiB, c).time_us, launch) << to_string(kind);
    EXPECT_DOUBLE_EQ(m.estimate(kind, 0, c).time_us, launch) << to_string(kind);
  }
}

TEST(CollectiveModel, NegativeBytesAndNoChannelsAreErrors) {
  const CollectiveModel m = h100_node().model();
  CommConfig c;
  EXPECT_NE(error_of([&] { m.estimate(CollKind::kAllReduce, -1, c); }).find(">= 0"),
            std::string::npos);
  c.nchannels = 0;
  EXPECT_NE(error_of([&] { m.estimate(CollKind::kAllReduce, kMiB, c); }).find("channels"),
            std::string::npos);
  c.nchannels = 1;
  c.nthreads = 0;
  EXPECT_NE(error_of([&] { m.estimate(CollKind::kAllReduce, kMiB, c); }).find("threads"),
            std::string::npos);
}

// NVLS needs an NVSwitch with NVLink SHARP: NCCL's tuning refuses it on PCIe A40s, and so does
// the model.
TEST(CollectiveModel, NvlsWithoutNvlinkSharpIsAnError) {
  const Machine& pcie = machines()[2];
  ASSERT_FALSE(pcie.comm.nvls_available);
  CommConfig c;
  c.algo = Algorithm::kNvls;
  c.nchannels = 16;
  c.nthreads = 640;
  c.chunk_bytes = 128 * kKiB;
  EXPECT_TRUE(nccl::why_illegal(pcie.info, CollKind::kAllReduce, c).has_value());
  EXPECT_NE(error_of([&] { pcie.model().estimate(CollKind::kAllReduce, kMiB, c); }).find("NVLS"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              nccl::config_for(pcie.tables, CollKind::kAllReduce, Algorithm::kNvls,
                               Protocol::kSimple, kMiB);
            }).find("NVLS"),
            std::string::npos);
}

}  // namespace
}  // namespace lagom::sim
