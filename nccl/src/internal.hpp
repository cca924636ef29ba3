// Internal: NCCL 2.28.9's constants and the small rules with NCCL's integer semantics that the
// tune model, chunk planning and legality share (nccl@v2.28.9-1 src/graph/tuning.cc,
// src/include/device.h, comm.h, collectives.h, graph/topo.h, transport/nvls.cc).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "lagom/common/error.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/comm_info.hpp"

namespace lagom::nccl::internal {

// ------------------------------------------------------------------------------------------------
// Constants. The tuner constants are ncclTunerConstantsDefaults (src/graph/tuning.cc,
// reference/nccl.md §2.2), measured by NVIDIA; the rest are compile-time limits of
// src/include/device.h, comm.h, collectives.h, graph/topo.h and transport/nvls.cc.
// ------------------------------------------------------------------------------------------------

inline constexpr int kHwNvlink = 0;  // NCCL_HW_NVLINK
inline constexpr int kHwPci = 1;     // NCCL_HW_PCI
inline constexpr int kHwNet = 2;     // NCCL_HW_NET

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
inline constexpr TunerConstants kNcclTunerConstants = {
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

// NCCL 2.18.3's constants (nccl@v2.18.3-1 src/graph/tuning.cc). 2.18 has no PAT (its row stays
// 0) and no Blackwell row: sm90 and above use the Hopper row, so the fourth row repeats it.
inline constexpr TunerConstants kNccl218TunerConstants = {
    // baseLat {LL, LL128, Simple}
    {{6.8, 14.0, 0}, {6.6, 14.0, 8.4},     // Tree, Ring
     {6.8, 14.0, 0}, {6.8, 14.0, 0},       // CollNetDirect, CollNetChain
     {0, 0, 23.0}, {0, 0, 23.0},           // NVLS, NVLSTree
     {0, 0, 0}},                           // (no PAT)
    // hwLat
    {{{.6, 1.25, 4}, {.6, 1.9, 3.4}, {0, 0, 8.0}, {0, 0, 4.75}, {0, 0, 0}, {0, 0, 0},
      {0, 0, 0}},                                                                      // NVLINK
     {{1.0, 1.9, 6}, {1.0, 2.5, 5.7}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0},
      {0, 0, 0}},                                                                      // PCI
     {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 10.7}, {0, 0, 14}, {0, 0, 18}, {0, 0, 19},
      {0, 0, 0}}},                                                                     // NET
    // llMaxBws
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}},
    // perChMaxRingLL128Bws
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {36.7, 36.7, 36.7}},
    // perChMaxTreeLL128Bws
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {36.7, 36.7, 29.0}},
    // perChMaxTreeBws
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {38.7, 41.4, 36.0}},
    // (no perChMaxNVLSTreeBws in 2.18)
    {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
};

// nvlsEfficiency[compcap index] (tuning.cc).
inline constexpr float kNvlsEfficiency[4] = {0.0f, 0.0f, 0.85f, 0.74f};

// treeCorrectionFactor[proto][log2(nBytes/64)], 64 B .. 256 MiB (tuning.cc, §2.5).
inline constexpr float kTreeCorrectionFactor[kProtocolCount][23] = {
    {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f, .7f, .7f, .6f, .5f, .4f, .4f, .5f, .6f, .7f, .8f,
     .9f, 1.0f, 1.0f, 1.0f, 1.0f},
    {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f, .8f, .7f, .6f, .6f, .6f, .6f, .6f, .6f, .8f, .9f,
     .9f, .9f, .9f, 1.0f, 1.0f},
    {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f, .6f, .6f, .5f, .5f, .5f, .5f, .6f, .7f, .8f, .7f,
     .7f, .8f, .9f, .9f}};
// clang-format on

inline constexpr int kWarpSize = 32;                // WARP_SIZE
inline constexpr int kMaxChannels = 64;             // MAXCHANNELS
inline constexpr int kMaxChannels218 = 32;          // MAXCHANNELS in 2.18.3 (devcomm.h)
inline constexpr int kMaxNthreads = 640;            // NCCL_MAX_NTHREADS
inline constexpr int kSimpleMaxNthreads = 512;      // NCCL_SIMPLE_MAX_NTHREADS
inline constexpr int kLlMaxNthreads = 512;          // NCCL_LL_MAX_NTHREADS
inline constexpr int kLl128MaxNthreads = 640;       // NCCL_LL128_MAX_NTHREADS
inline constexpr int kSteps = 8;                    // NCCL_STEPS
inline constexpr int kCollChunkSteps = kSteps / 2;  // ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS
inline constexpr int kLl128LineElems = 16;          // NCCL_LL128_LINEELEMS (u64 per 128 B line)
inline constexpr int kLl128DataElems = 15;          // NCCL_LL128_DATAELEMS
inline constexpr std::int64_t kLlThreadThreshold = 8;       // NCCL_LL_THREAD_THRESHOLD
inline constexpr std::int64_t kLl128ThreadThreshold = 8;    // NCCL_LL128_THREAD_THRESHOLD
inline constexpr std::int64_t kSimpleThreadThreshold = 64;  // NCCL_SIMPLE_THREAD_THRESHOLD
inline constexpr std::int64_t kCollNetThreadThreshold = 512;
inline constexpr double kPciBw_GBps = 12.0;                      // PCI_BW (topo.h)
inline constexpr int kMaxDevWorkBatchColls = 1024 / 96;          // 1024 / sizeof(ncclDevWorkColl)
inline constexpr int kMaxWorkElements218 = 9;                    // NCCL_MAX_WORK_ELEMENTS, 2.18.3
inline constexpr int kMaxDirectArity = 7;                        // NCCL_MAX_DIRECT_ARITY
inline constexpr int kMaxNvlsArity = 32;                         // NCCL_MAX_NVLS_ARITY
inline constexpr std::int64_t kMinTrafficPerChannel = 16 << 10;  // scheduleCollTasksToPlan
inline constexpr int kNvlsChannelsSm90 = 16;                     // NVLS_NCHANNELS_SM90
inline constexpr int kNvlsChannelsSm100 = 32;     // NVLS_NCHANNELS_SM100 (several nodes)
inline constexpr int kNvlsChannelsSm100Nvl = 24;  // NVLS_NCHANNELS_SM100_NVL (one NVLink domain)

// ncclProtoGrainSize: LL 16 B; LL128 32 thr * 8 elems / 16 * 15 * 8 B = 3840 B; Simple 512 B.
inline constexpr std::int64_t kGrainBytes[kProtocolCount] = {16, 3840, 512};

inline constexpr std::string_view kAlgoTokens[kAlgorithmCount] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
inline constexpr std::string_view kProtoTokens[kProtocolCount] = {"LL", "LL128", "Simple"};

// ------------------------------------------------------------------------------------------------
// Small helpers with NCCL's integer semantics.
// ------------------------------------------------------------------------------------------------

inline std::int64_t div_up(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
inline std::int64_t log2i(std::int64_t n) {  // log2Down: -1 for 0
  std::int64_t r = -1;
  while (n > 0) {
    n >>= 1;
    ++r;
  }
  return r;
}
inline int pow2_up(int x) {
  int p = 1;
  while (p < x) {
    p <<= 1;
  }
  return p;
}

inline int compcap_index(int cc) {
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

// getNthreads (tuning.cc): NCCL_NTHREADS-style override with NCCL's clamping.
inline int get_nthreads(int env, int min, int max, int def) {
  if (env <= 0) {
    return def;
  }
  if (env % kWarpSize != 0) {
    return max;
  }
  return std::clamp(env, min, max);
}

// getNetOverhead (tuning.cc), µs.
inline float net_overhead_us(const CommInfo& c) {
  if (c.env.net_overhead_us >= 0) {
    return static_cast<float>(c.env.net_overhead_us);
  }
  if (c.cpu_arch == CpuArch::kX86 && c.cpu_vendor == CpuVendor::kAmd) {
    return 2.0f;
  }
  return 1.0f;
}

// ncclPatEnable (tuning.cc). 2.18 has no PAT.
inline bool pat_enabled(const CommInfo& c) {
  if (c.version == Version::k2_18 || c.compcap < 60) {
    return false;
  }
  if (c.env.pat_enable != 2) {
    return c.env.pat_enable != 0;
  }
  return c.nnodes == c.nranks && !c.net_device_offload;
}

inline int ppn_int(const CommInfo& c) {
  return c.nranks / c.nnodes;
}

inline Transport transport_of(const CommInfo& c) {
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

inline std::int64_t buff_size(const CommInfo& c, Protocol p) {
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
inline std::uint32_t u32fp8_round(std::uint32_t x) {
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

// Which algorithms ncclTopoTuneModel computes for a function (§1.1). 2.18.3: Ring only for every
// function but AllReduce, and no PAT.
inline bool algo_computed_for(CollKind coll, Algorithm a, Version v) {
  if (v == Version::k2_18) {
    return a != Algorithm::kPat && (coll == CollKind::kAllReduce || a == Algorithm::kRing);
  }
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

// The LL128 default (tuning.cc). 2.18.3 enables it on sm70, sm80 and sm90 only (not on sm86, an
// A40's, or sm89) and has no NCCL_LL128_C2C.
inline bool ll128_enabled_by_default(const CommInfo& c, const GraphInfo& g) {
  bool on = true;
  if (c.version == Version::k2_18) {
    on = on &&
         (g.type_inter <= PathType::kPxb || (c.compcap >= 90 && g.type_inter <= PathType::kPxn));
    on = on && g.type_intra <= PathType::kNvb;
    on = on && c.compcap == c.max_compcap;
    return on && (c.compcap == 70 || c.compcap == 80 || c.compcap == 90);
  }
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

inline void require_tuned(CollKind coll, std::string_view fn) {
  if (!is_tuned(coll)) {
    throw Error(fmt::format("{}: {} is not one of NCCL's tuned collectives", fn, to_string(coll)));
  }
}

}  // namespace lagom::nccl::internal
