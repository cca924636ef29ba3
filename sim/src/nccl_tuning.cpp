// NCCL 2.28.9's tuning model, selection, channel/thread reduction and chunking, emulated exactly.
//
// Every branch below mirrors a line of nccl@v2.28.9-1 (src/graph/tuning.cc, src/enqueue.cc,
// src/graph/connect.cc, src/graph/paths.cc, src/transport/nvls.cc, src/init.cc); the comments
// name the function. NCCL computes the tables and times in single precision; so do we, so that
// near-ties resolve as they do in NCCL.
#include "lagom/sim/nccl_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <limits>
#include <string_view>
#include <vector>

#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"

namespace lagom::sim {
namespace {

// ------------------------------------------------------------------------------------------------
// Constants. The tuner constants are ncclTunerConstantsDefaults (src/graph/tuning.cc,
// reference/nccl.md §2.2), measured by NVIDIA; the rest are compile-time limits of
// src/include/device.h, comm.h, collectives.h, graph/topo.h and transport/nvls.cc.
// ------------------------------------------------------------------------------------------------

constexpr int kHwNvlink = 0;  // NCCL_HW_NVLINK
constexpr int kHwPci = 1;     // NCCL_HW_PCI
constexpr int kHwNet = 2;     // NCCL_HW_NET

struct TunerConstants {
  double base_latency_us[kAlgorithmCount][kProtocolCount];
  double hw_latency_us[3][kAlgorithmCount][kProtocolCount];  // [hw][algo][proto]
  // [compcap index: Volta, Ampere, Hopper, Blackwell][nodes: 1, 2, >=4]; llMaxBws' rows are the
  // compcap on one node, the CPU (0 Intel/other, 1 AMD/mixed) on several.
  double ll_max_bw_GBps[4][3];
  double per_ch_max_ring_ll128_bw_GBps[4][3];
  double per_ch_max_tree_ll128_bw_GBps[4][3];
  double per_ch_max_tree_bw_GBps[4][3];
  double per_ch_max_nvls_tree_bw_GBps[4][3];
};

// clang-format off
constexpr TunerConstants kNcclTunerConstants = {
    // baseLatencies {LL, LL128, Simple}
    {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4},   // Tree, Ring
     {0, 0, 0}, {0, 0, 0},                 // CollNetDirect, CollNetChain
     {0, 0, 0}, {0, 0, 0},                 // NVLS, NVLSTree
     {8.0, 8.0, 8.0}},                     // PAT
    // hwLatencies
    {{{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25},
      {0, 0, 4.0}},                                                                    // NVLINK
     {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0},
      {0, 0, 4.0}},                                                                    // PCI
     {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9},
      {0, 0, 14}}},                                                                    // NET
    // llMaxBws
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}},
    // perChMaxRingLL128Bws
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 34.6, 2 * 36.7}},
    // perChMaxTreeLL128Bws
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}},
    // perChMaxTreeBws
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}},
    // perChMaxNVLSTreeBws
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}},
};

// nvlsEfficiency[compcap index] (tuning.cc).
constexpr float kNvlsEfficiency[4] = {0.0f, 0.0f, 0.85f, 0.74f};

// treeCorrectionFactor[proto][log2(nBytes/64)], 64 B .. 256 MiB (tuning.cc, §2.5).
constexpr float kTreeCorrectionFactor[kProtocolCount][23] = {
    {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f, .7f, .7f, .6f, .5f, .4f, .4f, .5f, .6f, .7f, .8f,
     .9f, 1.0f, 1.0f, 1.0f, 1.0f},
    {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f, .8f, .7f, .6f, .6f, .6f, .6f, .6f, .6f, .8f, .9f,
     .9f, .9f, .9f, 1.0f, 1.0f},
    {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f, .6f, .6f, .5f, .5f, .5f, .5f, .6f, .7f, .8f, .7f,
     .7f, .8f, .9f, .9f}};
// clang-format on

constexpr int kWarpSize = 32;                        // WARP_SIZE
constexpr int kMaxChannels = 64;                     // MAXCHANNELS
constexpr int kMaxNthreads = 640;                    // NCCL_MAX_NTHREADS
constexpr int kSimpleMaxNthreads = 512;              // NCCL_SIMPLE_MAX_NTHREADS
constexpr int kLlMaxNthreads = 512;                  // NCCL_LL_MAX_NTHREADS
constexpr int kLl128MaxNthreads = 640;               // NCCL_LL128_MAX_NTHREADS
constexpr int kSteps = 8;                            // NCCL_STEPS
constexpr int kCollChunkSteps = kSteps / 2;          // ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS
constexpr int kLl128LineElems = 16;                  // NCCL_LL128_LINEELEMS (u64 per 128 B line)
constexpr int kLl128DataElems = 15;                  // NCCL_LL128_DATAELEMS
constexpr std::int64_t kLlThreadThreshold = 8;       // NCCL_LL_THREAD_THRESHOLD
constexpr std::int64_t kLl128ThreadThreshold = 8;    // NCCL_LL128_THREAD_THRESHOLD
constexpr std::int64_t kSimpleThreadThreshold = 64;  // NCCL_SIMPLE_THREAD_THRESHOLD
constexpr std::int64_t kCollNetThreadThreshold = 512;
constexpr double kPciBw_GBps = 12.0;                      // PCI_BW (topo.h)
constexpr int kMaxDevWorkBatchColls = 1024 / 96;          // 1024 / sizeof(ncclDevWorkColl)
constexpr int kMaxDirectArity = 7;                        // NCCL_MAX_DIRECT_ARITY
constexpr int kMaxNvlsArity = 32;                         // NCCL_MAX_NVLS_ARITY
constexpr std::int64_t kMinTrafficPerChannel = 16 << 10;  // scheduleCollTasksToPlan
constexpr int kNvlsChannelsSm90 = 16;                     // NVLS_NCHANNELS_SM90
constexpr int kNvlsChannelsSm100 = 32;                    // NVLS_NCHANNELS_SM100 (several nodes)
constexpr int kNvlsChannelsSm100Nvl = 24;  // NVLS_NCHANNELS_SM100_NVL (one NVLink domain)

// ncclProtoGrainSize: LL 16 B; LL128 32 thr * 8 elems / 16 * 15 * 8 B = 3840 B; Simple 512 B.
constexpr std::int64_t kGrainBytes[kProtocolCount] = {16, 3840, 512};

constexpr std::string_view kFuncTokens[kTunedCollCount] = {"Broadcast", "Reduce", "AllGather",
                                                           "ReduceScatter", "AllReduce"};
constexpr std::string_view kAlgoTokens[kAlgorithmCount] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::string_view kProtoTokens[kProtocolCount] = {"LL", "LL128", "Simple"};

// ------------------------------------------------------------------------------------------------
// Small helpers with NCCL's integer semantics.
// ------------------------------------------------------------------------------------------------

std::int64_t div_up(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
long log2i(std::int64_t n) {  // log2Down: -1 for 0
  long r = -1;
  while (n > 0) {
    n >>= 1;
    ++r;
  }
  return r;
}
int pow2_up(int x) {
  int p = 1;
  while (p < x) {
    p <<= 1;
  }
  return p;
}

int compcap_index(int cc) {
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// strtok-like split: empty tokens are skipped, as strtok_r does.
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    std::size_t j = s.find(sep, i);
    if (j == std::string_view::npos) {
      j = s.size();
    }
    if (j > i) {
      out.push_back(s.substr(i, j - i));
    }
    i = j + 1;
  }
  return out;
}

// parseList (tuning.cc): "[func:]elem,elem;func:^elem,...". Writes list[func][elem] = 1 (set) or
// 0 (unset), starting from `list`'s current values (1/2 defaults). Throws like NCCL's
// ncclInvalidUsage.
template <std::size_t N>
void parse_list(std::string_view str, std::string_view what, const std::string_view (&elems)[N],
                std::array<std::array<int, N>, 5>& list) {
  const auto entries = split(str, ';');
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const auto parts = split(entries[k], ':');
    std::string_view prefix;
    std::string_view elem_list;
    if (parts.size() >= 2) {
      prefix = parts[0];
      elem_list = parts[1];
    } else {
      if (k != 0 || parts.empty()) {
        throw Error(fmt::format(
            "{}=\"{}\": all entries except the first must have a function prefix", what, str));
      }
      elem_list = parts[0];
    }
    int set = 1;
    int unset = 0;
    if (!elem_list.empty() && elem_list.front() == '^') {
      set = 0;
      unset = 1;
      elem_list.remove_prefix(1);
    }
    bool found_prefix = false;
    for (int f = 0; f < kTunedCollCount; ++f) {
      if (!prefix.empty() && !iequals(prefix, kFuncTokens[f])) {
        continue;
      }
      found_prefix = true;
      for (std::size_t e = 0; e < N; ++e) {
        list[f][e] = unset;
      }
      for (std::string_view token : split(elem_list, ',')) {
        std::size_t e = 0;
        while (e < N && !iequals(token, elems[e])) {
          ++e;
        }
        if (e == N) {
          throw Error(
              fmt::format("{}=\"{}\": unrecognized element token \"{}\"", what, str, token));
        }
        list[f][e] = set;
      }
    }
    if (!found_prefix) {
      throw Error(fmt::format("{}=\"{}\": unrecognized function prefix \"{}\"", what, str, prefix));
    }
  }
}

// getNthreads (tuning.cc): NCCL_NTHREADS-style override with NCCL's clamping.
int get_nthreads(int env, int min, int max, int def) {
  if (env <= 0) {
    return def;
  }
  if (env % kWarpSize != 0) {
    return max;
  }
  return std::clamp(env, min, max);
}

// getNetOverhead (tuning.cc), µs.
float net_overhead_us(const NcclCommInfo& c) {
  if (c.env.net_overhead_us >= 0) {
    return static_cast<float>(c.env.net_overhead_us);
  }
  if (c.cpu_arch == CpuArch::kX86 && c.cpu_vendor == CpuVendor::kAmd) {
    return 2.0f;
  }
  return 1.0f;
}

// ncclPatEnable (tuning.cc).
bool pat_enabled(const NcclCommInfo& c) {
  if (c.compcap < 60) {
    return false;
  }
  if (c.env.pat_enable != 2) {
    return c.env.pat_enable != 0;
  }
  return c.nnodes == c.nranks && !c.net_device_offload;
}

int ppn_int(const NcclCommInfo& c) {
  return c.nranks / c.nnodes;
}

Transport transport_of(const NcclCommInfo& c) {
  if (c.nnodes > 1) {
    return Transport::kNet;
  }
  if (c.ring.type_intra <= PathType::kNvb) {
    return Transport::kP2pNvlink;
  }
  if (c.ring.type_intra <= PathType::kPxb) {
    return Transport::kP2pPcie;
  }
  return Transport::kShm;
}

std::int64_t buff_size(const NcclCommInfo& c, Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return c.env.ll_buffsize_bytes;
    case Protocol::kLL128:
      return c.env.ll128_buffsize_bytes;
    case Protocol::kSimple:
      return c.env.buffsize_bytes;
  }
  return c.env.buffsize_bytes;
}

// u32fp8Encode/Decode (bitops.h): p2p chunk sizes keep 3 bits below the leading one.
std::uint32_t u32fp8_round(std::uint32_t x) {
  int log2x = 31 - __builtin_clz(x | 1);
  constexpr int kBits = 3;
  std::uint32_t mantissa = (x >> (log2x >= kBits ? log2x - kBits : 0)) & ((1u << kBits) - 1);
  std::uint32_t exponent = log2x >= kBits ? static_cast<std::uint32_t>(log2x - (kBits - 1)) : 0;
  std::uint32_t enc = (exponent << kBits) | mantissa;
  std::uint32_t e = enc >> kBits;
  std::uint32_t m = (enc & ((1u << kBits) - 1)) | (e != 0 ? 0x8u : 0u);
  if (e != 0) {
    e -= 1;
  }
  return m << e;
}

// Which algorithms ncclTopoTuneModel computes for a function (§1.1).
bool algo_computed_for(CollKind coll, Algorithm a) {
  switch (coll) {
    case CollKind::kBroadcast:
    case CollKind::kReduce:
      return a == Algorithm::kRing;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter:
      return a == Algorithm::kPat || a == Algorithm::kRing || a == Algorithm::kNvls ||
             a == Algorithm::kCollNetDirect;
    case CollKind::kAllReduce:
      return a != Algorithm::kPat;
    case CollKind::kAllToAll:
    case CollKind::kSendRecv:
      return false;
  }
  return false;
}

bool ll128_enabled_by_default(const NcclCommInfo& c, const NcclGraphInfo& g) {
  bool on = true;
  if (c.env.ll128_c2c && c.compcap >= 90) {
    on = on && g.type_inter <= PathType::kPxn;
  } else {
    on = on && g.type_inter <= PathType::kPxb;
  }
  on = on && g.type_intra <= PathType::kNvb;
  on = on && c.compcap == c.max_compcap;
  on = on && c.compcap >= 70;
  return on;
}

void require_tuned(CollKind coll, std::string_view fn) {
  if (!is_tuned(coll)) {
    throw Error(fmt::format("{}: {} is not one of NCCL's tuned collectives", fn, to_string(coll)));
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------------

const NcclGraphInfo& NcclCommInfo::graph(Algorithm a) const {
  switch (a) {
    case Algorithm::kTree:
    case Algorithm::kPat:
      return tree;
    case Algorithm::kRing:
      return ring;
    case Algorithm::kCollNetDirect:
      return collnet_direct;
    case Algorithm::kCollNetChain:
      return collnet_chain;
    case Algorithm::kNvls:
    case Algorithm::kNvlsTree:
      return nvls;
  }
  return ring;
}

double NcclTables::latency(CollKind c, Algorithm a, Protocol p) const {
  return latency_us[index_of(c)][index_of(a)][index_of(p)];
}
double NcclTables::bandwidth(CollKind c, Algorithm a, Protocol p) const {
  return bandwidth_GBps[index_of(c)][index_of(a)][index_of(p)];
}

NcclCommInfo resolve_comm_info(const NcclCommInfo& info) {
  NcclCommInfo c = info;
  if (c.nranks < 1) {
    throw Error(fmt::format("NCCL communicator: nranks must be >= 1, got {}", c.nranks));
  }
  if (c.nnodes < 1 || c.nnodes > c.nranks) {
    throw Error(fmt::format("NCCL communicator: nnodes must be in 1..nranks ({}), got {}", c.nranks,
                            c.nnodes));
  }
  if (c.compcap <= 0) {
    throw Error(
        fmt::format("NCCL communicator: compute capability must be > 0, got {}", c.compcap));
  }
  if (c.max_compcap == 0) {
    c.max_compcap = c.compcap;
  }
  if (c.max_compcap < c.compcap) {
    throw Error(fmt::format("NCCL communicator: max_compcap {} is below compcap {}", c.max_compcap,
                            c.compcap));
  }
  if (c.max_local_ranks == 0) {
    c.max_local_ranks = static_cast<int>(div_up(c.nranks, c.nnodes));
  }
  if (c.max_ctas < 1 || c.max_ctas > kMaxChannels || c.min_ctas < 1 || c.min_ctas > kMaxChannels) {
    throw Error(fmt::format("NCCL communicator: min/max CTAs must be in 1..{}, got {}/{}",
                            kMaxChannels, c.min_ctas, c.max_ctas));
  }
  if (c.min_ctas > c.max_ctas) {  // parseCommConfig: both become max
    c.min_ctas = c.max_ctas;
  }
  // init.cc: ring and tree end up with the same (smaller) channel count.
  if (c.ring.nchannels > 0 && c.tree.nchannels > 0) {
    c.ring.nchannels = c.tree.nchannels = std::min(c.ring.nchannels, c.tree.nchannels);
  }
  // connect.cc:ncclTopoPostset.
  if (c.nchannels == 0) {
    int nc = std::max(
        1, std::min(c.ring.nchannels, c.tree.nchannels > 0 ? c.tree.nchannels : c.ring.nchannels));
    nc = std::min(kMaxChannels, nc * 2);
    if (c.collnet_enable && c.collnet_chain.bw_intra_GBps > c.collnet_chain.bw_inter_GBps &&
        c.nranks > c.nnodes) {
      nc = std::min(kMaxChannels, nc + nc / 2);
    }
    if (c.compcap >= 90 && c.nnodes > 1 && c.ring.bw_intra_GBps > 45.0 && nc < 16) {
      nc = std::min(kMaxChannels, 2 * nc);
    }
    if (c.unpack_net_device && c.nnodes > 1 && nc < 16) {
      nc = std::min(kMaxChannels, 2 * nc);
    }
    nc = std::min(nc, c.max_ctas);
    nc = std::max(nc, c.min_ctas);
    c.nchannels = nc;
  }
  if (c.nchannels < 1 || c.nchannels > kMaxChannels) {
    throw Error(fmt::format("NCCL communicator: nchannels must be in 1..{}, got {}", kMaxChannels,
                            c.nchannels));
  }
  // nvls.cc:ncclNvlsInit and connect.cc:connectNvls.
  if (c.nvls_heads == 0) {
    c.nvls_heads = c.nvls.nchannels;
  }
  if (!c.nvls_support || c.nvls_heads == 0) {
    c.nvls_channels = 0;
  } else if (c.nvls_channels == 0) {
    const int def = c.compcap >= 100 ? (c.nnodes > 1 ? kNvlsChannelsSm100 : kNvlsChannelsSm100Nvl)
                                     : kNvlsChannelsSm90;
    c.nvls_channels = std::max(c.min_ctas, std::min(c.max_ctas, def));
  }
  if (c.collnet_heads == 0) {
    c.collnet_heads = c.collnet_direct.nchannels;
  }
  // paths.cc:ncclTopoComputeP2pChannels (NVLink peers on NVSwitch systems have enough links to
  // not limit the per-peer count; PCIe peers get 2; network peers 2, halved while
  // 2 * nRanks > 4 * p2pnChannels).
  if (c.p2p_nchannels == 0 || c.p2p_nchannels_per_peer == 0) {
    const int p2p_pre = std::max(1, std::min(c.nchannels, kMaxChannels));
    int min_channels = p2p_pre;
    if (!c.all_nvlink && c.nnodes == 1) {
      min_channels = std::min(min_channels, 2);
    }
    if (c.nnodes > 1) {
      int net = 2;
      while (net * c.nranks > p2p_pre * 4 && net > 1) {
        net /= 2;
      }
      min_channels = std::min(min_channels, std::max(1, net));
    }
    if (c.p2p_nchannels == 0) {
      c.p2p_nchannels = pow2_up(p2p_pre);
    }
    if (c.p2p_nchannels_per_peer == 0) {
      c.p2p_nchannels_per_peer = std::min(pow2_up(min_channels), c.p2p_nchannels);
    }
  }
  return c;
}

NcclTables nccl_tune_model(const NcclCommInfo& info) {
  NcclTables t;
  t.comm = resolve_comm_info(info);
  const NcclCommInfo& c = t.comm;
  const TunerConstants& k = kNcclTunerConstants;
  double hw_lat[3][kAlgorithmCount][kProtocolCount];
  for (int h = 0; h < 3; ++h) {
    for (int a = 0; a < kAlgorithmCount; ++a) {
      for (int p = 0; p < kProtocolCount; ++p) {
        hw_lat[h][a][p] = k.hw_latency_us[h][a][p];
      }
    }
  }
  const int ring = index_of(Algorithm::kRing);
  const int tree = index_of(Algorithm::kTree);
  const int simple = index_of(Protocol::kSimple);
  const int ll = index_of(Protocol::kLL);
  const int ll128 = index_of(Protocol::kLL128);

  // Threads per CTA (tuning.cc, start of ncclTopoTuneModel).
  const int simple_default_threads =
      c.ring.bw_intra_GBps * c.ring.nchannels <= kPciBw_GBps ? 256 : kSimpleMaxNthreads;
  t.max_threads[ring][simple] =
      get_nthreads(c.env.nthreads, 2 * kWarpSize, kSimpleMaxNthreads, simple_default_threads);
  t.max_threads[tree][simple] =
      get_nthreads(c.env.nthreads, 2 * kWarpSize, kSimpleMaxNthreads, kSimpleMaxNthreads);
  for (Algorithm a : {Algorithm::kCollNetDirect, Algorithm::kCollNetChain, Algorithm::kNvls,
                      Algorithm::kNvlsTree}) {
    t.max_threads[index_of(a)][simple] = kMaxNthreads;
  }
  t.max_threads[ring][ll] = t.max_threads[tree][ll] =
      get_nthreads(c.env.nthreads, 2 * kWarpSize, kLlMaxNthreads, kLlMaxNthreads);
  t.max_threads[ring][ll128] = t.max_threads[tree][ll128] = get_nthreads(
      c.env.ll128_nthreads, kLl128MaxNthreads / 4, kLl128MaxNthreads, kLl128MaxNthreads);
  // (PAT's max threads stay 0, as in NCCL; topoGetAlgoInfo forces 640 later.)

  const int n_nodes = c.nnodes;
  const int n_ranks = c.nranks;
  if (n_ranks <= 1) {
    return t;
  }

  const int cc_index = compcap_index(c.compcap);
  const int index2 = n_nodes <= 2 ? n_nodes - 1 : 2;
  const int index1 = n_nodes == 1 ? cc_index
                     : (c.cpu_vendor == CpuVendor::kAmd || c.cpu_vendor == CpuVendor::kMixed) ? 1
                                                                                              : 0;
  const double ll_max_bw = k.ll_max_bw_GBps[index1][index2];
  const double per_ch_max_tree_bw = k.per_ch_max_tree_bw_GBps[cc_index][index2];
  const double per_ch_max_ring_ll128_bw = k.per_ch_max_ring_ll128_bw_GBps[cc_index][index2];
  const double per_ch_max_tree_ll128_bw = k.per_ch_max_tree_ll128_bw_GBps[cc_index][index2];
  const double per_ch_max_nvls_tree_bw = k.per_ch_max_nvls_tree_bw_GBps[cc_index][index2];
  if (c.cpu_arch == CpuArch::kPower) {  // favour Tree over Ring on POWER
    hw_lat[kHwPci][tree][simple] = hw_lat[kHwPci][ring][simple];
  }
  const float ppn = static_cast<float>(n_ranks) / static_cast<float>(n_nodes);

  int intra_hw[kAlgorithmCount];
  int hw[kAlgorithmCount];
  for (int a = 0; a < kAlgorithmCount; ++a) {
    // NCCL compares the path type with LINK_NVL (== PATH_NVL): only direct NVLink counts.
    intra_hw[a] =
        c.graph(static_cast<Algorithm>(a)).type_intra == PathType::kNvl ? kHwNvlink : kHwPci;
    hw[a] = n_nodes == 1 ? intra_hw[a] : kHwNet;
  }

  for (int coll = 0; coll < kTunedCollCount; ++coll) {
    const CollKind ck = static_cast<CollKind>(coll);
    const int nsteps = ck == CollKind::kAllReduce ? 2 * (n_ranks - 1)
                       : (ck == CollKind::kReduceScatter || ck == CollKind::kAllGather)
                           ? n_ranks - 1
                           : n_ranks;
    for (int a = 0; a < kAlgorithmCount; ++a) {
      const Algorithm algo = static_cast<Algorithm>(a);
      if (!algo_computed_for(ck, algo)) {
        continue;
      }
      const NcclGraphInfo& g = c.graph(algo);
      const float g_bw_intra = static_cast<float>(g.bw_intra_GBps);
      const float g_bw_inter = static_cast<float>(g.bw_inter_GBps);
      const float g_lat_inter = static_cast<float>(g.latency_inter_us);
      const bool ag_rs = ck == CollKind::kAllGather || ck == CollKind::kReduceScatter;
      for (int p = 0; p < kProtocolCount; ++p) {
        const Protocol proto = static_cast<Protocol>(p);
        if ((algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree) &&
            proto != Protocol::kSimple) {
          continue;
        }
        if (ag_rs && algo == Algorithm::kPat && (proto != Protocol::kSimple || !pat_enabled(c))) {
          continue;
        }
        const bool collnet = algo == Algorithm::kCollNetDirect || algo == Algorithm::kCollNetChain;
        float bw = n_nodes <= 2 || collnet ? g_bw_intra : g_bw_inter;
        if (algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree) {
          if (g.nchannels < 2) {
            continue;
          }
          float intra_bw = g_bw_intra * kNvlsEfficiency[cc_index] *
                           static_cast<float>(g.nchannels - 1) / static_cast<float>(g.nchannels);
          if (ck == CollKind::kAllReduce) {
            intra_bw *= 2.0f;
          } else {
            intra_bw *= (ppn - 1) / ppn;
          }
          const float inter_bw =
              g_bw_inter * ((n_nodes <= 2 && algo == Algorithm::kNvlsTree) ? 2.0f : 1.0f);
          bw = std::min({intra_bw, inter_bw,
                         algo == Algorithm::kNvlsTree ? static_cast<float>(per_ch_max_nvls_tree_bw)
                                                      : std::numeric_limits<float>::max()});
        }
        float bus_bw = static_cast<float>(g.nchannels) * bw;
        const double nch = g.nchannels;

        // Model refinements, in NCCL's order.
        if (algo == Algorithm::kRing && proto == Protocol::kLL) {
          bus_bw = static_cast<float>(std::min(ll_max_bw, bus_bw * .5));
        }
        if (algo == Algorithm::kRing && proto == Protocol::kLL128) {
          bus_bw = static_cast<float>(std::min(bus_bw * 0.92, nch * per_ch_max_ring_ll128_bw));
        }
        if (algo == Algorithm::kTree && ck == CollKind::kAllReduce) {
          bus_bw = static_cast<float>(std::min(bus_bw * .92, nch * per_ch_max_tree_bw));
        }
        if (algo == Algorithm::kTree && proto == Protocol::kLL) {
          bus_bw = static_cast<float>(std::min(bus_bw * 1.0 / 3.8, ll_max_bw));
        }
        if (algo == Algorithm::kTree && proto == Protocol::kLL128) {
          bus_bw = static_cast<float>(std::min(bus_bw * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                                               nch * per_ch_max_tree_ll128_bw));
        }
        if (algo == Algorithm::kTree && c.tree_unbalanced) {
          bus_bw = static_cast<float>(bus_bw * .85);
        }
        if (algo == Algorithm::kPat) {
          bus_bw = static_cast<float>(bus_bw * .75);
        }
        if (collnet && proto != Protocol::kSimple) {
          bus_bw = 0;
        }
        if (algo == Algorithm::kCollNetDirect && proto == Protocol::kSimple) {
          if (ag_rs) {
            bus_bw = ppn * std::min(g_bw_intra, g_bw_inter * 0.9f);
          } else {
            float factor = static_cast<float>(ppn / (1.0 * g.nchannels));  // GPU/NIC ratio
            factor -= (factor - 1) / 2;
            bus_bw /= factor;
            if (c.compcap >= 90) {
              bus_bw = static_cast<float>(bus_bw * .85);
            }
          }
        }
        // AllGather/ReduceScatter over NVLS or CollNetDirect across nodes need collnet with
        // iallgather/ireducescatter and one head per local rank.
        if ((algo == Algorithm::kNvls || algo == Algorithm::kCollNetDirect) &&
            proto == Protocol::kSimple && ag_rs && n_nodes > 1) {
          if (!c.collnet_ag_rs_support) {
            bus_bw = 0.0f;
          }
          int n_heads = 0;
          if (c.collnet_enable) {
            n_heads = c.collnet_heads;
          } else {
            bus_bw = 0.0f;
          }
          if (bus_bw > 0.0f && c.max_local_ranks > n_heads) {
            bus_bw = 0.0f;
          }
        }
        // Bus bandwidth to algorithm bandwidth (not for non-Ring AllGather/ReduceScatter).
        if (!(algo != Algorithm::kRing && ag_rs)) {
          float ratio = 1.0f;
          if (algo == Algorithm::kRing || algo == Algorithm::kNvls ||
              algo == Algorithm::kNvlsTree) {
            ratio = static_cast<float>(ratio * ((1.0 * n_ranks) / nsteps));
          } else {
            ratio = static_cast<float>(ratio * .5);
          }
          bus_bw *= ratio;
        }
        t.bandwidth_GBps[coll][a][p] = bus_bw;

        // Latency.
        float lat = static_cast<float>(k.base_latency_us[a][p]);
        float intra_lat = static_cast<float>(hw_lat[intra_hw[a]][a][p]);
        // With one rank per node the latencies are fully exposed: use the Tree network latency.
        float inter_lat =
            static_cast<float>(ppn == 1 ? hw_lat[kHwNet][tree][p] : hw_lat[kHwNet][a][p]);
        inter_lat += g_lat_inter;
        if (proto == Protocol::kSimple) {
          inter_lat += g_lat_inter;  // flush
        }
        const int ppn_i = ppn_int(c);
        if (algo == Algorithm::kRing) {
          float hop = static_cast<float>(hw_lat[hw[a]][a][p]);
          if (ck == CollKind::kReduce || ck == CollKind::kBroadcast) {
            if (g.same_channels) {
              lat += hop;
            } else {
              if (proto == Protocol::kSimple) {
                hop = static_cast<float>(hw_lat[hw[a]][tree][p]);
              }
              lat += static_cast<float>(nsteps) * hop;
            }
          } else {
            float net_overhead = 0.0f;
            if (n_nodes > 1) {
              net_overhead = net_overhead_us(c);
              if (proto == Protocol::kSimple) {
                net_overhead *= 3;
              }
            }
            intra_lat = std::max(intra_lat, net_overhead);
            const int n_inter_steps = n_nodes == 1                 ? 0
                                      : ck == CollKind::kAllReduce ? 2 * (n_nodes - 1)
                                                                   : n_nodes - 1;
            lat += static_cast<float>(nsteps - n_inter_steps) * intra_lat +
                   static_cast<float>(n_inter_steps) * inter_lat;
          }
        } else if (algo == Algorithm::kTree) {
          if (ck == CollKind::kAllReduce) {
            lat += 2 * (static_cast<float>(ppn_i - 1) * intra_lat +
                        static_cast<float>(log2i(n_nodes)) * inter_lat);
          }
        } else if (algo == Algorithm::kCollNetDirect) {
          lat = static_cast<float>(
              lat +
              (2 * (static_cast<float>(std::min(1, ppn_i - 1)) * intra_lat + (ppn_i - 1) * 0.4) +
               inter_lat));
        } else if (algo == Algorithm::kCollNetChain) {
          lat += 2 * static_cast<float>(ppn_i - 1) * intra_lat + inter_lat;
        } else if (algo == Algorithm::kNvls) {
          lat = intra_lat;
          if (n_nodes > 1) {
            lat += inter_lat;
          }
        } else if (algo == Algorithm::kNvlsTree) {
          lat += intra_lat + 2 * static_cast<float>(log2i(n_nodes)) * inter_lat;
        } else if (algo == Algorithm::kPat) {
          if (ag_rs) {
            lat = static_cast<float>(
                lat + (static_cast<double>(log2i(n_nodes)) * (inter_lat / 3.5) + n_ranks * 2.8));
          }
        }
        t.latency_us[coll][a][p] = lat;
      }
    }
  }

  // Protocol/algorithm enables (tuning.cc): LL128 is "2" (auto) unless NCCL_PROTO says otherwise.
  std::array<std::array<int, kProtocolCount>, kTunedCollCount> proto_enable{};
  std::array<std::array<int, kAlgorithmCount>, kTunedCollCount> algo_enable{};
  for (int f = 0; f < kTunedCollCount; ++f) {
    for (int p = 0; p < kProtocolCount; ++p) {
      proto_enable[f][p] = p == ll128 ? 2 : 1;
    }
    algo_enable[f].fill(1);
  }
  if (!c.env.proto.empty()) {
    parse_list(c.env.proto, "NCCL_PROTO", kProtoTokens, proto_enable);
  }
  if (!c.env.algo.empty()) {
    parse_list(c.env.algo, "NCCL_ALGO", kAlgoTokens, algo_enable);
  }
  for (int f = 0; f < kTunedCollCount; ++f) {
    for (int a = 0; a < kAlgorithmCount; ++a) {
      const Algorithm algo = static_cast<Algorithm>(a);
      bool disable = false;
      if (n_nodes == 1 && algo == Algorithm::kNvlsTree) {
        disable = true;
      }
      if (!c.collnet_enable &&
          (algo == Algorithm::kCollNetDirect || algo == Algorithm::kCollNetChain ||
           (algo == Algorithm::kNvls && n_nodes > 1))) {
        disable = true;
      }
      if (!c.has_nvswitch && algo == Algorithm::kCollNetDirect) {
        disable = true;
      }
      if (disable) {
        algo_enable[f][a] = 0;
      }
    }
  }
  for (int f = 0; f < kTunedCollCount; ++f) {
    for (int a = 0; a < kAlgorithmCount; ++a) {
      for (int p = 0; p < kProtocolCount; ++p) {
        int p_enable = proto_enable[f][p];
        if (p_enable == 2 && p == ll128) {
          p_enable = ll128_enabled_by_default(c, c.graph(static_cast<Algorithm>(a))) ? 1 : 0;
        }
        if (p_enable == 0 || algo_enable[f][a] == 0) {
          t.bandwidth_GBps[f][a][p] = 0;
        }
      }
    }
  }

  // Per-thread work before more threads/channels are used.
  for (int a = 0; a < kAlgorithmCount; ++a) {
    t.thread_threshold[a][ll] = kLlThreadThreshold;
    t.thread_threshold[a][ll128] = kLl128ThreadThreshold;
    t.thread_threshold[a][simple] = kSimpleThreadThreshold;
  }
  t.thread_threshold[ring][ll] *= n_ranks;
  t.thread_threshold[index_of(Algorithm::kCollNetDirect)][simple] = kCollNetThreadThreshold;
  t.thread_threshold[index_of(Algorithm::kCollNetChain)][simple] = kCollNetThreadThreshold;
  return t;
}

double nccl_algo_time_us(const NcclTables& tables, CollKind coll, Algorithm algo, Protocol proto,
                         std::int64_t nbytes, int num_pipe_ops) {
  require_tuned(coll, "nccl_algo_time_us");
  if (nbytes < 0) {
    throw Error(fmt::format("nccl_algo_time_us: negative byte count {}", nbytes));
  }
  float bw = static_cast<float>(tables.bandwidth(coll, algo, proto));
  float lat = static_cast<float>(tables.latency(coll, algo, proto));
  if (bw == 0) {
    return -1.0;
  }
  const NcclCommInfo& c = tables.comm;
  const long log_size = log2i(nbytes >> 6);
  if (algo == Algorithm::kTree && coll == CollKind::kAllReduce && log_size >= 0 && log_size < 23) {
    bw *= kTreeCorrectionFactor[index_of(proto)][log_size];
  }
  if (algo == Algorithm::kRing && proto == Protocol::kSimple && c.nnodes > 1 &&
      coll == CollKind::kAllReduce &&
      nbytes / (static_cast<std::int64_t>(c.nchannels) * c.nranks) >= 64) {
    lat = static_cast<float>(lat * (c.compcap < 80 ? 1.9 : 1.4));  // plateau effect of ring
  }
  const int lat_count = algo == Algorithm::kRing
                            ? num_pipe_ops
                            : static_cast<int>(div_up(num_pipe_ops, kMaxDevWorkBatchColls));
  const float time = lat * static_cast<float>(lat_count) + static_cast<float>(nbytes) / (1000 * bw);
  return time;
}

NcclTables::AlgoProto nccl_cost_table(const NcclTables& tables, CollKind coll, std::int64_t nbytes,
                                      int num_pipe_ops) {
  require_tuned(coll, "nccl_cost_table");
  NcclTables::AlgoProto table;
  for (auto& row : table) {
    row.fill(-1.0);  // NCCL_ALGO_PROTO_IGNORE
  }
  const NcclCommInfo& c = tables.comm;
  if (c.nranks == 1) {
    table[index_of(Algorithm::kRing)][index_of(Protocol::kSimple)] = 0.0;
    return table;
  }
  for (int a = 0; a < kAlgorithmCount; ++a) {
    const Algorithm algo = static_cast<Algorithm>(a);
    const bool collnet = algo == Algorithm::kCollNetDirect || algo == Algorithm::kCollNetChain;
    if (collnet && !c.collnet_enable) {
      continue;
    }
    if (collnet && c.max_local_ranks > kMaxDirectArity + 1) {
      continue;
    }
    if ((algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree) &&
        (!c.nvls_support || (coll != CollKind::kAllReduce && c.max_local_ranks > kMaxNvlsArity))) {
      continue;
    }
    if (algo == Algorithm::kNvls && !c.collnet_enable && c.nnodes > 1) {
      continue;
    }
    for (int p = 0; p < kProtocolCount; ++p) {
      table[a][p] =
          nccl_algo_time_us(tables, coll, algo, static_cast<Protocol>(p), nbytes, num_pipe_ops);
    }
  }
  return table;
}

namespace {

// calcCollChunking (enqueue.cc): the chunk of one channel (or, for CollNet, of all `nchannels`
// channels) moving `nbytes` of global bytes.
std::int64_t coll_chunk_bytes(const NcclTables& t, CollKind coll, Algorithm algo, Protocol proto,
                              int nchannels, std::int64_t nbytes) {
  const NcclCommInfo& c = t.comm;
  const std::int64_t grain = kGrainBytes[index_of(proto)];
  std::int64_t step_size = buff_size(c, proto) / kSteps;
  const bool ring_simple = proto == Protocol::kSimple && algo == Algorithm::kRing;
  const int chunk_steps =
      ring_simple && (coll == CollKind::kAllReduce || coll == CollKind::kAllGather ||
                      coll == CollKind::kReduceScatter)
          ? kCollChunkSteps
          : 1;
  std::int64_t chunk = step_size * chunk_steps;
  if (proto == Protocol::kLL) {
    chunk /= 2;
  }
  if (proto == Protocol::kLL128) {
    chunk = (chunk / kLl128LineElems) * kLl128DataElems;
  }
  const std::int64_t nch = nchannels;
  if (algo == Algorithm::kCollNetDirect) {
    const std::int64_t heads = std::max(1, c.collnet_heads);
    const std::int64_t depth = ppn_int(c) > 1 ? 2 : 1;  // connect.cc: nUp/nDown ? 2 : 1
    while (nbytes / (nch * heads * chunk) < depth * 64 && chunk > 131072) {
      chunk /= 2;
    }
    while (nbytes / (nch * heads * chunk) < depth * 8 && chunk > 65536) {
      chunk /= 2;
    }
    while (nbytes / (nch * heads * chunk) < depth * 8 && chunk > 32768) {
      chunk /= 2;
    }
  } else if (algo == Algorithm::kCollNetChain) {
    step_size = c.env.buffsize_bytes / kSteps;
    chunk = std::min<std::int64_t>(std::int64_t{256} * 1024, step_size * chunk_steps);
    const std::int64_t depth = ppn_int(c);  // collnetChain.depth = nRanks / nNodes
    while (nbytes / (nch * chunk) < depth * 64 && chunk > 131072) {
      chunk /= 2;
    }
    while (nbytes / (nch * chunk) < depth * 8 && chunk > 65536) {
      chunk /= 2;
    }
    while (nbytes / (nch * chunk) < depth && chunk > 32768) {
      chunk /= 2;
    }
  } else if (algo == Algorithm::kNvls) {
    std::int64_t max_chunk = c.env.nvls_chunk_bytes;
    if (c.nnodes > 1 &&
        t.bandwidth(CollKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple) < 150) {
      max_chunk = 32768;
    }
    chunk = std::min(chunk, max_chunk);
    const std::int64_t ops = nch * c.nvls_heads;
    if (nbytes < 64 * (ops * chunk) && chunk > 65536) {
      chunk = 65536;
    }
    if (nbytes < 8 * (ops * chunk) && chunk > 32768) {
      chunk = 32768;
    }
    if (nbytes < 2 * (ops * chunk) && chunk > 16384) {
      chunk = 16384;
    }
  } else if (algo == Algorithm::kNvlsTree) {
    const std::int64_t ops = nch * c.nvls_heads;
    chunk = c.env.nvls_chunk_bytes;
    std::int64_t max_chunk = c.env.nvlstree_max_chunk_bytes;
    if (max_chunk == -2) {
      max_chunk = c.nnodes >= 4 ? 65536 : chunk;
    }
    chunk = std::min(chunk, max_chunk);
    if (nbytes < 32 * (ops * chunk) && chunk > 262144) {
      chunk = 262144;
    }
    if (nbytes < 16 * (ops * chunk) && chunk > 131072) {
      chunk = 131072;
    }
    if (nbytes < 4 * (ops * chunk) && chunk > 65536) {
      chunk = 65536;
    }
    if (nbytes < 1 * (ops * chunk) && chunk > 32768) {
      chunk = 32768;
    }
  } else if (algo == Algorithm::kTree && proto == Protocol::kLL128) {
    const float ppn = static_cast<float>(c.nranks) / static_cast<float>(c.nnodes);
    const float nsteps_ll128 =
        static_cast<float>(1 + static_cast<double>(log2i(c.nnodes)) + 0.1 * ppn);
    // NCCL divides in integers on the left-hand side on purpose ("coverity[integer_division]").
    // NOLINTNEXTLINE(bugprone-integer-division)
    while (static_cast<float>(nbytes / (nch * chunk)) < nsteps_ll128 * 64 / ppn && chunk > 131072) {
      chunk /= 2;
    }
    // NOLINTNEXTLINE(bugprone-integer-division)
    while (static_cast<float>(nbytes / (nch * chunk)) < nsteps_ll128 * 16 / ppn && chunk > 32768) {
      chunk /= 2;
    }
  } else if (coll == CollKind::kAllGather && algo == Algorithm::kPat) {
    while (chunk * nch * 32 > nbytes && chunk > 65536) {
      chunk /= 2;
    }
  } else if (coll == CollKind::kReduceScatter && algo == Algorithm::kPat) {
    while (chunk * nch * 16 > nbytes && chunk > 65536) {
      chunk /= 2;
    }
  }
  return chunk / grain * grain;
}

int traffic_per_byte(CollKind coll, int nranks) {  // ncclFuncTrafficPerByte
  switch (coll) {
    case CollKind::kAllReduce:
      return 2;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter:
      return nranks;
    default:
      return 1;
  }
}

// scheduleCollTasksToPlan's split of one collective (alone in its plan) into cells spread over
// channels: the number of channels used and the bytes (count * elementSize, i.e. per-rank bytes
// for AllGather/ReduceScatter) of the first channel.
struct CellSplit {
  int nchannels = 0;
  std::int64_t lo_bytes = 0;
};

CellSplit cell_split(CollKind coll, Protocol proto, int nranks, std::int64_t count_bytes,
                     int task_max_channels, int kind_max_channels) {
  CellSplit s;
  std::int64_t tpb = traffic_per_byte(coll, nranks);
  std::int64_t task_traffic = count_bytes * tpb;
  if (proto == Protocol::kLL) {
    task_traffic *= 4;
    tpb *= 4;
  }
  const std::int64_t traffic_bytes = std::max(kMinTrafficPerChannel, task_traffic);
  const std::int64_t kind_channels = std::min(task_max_channels, kind_max_channels);
  const std::int64_t traffic_per_channel =
      std::max(kMinTrafficPerChannel, traffic_bytes / kind_channels);
  const std::int64_t cell_size = div_up(div_up(kMinTrafficPerChannel, tpb), 16) * 16;
  const std::int64_t cells = div_up(count_bytes, cell_size);
  const std::int64_t traffic_per_cell = cell_size * tpb;
  std::int64_t cells_per_channel = std::min(cells, div_up(traffic_per_channel, traffic_per_cell));
  const int channel_id = 0;
  std::int64_t cells_lo = channel_id + 1 == kind_max_channels
                              ? cells
                              : std::min(cells, div_up(traffic_per_channel, traffic_per_cell));
  if (cells == 0 || cells_per_channel == 0) {  // empty collective: NCCL launches nothing
    return s;
  }
  std::int64_t n_mid = (cells - cells_lo) / cells_per_channel;
  std::int64_t cells_hi = (cells - cells_lo) % cells_per_channel;
  std::int64_t nch = (cells_lo != 0 ? 1 : 0) + n_mid + (cells_hi != 0 ? 1 : 0);
  if (kind_max_channels < channel_id + nch) {  // overflowed the available channels
    n_mid = kind_max_channels - channel_id - 2;
    cells_per_channel = (cells - cells_lo) / (n_mid + 1);
    cells_hi = cells_per_channel + (cells - cells_lo) % (n_mid + 1);
  }
  if (cells_hi == 0 && n_mid != 0) {
    cells_hi = cells_per_channel;
    n_mid -= 1;
  }
  if (cells_lo == 0) {
    if (n_mid == 0) {
      cells_lo = cells_hi;
      cells_hi = 0;
    } else {
      cells_lo = cells_per_channel;
      n_mid -= 1;
    }
  }
  std::int64_t count_lo = cells_lo * cell_size;
  std::int64_t count_hi = cells_hi * cell_size;
  (count_hi != 0 ? count_hi : count_lo) -= cells * cell_size - count_bytes;
  s.nchannels = static_cast<int>((count_lo != 0 ? 1 : 0) + n_mid + (cells_hi != 0 ? 1 : 0));
  s.lo_bytes = count_lo;
  return s;
}

NcclChoice plan_collective(const NcclTables& t, CollKind coll, Algorithm algo, Protocol proto,
                           std::int64_t nbytes, int plugin_nchannels) {
  const NcclCommInfo& c = t.comm;
  NcclChoice out;
  out.config.algo = algo;
  out.config.proto = proto;
  out.config.transport = transport_of(c);

  // topoGetAlgoInfo: channel and thread reduction.
  int nc = c.nchannels;
  int nt = t.max_threads[index_of(algo)][index_of(proto)];
  std::int64_t threshold = t.thread_threshold[index_of(algo)][index_of(proto)];
  if (algo == Algorithm::kCollNetDirect) {
    const std::int64_t heads = c.collnet_heads;
    int nc_switch = 16;
    bool flag = true;
    while (nc_switch >= 1 && flag) {
      while ((flag = nbytes < static_cast<std::int64_t>(nc) * nt * heads * threshold) &&
             nc > nc_switch) {
        if (nc == nc_switch + nc_switch / 2) {
          threshold /= 2;
        }
        nc--;
      }
      nc_switch /= 2;
    }
  } else if (algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree) {
    nc = c.nnodes > 1 && algo == Algorithm::kNvls ? std::min(c.nvls_channels, c.nchannels)
                                                  : c.nvls_channels;
    if (nc < 1) {  // no NVLink SHARP here: NCCL never runs it (and the cell split needs nc >= 1)
      throw Error(fmt::format("{} needs NVLink SHARP channels; this communicator has none",
                              to_string(algo)));
    }
  } else {
    while (nbytes < static_cast<std::int64_t>(nc) * nt * threshold && nc >= 2) {
      nc--;
    }
  }
  if (algo != Algorithm::kNvls && algo != Algorithm::kNvlsTree &&
      algo != Algorithm::kCollNetDirect) {
    while (nbytes < static_cast<std::int64_t>(nc) * nt * threshold && nt % 128 == 0) {
      nt /= 2;
    }
  }
  if (proto == Protocol::kSimple) {
    if (algo == Algorithm::kRing) {
      nt += kWarpSize;  // extra warp for sync
    }
    if (algo == Algorithm::kTree) {
      nt += 4 * kWarpSize;  // split thread model
    }
  }
  nt = nt / kWarpSize < 3 ? 3 * kWarpSize : nt;
  if (algo == Algorithm::kTree || algo == Algorithm::kPat) {
    nt = kMaxNthreads;
  }
  if (plugin_nchannels > 0) {
    nc = plugin_nchannels;  // getAlgoInfo: a tuner's nChannels overrides nMaxChannels
  }
  out.max_channels = nc;
  out.config.nthreads = nt / kWarpSize * kWarpSize;

  // scheduleCollTasksToPlan: CollNet kinds (and multi-node NVLS) run on all nMaxChannels with one
  // chunk computed from the whole buffer; the others split cells over channels.
  const bool is_collnet = algo == Algorithm::kCollNetDirect || algo == Algorithm::kCollNetChain ||
                          (algo == Algorithm::kNvls && c.nnodes > 1);
  const bool is_nvls = algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree;
  const bool per_rank = coll == CollKind::kAllGather || coll == CollKind::kReduceScatter;
  const std::int64_t global_per_count = per_rank ? c.nranks : 1;
  const std::int64_t count_bytes = nbytes / global_per_count;
  if (is_collnet) {
    out.config.nchannels = std::max(1, nc);
    out.config.chunk_bytes = coll_chunk_bytes(t, coll, algo, proto, out.config.nchannels,
                                              global_per_count * count_bytes);
    return out;
  }
  const int kind_max = is_nvls ? c.nvls_channels : c.nchannels;
  const CellSplit split = cell_split(coll, proto, c.nranks, count_bytes, nc, kind_max);
  if (split.nchannels == 0) {  // nothing to move: report one channel at the largest chunk
    out.config.nchannels = 1;
    out.config.chunk_bytes = coll_chunk_bytes(t, coll, algo, proto, 1, 0);
    return out;
  }
  out.config.nchannels = split.nchannels;
  out.config.chunk_bytes =
      coll_chunk_bytes(t, coll, algo, proto, 1, global_per_count * split.lo_bytes);
  return out;
}

// addP2pToPlan / scheduleP2pTasksToPlan for one peer exchange of `bytes`.
NcclChoice plan_p2p(const NcclTables& t, CollKind coll, std::int64_t nbytes) {
  const NcclCommInfo& c = t.comm;
  NcclChoice out;
  out.config.algo = Algorithm::kRing;
  out.config.transport = transport_of(c);
  out.config.nthreads = kMaxNthreads;  // the p2p kernel runs NCCL_MAX_NTHREADS
  const bool network = c.nnodes > 1;
  const std::int64_t bytes = coll == CollKind::kAllToAll ? nbytes / c.nranks : nbytes;

  const int n_channels_max = c.p2p_nchannels_per_peer;
  int n_channels_min = n_channels_max;
  while (n_channels_min * c.nranks > c.p2p_nchannels && n_channels_min > 1) {
    n_channels_min /= 2;
  }
  // init.cc: p2pChunkSize by topology, capped at BUFFSIZE / NCCL_STEPS.
  std::int64_t p2p_chunk = c.nnodes > 1   ? c.env.p2p_net_chunk_bytes
                           : c.all_nvlink ? c.env.p2p_nvl_chunk_bytes
                                          : c.env.p2p_pci_chunk_bytes;
  if (p2p_chunk * kSteps > c.env.buffsize_bytes) {
    p2p_chunk = c.env.buffsize_bytes / kSteps;
  }
  // LL needs LL buffers on the connection: network p2p connections have none by default.
  const bool ll_buffers = !network || c.env.alloc_p2p_net_ll_buffers;
  const bool proto_ll = ll_buffers && bytes <= n_channels_max * c.env.p2p_ll_threshold_bytes;
  const Protocol proto = proto_ll ? Protocol::kLL : Protocol::kSimple;
  out.config.proto = proto;
  std::int64_t step_size = proto_ll ? c.env.ll_buffsize_bytes / kSteps : p2p_chunk;
  std::int64_t chunk = step_size;
  if (c.env.chunk_size_bytes != 0) {
    chunk = c.env.chunk_size_bytes;
  } else if (network) {
    if (proto == Protocol::kSimple && bytes < step_size) {
      chunk /= 4;
    } else if (bytes < 8 * step_size) {
      chunk /= 2;
    }
  }
  std::int64_t data = chunk;
  if (proto_ll) {
    data /= 2;
  }
  data = u32fp8_round(static_cast<std::uint32_t>(data));
  out.config.chunk_bytes = data;

  int nch = 1;
  if (bytes > 0) {
    const std::int64_t min_part = c.nnodes > 1 ? step_size / 2 : step_size / 8;
    const std::int64_t max_part = c.nnodes > 1 ? step_size : step_size * 32;
    nch = static_cast<int>(std::min<std::int64_t>(n_channels_min, div_up(bytes, min_part)));
    std::int64_t part = std::max(min_part, div_up(bytes, nch));
    while (part > max_part && nch <= n_channels_max / 2) {
      nch *= 2;
      part = div_up(bytes, nch);
    }
  }
  out.max_channels = nch;
  out.config.nchannels = nch;
  if (coll == CollKind::kAllToAll && c.nranks > 1) {
    // Each round r (peer offset) starts at channel base bitreverse(r) (single node,
    // ncclP2pChannelBaseForRound) and uses nch consecutive p2p channels; the kernel launches one
    // CTA per channel used by any round. Across nodes NCCL groups rounds; we take the same count.
    const int p2p = c.p2p_nchannels;
    int bits = 0;
    while ((1 << bits) < p2p) {
      ++bits;
    }
    std::uint64_t mask = 0;
    for (int r = 0; r < c.nranks; ++r) {
      unsigned base = 0;
      for (int b = 0; b < bits; ++b) {
        if ((r >> b) & 1) {
          base |= 1u << (bits - 1 - b);
        }
      }
      for (int part = 0; part < nch; ++part) {
        mask |= std::uint64_t{1} << ((base + static_cast<unsigned>(part)) &
                                     static_cast<unsigned>(p2p - 1));
      }
    }
    out.config.nchannels = __builtin_popcountll(mask);
  }
  return out;
}

}  // namespace

CommConfig nccl_config_for(const NcclTables& tables, CollKind coll, Algorithm algo, Protocol proto,
                           std::int64_t nbytes, int plugin_nchannels) {
  require_tuned(coll, "nccl_config_for");
  if (nbytes < 0) {
    throw Error(fmt::format("nccl_config_for: negative byte count {}", nbytes));
  }
  return plan_collective(tables, coll, algo, proto, nbytes, plugin_nchannels).config;
}

NcclChoice nccl_choose(const NcclTables& tables, CollKind coll, std::int64_t nbytes) {
  if (nbytes < 0) {
    throw Error(fmt::format("NCCL {} of {} bytes: negative byte count", to_string(coll), nbytes));
  }
  if (!is_tuned(coll)) {
    return plan_p2p(tables, coll, nbytes);
  }
  const NcclCommInfo& c = tables.comm;
  if (c.nranks == 1) {  // ncclLaunchOneRank: a local copy, no collective kernel
    NcclChoice one;
    one.config.algo = Algorithm::kRing;
    one.config.proto = Protocol::kSimple;
    one.config.transport = transport_of(c);
    one.config.nchannels = 1;
    one.config.nthreads = kSimpleMaxNthreads + kWarpSize;
    one.config.chunk_bytes = c.env.buffsize_bytes / kSteps * kCollChunkSteps;
    one.max_channels = 1;
    return one;
  }
  const NcclTables::AlgoProto table = nccl_cost_table(tables, coll, nbytes);
  // topoGetAlgoInfo: algorithm-major scan, strict '<' keeps the first minimum. Costs are floats.
  float min_time = 3600000000.0f;
  int best_a = -1;
  int best_p = -1;
  for (int a = 0; a < kAlgorithmCount; ++a) {
    for (int p = 0; p < kProtocolCount; ++p) {
      const float v = static_cast<float>(table[a][p]);
      if (v == -1.0f) {
        continue;
      }
      if (v >= 0.0f && v < min_time) {
        best_a = a;
        best_p = p;
        min_time = v;
      }
    }
  }
  if (best_a < 0) {
    throw Error(fmt::format(
        "NCCL {} of {}: no algorithm/protocol available on this communicator{}{}", to_string(coll),
        format_bytes(nbytes), c.env.algo.empty() ? "" : fmt::format(" (NCCL_ALGO={})", c.env.algo),
        c.env.proto.empty() ? "" : fmt::format(" (NCCL_PROTO={})", c.env.proto)));
  }
  NcclChoice choice = plan_collective(tables, coll, static_cast<Algorithm>(best_a),
                                      static_cast<Protocol>(best_p), nbytes, 0);
  choice.predicted_us = min_time;
  return choice;
}

CommConfig nccl_default_config(const NcclCommInfo& info, CollKind coll, std::int64_t nbytes) {
  return nccl_choose(nccl_tune_model(info), coll, nbytes).config;
}

std::optional<std::string> why_illegal(const NcclCommInfo& info, CollKind coll,
                                       const CommConfig& config) {
  const NcclCommInfo c = resolve_comm_info(info);
  const Algorithm a = config.algo;
  const Protocol p = config.proto;
  const std::string what = fmt::format("{}/{} for {}", to_string(a), to_string(p), to_string(coll));

  // Channels and threads (§1.3-1.4).
  if (config.nchannels < 1 || config.nchannels > kMaxChannels) {
    return fmt::format("{}: {} channels is outside 1..{} (MAXCHANNELS)", what, config.nchannels,
                       kMaxChannels);
  }
  if (config.nthreads % kWarpSize != 0) {
    return fmt::format("{}: {} threads is not a multiple of the warp size ({})", what,
                       config.nthreads, kWarpSize);
  }
  const int min_threads = p == Protocol::kLL128 ? kLl128MaxNthreads / 4 : 2 * kWarpSize;
  if (config.nthreads < min_threads || config.nthreads > kMaxNthreads) {
    return fmt::format(
        "{}: {} threads is outside {}..{} ({})", what, config.nthreads, min_threads, kMaxNthreads,
        p == Protocol::kLL128 ? "NCCL_LL128_NTHREADS" : "NCCL_NTHREADS plus sync warps");
  }
  // Chunk (§1.5): at least one protocol grain, at most the connection buffer.
  const std::int64_t grain = kGrainBytes[index_of(p)];
  if (config.chunk_bytes < grain) {
    return fmt::format("{}: chunk of {} B is below the {} grain of {} B", what, config.chunk_bytes,
                       to_string(p), grain);
  }
  std::int64_t buffer_data = buff_size(c, p);
  if (p == Protocol::kLL) {
    buffer_data /= 2;
  } else if (p == Protocol::kLL128) {
    buffer_data = buffer_data / kLl128LineElems * kLl128DataElems;
  }
  if (config.chunk_bytes > buffer_data) {
    return fmt::format("{}: chunk of {} exceeds the {} connection buffer ({} of payload)", what,
                       format_bytes(config.chunk_bytes), to_string(p), format_bytes(buffer_data));
  }

  // p2p collectives run NCCL's send/recv schedule: no algorithm choice, LL or Simple only.
  if (!is_tuned(coll)) {
    if (a != Algorithm::kRing) {
      return fmt::format(
          "{}: {} goes through NCCL's p2p path; only the Ring (p2p) schedule applies", what,
          to_string(coll));
    }
    if (p == Protocol::kLL128) {
      return fmt::format("{}: NCCL's p2p path uses LL or Simple, never LL128", what);
    }
    return std::nullopt;
  }

  // Algorithm per function (§1.1, ncclTopoTuneModel).
  if (!algo_computed_for(coll, a)) {
    return fmt::format(
        "{}: NCCL does not implement {} for {} (Broadcast/Reduce: Ring; "
        "AllGather/ReduceScatter: Ring, PAT, NVLS, CollNetDirect; AllReduce: all "
        "but PAT)",
        what, to_string(a), to_string(coll));
  }
  if ((a == Algorithm::kNvls || a == Algorithm::kNvlsTree || a == Algorithm::kPat) &&
      p != Protocol::kSimple) {
    return fmt::format("{}: {} runs the Simple protocol only", what, to_string(a));
  }
  if (a == Algorithm::kNvls || a == Algorithm::kNvlsTree) {
    if (config.transport != Transport::kP2pNvlink &&
        !(c.nnodes > 1 && config.transport == Transport::kNet)) {
      return fmt::format("{}: NVLS needs NVLink SHARP; it cannot run over {}", what,
                         to_string(config.transport));
    }
    if (!c.nvls_support || c.nvls.nchannels < 2) {
      return fmt::format(
          "{}: NVLS needs NVLink SHARP (an NVSwitch system of sm90+ GPUs with "
          "multicast support); this communicator has none",
          what);
    }
    if (coll != CollKind::kAllReduce && c.max_local_ranks > kMaxNvlsArity) {
      return fmt::format("{}: NVLS {} is limited to {} local ranks (NCCL_MAX_NVLS_ARITY)", what,
                         to_string(coll), kMaxNvlsArity);
    }
  }
  if (a == Algorithm::kNvlsTree && c.nnodes == 1) {
    return fmt::format("{}: NVLSTree is disabled on a single node", what);
  }
  if (a == Algorithm::kNvls && c.nnodes > 1 && !c.collnet_enable) {
    return fmt::format("{}: multi-node NVLS needs CollNet (collnetEnable=1)", what);
  }
  if (a == Algorithm::kPat && !pat_enabled(c)) {
    return fmt::format(
        "{}: PAT is not enabled here (NCCL_PAT_ENABLE=2 allows it only with one GPU "
        "per node, sm60+ and no network device offload)",
        what);
  }
  if (a == Algorithm::kCollNetDirect || a == Algorithm::kCollNetChain) {
    if (!c.collnet_enable) {
      return fmt::format("{}: CollNet needs collnetEnable=1 and a CollNet plugin", what);
    }
    if (p != Protocol::kSimple) {
      return fmt::format("{}: CollNet runs the Simple protocol only", what);
    }
    if (a == Algorithm::kCollNetDirect && !c.has_nvswitch) {
      return fmt::format("{}: CollNetDirect needs an NVSwitch system", what);
    }
    if (c.max_local_ranks > kMaxDirectArity + 1) {
      return fmt::format("{}: CollNet is limited to {} local ranks", what, kMaxDirectArity + 1);
    }
  }
  if (p == Protocol::kLL128 && !ll128_enabled_by_default(c, c.graph(a))) {
    return fmt::format(
        "{}: NCCL disables LL128 here (it needs sm70+, one compute capability, "
        "NVLink intra-node paths (<= NVB) and inter-node paths <= {}); forcing it "
        "can corrupt data",
        what, c.env.ll128_c2c && c.compcap >= 90 ? "PXN" : "PXB");
  }
  // Remaining NCCL_ALGO/NCCL_PROTO exclusions and zero-bandwidth entries.
  const NcclTables t = nccl_tune_model(c);
  if (c.nranks > 1 && t.bandwidth(coll, a, p) == 0) {
    return fmt::format("{}: disabled on this communicator (zero bandwidth in NCCL's model{})", what,
                       c.env.algo.empty() && c.env.proto.empty() ? "" : ", NCCL_ALGO/NCCL_PROTO");
  }
  return std::nullopt;
}

}  // namespace lagom::sim
