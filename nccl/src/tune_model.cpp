// NCCL 2.28.9's analytic tune model (ncclTopoTuneModel), its time estimate (ncclTopoGetAlgoTime)
// and the cost table a tuner plugin sees (updateCollCostTable), emulated exactly. NCCL computes
// the tables and times in single precision; so do we, so that near-ties resolve as in NCCL.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string_view>
#include <vector>

#include "algo_proto_list.hpp"
#include "internal.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"
#include "lagom/nccl/tuning.hpp"

namespace lagom::nccl {

using namespace internal;  // NOLINT(google-build-using-namespace): this module's own rules

double Tables::latency(CollKind c, Algorithm a, Protocol p) const {
  return latency_us[index_of(c)][index_of(a)][index_of(p)];
}
double Tables::bandwidth(CollKind c, Algorithm a, Protocol p) const {
  return bandwidth_GBps[index_of(c)][index_of(a)][index_of(p)];
}

namespace {

using HwLatency = std::array<std::array<std::array<double, kProtocolCount>, kAlgorithmCount>, 3>;

HwLatency hw_latencies(const TunerConstants& k) {
  HwLatency hw{};
  for (int h = 0; h < 3; ++h) {
    for (int a = 0; a < kAlgorithmCount; ++a) {
      for (int p = 0; p < kProtocolCount; ++p) {
        hw[h][a][p] = k.hw_latency_us[h][a][p];
      }
    }
  }
  return hw;
}

// What both releases' tables start from (ncclTopoTuneModel's prologue): the hop latencies, the
// per-channel caps of the constants' rows for this GPU, node count and CPU, ranks per node, and
// the hardware class (NVLink, PCI, network) of each algorithm's intra-node and own hops.
struct Prologue {
  HwLatency hw_lat{};
  double ll_max_bw = 0;
  double per_ch_max_tree_bw = 0;
  double per_ch_max_ring_ll128_bw = 0;
  double per_ch_max_tree_ll128_bw = 0;
  double per_ch_max_nvls_tree_bw = 0;
  float ppn = 0;
  int intra_hw[kAlgorithmCount] = {};
  int hw[kAlgorithmCount] = {};
};

Prologue prologue(const CommInfo& c, const TunerConstants& k) {
  Prologue p;
  p.hw_lat = hw_latencies(k);
  // The constants' rows: compute capability (2.18's tables have no Blackwell row: its fourth row
  // repeats Hopper's); across nodes llMaxBws' row is the CPU (2.18 knows no mixed vendors).
  const int cc_index = compcap_index(c.compcap);
  const int index2 = c.nnodes <= 2 ? c.nnodes - 1 : 2;
  const bool amd = c.cpu_vendor == CpuVendor::kAmd ||
                   (c.version != Version::k2_18 && c.cpu_vendor == CpuVendor::kMixed);
  const int index1 = c.nnodes == 1 ? cc_index : amd ? 1 : 0;
  p.ll_max_bw = k.ll_max_bw_GBps[index1][index2];
  p.per_ch_max_tree_bw = k.per_ch_max_tree_bw_GBps[cc_index][index2];
  p.per_ch_max_ring_ll128_bw = k.per_ch_max_ring_ll128_bw_GBps[cc_index][index2];
  p.per_ch_max_tree_ll128_bw = k.per_ch_max_tree_ll128_bw_GBps[cc_index][index2];
  p.per_ch_max_nvls_tree_bw = k.per_ch_max_nvls_tree_bw_GBps[cc_index][index2];
  const int ring = index_of(Algorithm::kRing);
  const int tree = index_of(Algorithm::kTree);
  const int simple = index_of(Protocol::kSimple);
  if (c.cpu_arch == CpuArch::kPower) {  // favour Tree over Ring on POWER
    p.hw_lat[kHwPci][tree][simple] = p.hw_lat[kHwPci][ring][simple];
  }
  p.ppn = static_cast<float>(c.nranks) / static_cast<float>(c.nnodes);
  for (int a = 0; a < kAlgorithmCount; ++a) {
    // NCCL compares the path type with LINK_NVL (== PATH_NVL): only direct NVLink counts.
    p.intra_hw[a] =
        c.graph(static_cast<Algorithm>(a)).type_intra == PathType::kNvl ? kHwNvlink : kHwPci;
    p.hw[a] = c.nnodes == 1 ? p.intra_hw[a] : kHwNet;
  }
  return p;
}

// Steps of a ring collective: 2 (n - 1) for AllReduce, n - 1 for AllGather/ReduceScatter, n else.
int ring_steps(CollKind ck, int n) {
  return ck == CollKind::kAllReduce                                       ? 2 * (n - 1)
         : (ck == CollKind::kReduceScatter || ck == CollKind::kAllGather) ? n - 1
                                                                          : n;
}

// Threads per CTA (tuning.cc, start of ncclTopoTuneModel; the same in 2.18.3).
void set_max_threads(Tables& t) {
  const CommInfo& c = t.comm;
  const int ring = index_of(Algorithm::kRing);
  const int tree = index_of(Algorithm::kTree);
  const int simple = index_of(Protocol::kSimple);
  const int ll = index_of(Protocol::kLL);
  const int ll128 = index_of(Protocol::kLL128);
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
}

// ncclTopoTuneModel's latency and bandwidth tables, NCCL 2.28.9.
void fill_2_28(Tables& t) {
  const CommInfo& c = t.comm;
  const int tree = index_of(Algorithm::kTree);
  const TunerConstants& k = kNcclTunerConstants;
  const Prologue pro = prologue(c, k);
  const HwLatency& hw_lat = pro.hw_lat;
  const int n_nodes = c.nnodes;
  const int n_ranks = c.nranks;
  const int cc_index = compcap_index(c.compcap);
  const double ll_max_bw = pro.ll_max_bw;
  const double per_ch_max_tree_bw = pro.per_ch_max_tree_bw;
  const double per_ch_max_ring_ll128_bw = pro.per_ch_max_ring_ll128_bw;
  const double per_ch_max_tree_ll128_bw = pro.per_ch_max_tree_ll128_bw;
  const double per_ch_max_nvls_tree_bw = pro.per_ch_max_nvls_tree_bw;
  const float ppn = pro.ppn;
  const int* intra_hw = pro.intra_hw;
  const int* hw = pro.hw;

  for (int coll = 0; coll < kTunedCollCount; ++coll) {
    const CollKind ck = static_cast<CollKind>(coll);
    const int nsteps = ring_steps(ck, n_ranks);
    for (int a = 0; a < kAlgorithmCount; ++a) {
      const Algorithm algo = static_cast<Algorithm>(a);
      if (!algo_computed_for(ck, algo, Version::k2_28)) {
        continue;
      }
      const GraphInfo& g = c.graph(algo);
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
}

// ncclTopoTuneModel's latency and bandwidth tables, NCCL 2.18.3 (nccl@v2.18.3-1
// src/graph/tuning.cc). What differs from 2.28.9: AllGather, ReduceScatter, Broadcast and Reduce
// are Ring only; Ring LL runs at 1/4 (1/3 for single-node AllGather/ReduceScatter/Broadcast) of
// the bus bandwidth, not 1/2; Ring LL128 at 0.7 with one rank per node; the Tree cap applies to
// every protocol; NVLS and NVLSTree use fixed algorithm-bandwidth ratios (5/6 and
// 0.7 n / (2 (n - 1))) with no NVLS efficiency; the latencies are 2.18's constants, NVLS's a 23
// us base plus the network hop, and a Ring AllReduce counts 2 nNodes network steps.
void fill_2_18(Tables& t) {
  const CommInfo& c = t.comm;
  const int tree = index_of(Algorithm::kTree);
  const int simple = index_of(Protocol::kSimple);
  const int ll = index_of(Protocol::kLL);
  const int ll128 = index_of(Protocol::kLL128);
  const TunerConstants& k = kNccl218TunerConstants;
  const Prologue pro = prologue(c, k);
  const HwLatency& hw_lat = pro.hw_lat;
  const int n_nodes = c.nnodes;
  const int n_ranks = c.nranks;
  const float ppn = pro.ppn;
  const int ppn_i = ppn_int(c);
  for (int coll = 0; coll < kTunedCollCount; ++coll) {
    const CollKind ck = static_cast<CollKind>(coll);
    const int nsteps = ring_steps(ck, n_ranks);
    const int n_inter_steps = ck == CollKind::kAllReduce ? (n_nodes > 1 ? 2 * n_nodes : 0)
                              : (ck == CollKind::kReduceScatter || ck == CollKind::kAllGather)
                                  ? n_nodes - 1
                                  : n_nodes;
    for (int a = 0; a < kAlgorithmCount; ++a) {
      const Algorithm algo = static_cast<Algorithm>(a);
      if (!algo_computed_for(ck, algo, Version::k2_18)) {
        continue;
      }
      const GraphInfo& g = c.graph(algo);
      const double nch = g.nchannels;
      for (int p = 0; p < kProtocolCount; ++p) {
        const Protocol proto = static_cast<Protocol>(p);
        if ((algo == Algorithm::kNvls || algo == Algorithm::kNvlsTree) &&
            proto != Protocol::kSimple) {
          continue;
        }
        const bool collnet = algo == Algorithm::kCollNetDirect || algo == Algorithm::kCollNetChain;
        const float bw =
            static_cast<float>(n_nodes <= 2 || collnet ? g.bw_intra_GBps : g.bw_inter_GBps);
        float bus_bw = static_cast<float>(g.nchannels) * bw;
        if (algo == Algorithm::kRing && p == ll) {
          const bool quarter = n_nodes > 1 || ck == CollKind::kAllReduce || ck == CollKind::kReduce;
          bus_bw = static_cast<float>(
              std::min(pro.ll_max_bw, bus_bw * (quarter ? 1.0 / 4.0 : 1.0 / 3.0)));
        }
        if (algo == Algorithm::kRing && p == ll128) {
          bus_bw = static_cast<float>(
              std::min(bus_bw * (ppn < 2 ? 0.7 : 0.92), nch * pro.per_ch_max_ring_ll128_bw));
        }
        if (algo == Algorithm::kTree) {
          bus_bw = static_cast<float>(std::min(bus_bw * .92, nch * pro.per_ch_max_tree_bw));
        }
        if (algo == Algorithm::kTree && p == ll) {
          bus_bw = static_cast<float>(std::min(bus_bw * 1.0 / 3.8, pro.ll_max_bw));
        }
        if (algo == Algorithm::kTree && p == ll128) {
          bus_bw = static_cast<float>(std::min(bus_bw * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                                               nch * pro.per_ch_max_tree_ll128_bw));
        }
        if (algo == Algorithm::kTree && c.tree_unbalanced) {
          bus_bw = static_cast<float>(bus_bw * .85);
        }
        if (collnet && p != simple) {
          bus_bw = 0;
        }
        if (algo == Algorithm::kCollNetDirect && p == simple) {
          float factor = static_cast<float>(ppn / (1.0 * g.nchannels));  // GPU/NIC ratio
          factor -= (factor - 1) / 2;
          bus_bw /= factor;
          if (c.compcap >= 90) {
            bus_bw = static_cast<float>(bus_bw * .85);
          }
        }
        float ratio = 0.5f;
        if (algo == Algorithm::kRing) {
          ratio = static_cast<float>((1.0 * n_ranks) / nsteps);
        } else if (algo == Algorithm::kNvls) {
          ratio = static_cast<float>(5.0 / 6.0);
        } else if (algo == Algorithm::kNvlsTree) {
          ratio = static_cast<float>(.70 * n_nodes / (2 * (n_nodes - 1)));
        }
        t.bandwidth_GBps[coll][a][p] = bus_bw * ratio;

        float lat = static_cast<float>(k.base_latency_us[a][p]);
        const float intra_lat_hw = static_cast<float>(hw_lat[pro.intra_hw[a]][a][p]);
        float inter_lat = static_cast<float>(hw_lat[kHwNet][a][p] + g.latency_inter_us);
        if (p == simple) {
          inter_lat += static_cast<float>(g.latency_inter_us);  // flush
        }
        if (algo == Algorithm::kRing) {
          float hop = static_cast<float>(hw_lat[pro.hw[a]][a][p]);
          if (ck == CollKind::kReduce || ck == CollKind::kBroadcast) {
            if (g.same_channels) {
              lat += hop;
            } else {
              if (p == simple) {
                hop = static_cast<float>(hw_lat[pro.hw[a]][tree][p]);
              }
              lat += static_cast<float>(nsteps) * hop;
            }
          } else {
            float net_overhead = 0.0f;
            if (n_nodes > 1) {
              net_overhead = net_overhead_us(c);
              if (p == simple) {
                net_overhead *= 3;
              }
            }
            const float intra_lat = std::max(intra_lat_hw, net_overhead);
            lat += static_cast<float>(nsteps - n_inter_steps) * intra_lat +
                   static_cast<float>(n_inter_steps) * inter_lat;
          }
        } else if (algo == Algorithm::kTree) {
          lat += 2 * (static_cast<float>(ppn_i - 1) * intra_lat_hw +
                      static_cast<float>(log2i(n_nodes)) * inter_lat);
        } else if (algo == Algorithm::kCollNetDirect) {
          lat = static_cast<float>(
              lat +
              (2 * (static_cast<float>(std::min(1, ppn_i - 1)) * intra_lat_hw + (ppn_i - 1) * 0.5) +
               inter_lat));
        } else if (algo == Algorithm::kCollNetChain) {
          lat += 2 * static_cast<float>(ppn_i - 1) * intra_lat_hw + inter_lat;
        } else if (algo == Algorithm::kNvls) {
          if (n_nodes > 1) {
            lat += static_cast<float>(hw_lat[kHwNet][a][p]);
          }
        } else if (algo == Algorithm::kNvlsTree) {
          lat += 2 * static_cast<float>(n_nodes - 1) * static_cast<float>(hw_lat[kHwNet][a][p]);
        }
        t.latency_us[coll][a][p] = lat;
      }
    }
  }
}

// Protocol/algorithm enables and NCCL_ALGO/NCCL_PROTO (tuning.cc). 2.18.3: NCCL_ALGO is one plain
// list for every function and never disables Ring outside AllReduce; a list that leaves no
// algorithm once CollNet is unavailable falls back to Ring and Tree.
void apply_enables(Tables& t) {
  const CommInfo& c = t.comm;
  const bool v218 = c.version == Version::k2_18;
  const int n_nodes = c.nnodes;
  const int ll128 = index_of(Protocol::kLL128);
  std::array<std::array<int, kProtocolCount>, kTunedCollCount> proto_enable{};
  std::array<std::array<int, kAlgorithmCount>, kTunedCollCount> algo_enable{};
  for (int f = 0; f < kTunedCollCount; ++f) {
    for (int p = 0; p < kProtocolCount; ++p) {
      proto_enable[f][p] = p == ll128 ? 2 : 1;
    }
    algo_enable[f].fill(1);
  }
  const auto plain_list_218 = [&](std::string_view name, const std::string& value) {
    if (v218 && value.find_first_of(":;") != std::string::npos) {
      throw Error(
          fmt::format("{}=\"{}\": NCCL 2.18 reads one plain list for every collective; the "
                      "per-collective \"func:list\" form is 2.28's",
                      name, value));
    }
  };
  if (!c.env.proto.empty()) {
    plain_list_218("NCCL_PROTO", c.env.proto);
    parse_list(c.env.proto, "NCCL_PROTO", kProtoTokens, proto_enable);
  }
  if (!c.env.algo.empty()) {
    plain_list_218("NCCL_ALGO", c.env.algo);
    parse_list(c.env.algo, "NCCL_ALGO", kAlgoTokens, algo_enable);
    if (v218 && algo_enable[0][index_of(Algorithm::kPat)] != (c.env.algo.front() == '^' ? 1 : 0)) {
      throw Error(fmt::format("NCCL_ALGO=\"{}\": NCCL 2.18 has no PAT", c.env.algo));
    }
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
    // 2.18: "CollNet is not supported ..., ignoring NCCL_ALGO=COLLNET".
    const auto on = [&](Algorithm a) { return algo_enable[f][index_of(a)] != 0; };
    if (v218 && !c.collnet_enable && !on(Algorithm::kRing) && !on(Algorithm::kTree) &&
        !on(Algorithm::kNvls) && !on(Algorithm::kNvlsTree)) {
      algo_enable[f][index_of(Algorithm::kRing)] = algo_enable[f][index_of(Algorithm::kTree)] = 1;
    }
  }
  for (int f = 0; f < kTunedCollCount; ++f) {
    for (int a = 0; a < kAlgorithmCount; ++a) {
      // 2.18 never disables Ring outside AllReduce ("allows to run real apps with NCCL_ALGO=TREE").
      const bool keep_ring =
          v218 && a == index_of(Algorithm::kRing) && f != index_of(CollKind::kAllReduce);
      for (int p = 0; p < kProtocolCount; ++p) {
        int p_enable = proto_enable[f][p];
        if (p_enable == 2 && p == ll128) {
          p_enable = ll128_enabled_by_default(c, c.graph(static_cast<Algorithm>(a))) ? 1 : 0;
        }
        if (p_enable == 0 || (algo_enable[f][a] == 0 && !keep_ring)) {
          t.bandwidth_GBps[f][a][p] = 0;
        }
      }
    }
  }
}

// Per-thread work before more threads/channels are used (the same in 2.18.3).
void set_thread_thresholds(Tables& t) {
  const int n_ranks = t.comm.nranks;
  const int ring = index_of(Algorithm::kRing);
  const int simple = index_of(Protocol::kSimple);
  const int ll = index_of(Protocol::kLL);
  const int ll128 = index_of(Protocol::kLL128);
  for (int a = 0; a < kAlgorithmCount; ++a) {
    t.thread_threshold[a][ll] = kLlThreadThreshold;
    t.thread_threshold[a][ll128] = kLl128ThreadThreshold;
    t.thread_threshold[a][simple] = kSimpleThreadThreshold;
  }
  t.thread_threshold[ring][ll] *= n_ranks;
  t.thread_threshold[index_of(Algorithm::kCollNetDirect)][simple] = kCollNetThreadThreshold;
  t.thread_threshold[index_of(Algorithm::kCollNetChain)][simple] = kCollNetThreadThreshold;
}

}  // namespace

Tables tune_model(const CommInfo& info) {
  Tables t;
  t.comm = resolve_comm_info(info);
  set_max_threads(t);
  if (t.comm.nranks <= 1) {
    return t;
  }
  if (t.comm.version == Version::k2_18) {
    fill_2_18(t);
  } else {
    fill_2_28(t);
  }
  apply_enables(t);
  set_thread_thresholds(t);
  return t;
}

double algo_time_us(const Tables& tables, CollKind coll, Algorithm algo, Protocol proto,
                    std::int64_t nbytes, int num_pipe_ops) {
  require_tuned(coll, "algo_time_us");
  if (nbytes < 0) {
    throw Error(fmt::format("algo_time_us: negative byte count {}", nbytes));
  }
  float bw = static_cast<float>(tables.bandwidth(coll, algo, proto));
  float lat = static_cast<float>(tables.latency(coll, algo, proto));
  if (bw == 0) {
    return -1.0;
  }
  const CommInfo& c = tables.comm;
  const bool v218 = c.version == Version::k2_18;
  // 2.18's log2i is 0 for 0 (utils.h), so sizes below 64 B take the first factor.
  const std::int64_t log_size =
      v218 ? std::max<std::int64_t>(0, log2i(nbytes >> 6)) : log2i(nbytes >> 6);
  if (algo == Algorithm::kTree && coll == CollKind::kAllReduce && log_size >= 0 && log_size < 23) {
    bw *= kTreeCorrectionFactor[index_of(proto)][log_size];
  }
  if (algo == Algorithm::kRing && proto == Protocol::kSimple && c.nnodes > 1 &&
      coll == CollKind::kAllReduce &&
      nbytes / (static_cast<std::int64_t>(c.nchannels) * c.nranks) >= 64) {
    lat = static_cast<float>(lat * (c.compcap < 80 ? 1.9 : 1.4));  // plateau effect of ring
  }
  const int batch = v218 ? kMaxWorkElements218 : kMaxDevWorkBatchColls;
  const int lat_count =
      algo == Algorithm::kRing ? num_pipe_ops : static_cast<int>(div_up(num_pipe_ops, batch));
  const float time = lat * static_cast<float>(lat_count) + static_cast<float>(nbytes) / (1000 * bw);
  return time;
}

Tables::AlgoProto cost_table(const Tables& tables, CollKind coll, std::int64_t nbytes,
                             int num_pipe_ops) {
  require_tuned(coll, "cost_table");
  Tables::AlgoProto table;
  for (auto& row : table) {
    row.fill(-1.0);  // NCCL_ALGO_PROTO_IGNORE
  }
  const CommInfo& c = tables.comm;
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
          algo_time_us(tables, coll, algo, static_cast<Protocol>(p), nbytes, num_pipe_ops);
    }
  }
  return table;
}

}  // namespace lagom::nccl
