// An exact emulation of NCCL 2.28.9's own tuning: its analytic cost model, the algorithm/protocol
// it picks, and the channels, threads and chunk size it then runs with.
//
// Sources (reference/nccl.md; code read at nccl@v2.28.9-1):
//  * §2.2-2.4, src/graph/tuning.cc:ncclTopoTuneModel: per communicator, for each function f,
//    algorithm a, protocol p, a latency lat[f][a][p] (µs) and a bandwidth bw[f][a][p] (GB/s):
//      bw  = graph[a].nChannels * (per-channel bw, NVLS: min(intra*eff*(n-1)/n*(2|(ppn-1)/ppn),
//            inter)) * refinements(a, p) * (Ring|NVLS|NVLSTree ? nRanks/nsteps : 0.5)
//      lat = baseLat[a][p] + per-algorithm hop latencies, e.g. Ring:
//            (nsteps - nInterSteps) * max(intraLat, netOverhead) + nInterSteps * interLat,
//      nsteps = AllReduce ? 2(n-1) : AG/RS ? n-1 : n.
//    bw = 0 marks a disabled combination (§1.1 legality, LL128 enable rules, NCCL_ALGO/PROTO).
//  * §2.5, tuning.cc:ncclTopoGetAlgoTime: time_us = lat * latCount + nBytes / (1000 * bw), with
//    the Tree AllReduce correction factors and the 1.4x (sm80+) ring plateau latency on
//    multi-node Ring/Simple AllReduce.
//  * §2.7, src/enqueue.cc:updateCollCostTable/topoGetAlgoInfo: the argmin over eligible entries
//    (algorithm-major, first minimum kept), then the channel and thread reduction of §1.3-1.4.
//  * enqueue.cc:scheduleCollTasksToPlan + calcCollChunking (§1.5): the bytes are cut into 16 KiB
//    "cells" of traffic spread over the channels; each channel's chunk is computed from its own
//    share (size-adaptive shrinking for NVLS, NVLSTree, Tree/LL128, PAT, CollNet) and rounded
//    down to the protocol grain (LL 16 B, LL128 3840 B, Simple 512 B).
//  * enqueue.cc:addP2pToPlan: send/recv (and AllToAll, which NCCL runs as grouped send/recv)
//    chunk, protocol (LL when bytes <= nChannels * NCCL_P2P_LL_THRESHOLD on a non-network
//    connection) and channel split.
//
// Byte-count convention: `nbytes` is NCCL's nBytes, the total buffer size: the reduced buffer for
// AllReduce/Reduce/Broadcast, the gathered (AllGather) or the input (ReduceScatter) buffer,
// i.e. nRanks x the per-rank count. This is exactly nccl-tests' `size` column (§4.2). For
// AllToAll it is the per-rank send buffer (nRanks x the per-peer bytes), as nccl-tests' size; for
// SendRecv the bytes sent to the peer.
//
// Validity: single-datatype SUM-like reductions that NVLS supports (float/half/bf16), no tuner
// plugin, no registered or symmetric buffers, CTAPolicy DEFAULT, one collective per group
// (numPipeOps = 1), CUDA 12 (the CUDA 11.8 Hopper LL128 exception is not modelled), no fp8 ring
// penalty. Inputs are plain numbers so that any topology source can fill them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "lagom/sim/comm_config.hpp"

namespace lagom::sim {

// NCCL's path types (src/graph/topo.h PATH_*), ordered from closest to farthest.
enum class PathType : std::uint8_t {
  kLoc = 0,
  kNvl = 1,  // NVLink, direct or through NVSwitch
  kNvb = 2,  // NVLink through an intermediate GPU
  kC2c = 3,
  kPix = 4,  // one PCIe switch
  kPxb = 5,  // several PCIe switches
  kP2c = 6,
  kPxn = 7,  // NVLink to a GPU, then its NIC
  kPhb = 8,  // through the CPU's host bridge
  kSys = 9,  // across CPU sockets
  kNet = 10,
  kDis = 11,
};

enum class CpuArch : std::uint8_t { kX86, kPower, kArm };
enum class CpuVendor : std::uint8_t { kIntel, kAmd, kMixed, kOther };

// One topology-search result (struct ncclTopoGraph) for one algorithm. Bandwidths are per
// search channel, in GB/s; a graph with nchannels == 0 was not found (e.g. NVLS without
// NVSwitch).
struct NcclGraphInfo {
  int nchannels = 0;
  double bw_intra_GBps = 0.0;
  double bw_inter_GBps = 0.0;
  double latency_inter_us = 0.0;  // 0 for the built-in IB and socket transports
  PathType type_intra = PathType::kNvl;
  PathType type_inter = PathType::kPix;
  bool same_channels = false;
};

// Communicator-wide environment variables that the model reads. Defaults are NCCL's.
struct NcclEnv {
  int nthreads = -2;                            // NCCL_NTHREADS (-2: auto)
  int ll128_nthreads = -2;                      // NCCL_LL128_NTHREADS
  std::int64_t buffsize_bytes = 1 << 22;        // NCCL_BUFFSIZE (Simple)
  std::int64_t ll_buffsize_bytes = 524288;      // NCCL_LL_BUFFSIZE: 8 lines * 512 thr * 8 * 16 B
  std::int64_t ll128_buffsize_bytes = 4915200;  // NCCL_LL128_BUFFSIZE: 120 * 640 * 8 * 8 B
  std::int64_t nvls_chunk_bytes = 131072;       // NCCL_NVLS_CHUNKSIZE (128 KiB)
  std::int64_t nvlstree_max_chunk_bytes = -2;   // NCCL_NVLSTREE_MAX_CHUNKSIZE (-2: auto)
  std::int64_t p2p_nvl_chunk_bytes = 1 << 19;   // NCCL_P2P_NVL_CHUNKSIZE
  std::int64_t p2p_pci_chunk_bytes = 1 << 17;   // NCCL_P2P_PCI_CHUNKSIZE
  std::int64_t p2p_net_chunk_bytes = 1 << 17;   // NCCL_P2P_NET_CHUNKSIZE
  std::int64_t p2p_ll_threshold_bytes = 16384;  // NCCL_P2P_LL_THRESHOLD
  std::int64_t chunk_size_bytes = 0;            // NCCL_CHUNK_SIZE (p2p only; 0: off)
  bool alloc_p2p_net_ll_buffers = false;        // NCCL_ALLOC_P2P_NET_LL_BUFFERS
  double net_overhead_us = -1.0;  // NCCL_NET_OVERHEAD in µs (-1: 1.0 Intel/other, 2.0 AMD x86)
  bool ll128_c2c = true;          // NCCL_LL128_C2C
  int pat_enable = 2;             // NCCL_PAT_ENABLE (2: auto)
  std::string algo;               // NCCL_ALGO, e.g. "ring,tree;allreduce:^nvls" ("" = unset)
  std::string proto;              // NCCL_PROTO, e.g. "^LL128"
};

// What NCCL knows about one communicator when it tunes (fields of ncclComm and its graphs).
// Fields documented "0: derive" are computed from the others as NCCL does at init.
struct NcclCommInfo {
  int compcap = 90;     // minCompCap: 70, 80, 86, 90, 100, ...
  int max_compcap = 0;  // maxCompCap (0: same as compcap)
  int nranks = 8;
  int nnodes = 1;
  int max_local_ranks = 0;  // ranks on the fullest node (0: nranks / nnodes)
  CpuArch cpu_arch = CpuArch::kX86;
  CpuVendor cpu_vendor = CpuVendor::kIntel;
  // The topology-search graphs. NCCL shares them between algorithms: Tree and PAT use `tree`,
  // NVLS and NVLSTree use `nvls` (init.cc: graphs[] = {tree, ring, collnetDirect, collnetChain,
  // nvls, nvls, tree}). NCCL makes the ring and tree channel counts equal (the smaller);
  // resolve_comm_info does too.
  NcclGraphInfo tree;
  NcclGraphInfo ring;
  NcclGraphInfo collnet_direct;
  NcclGraphInfo collnet_chain;
  NcclGraphInfo nvls;
  bool tree_unbalanced = false;     // maxTreePattern == NCCL_TOPO_PATTERN_TREE (Tree bw * 0.85)
  bool has_nvswitch = false;        // ncclTopoGetNvsCount > 0 (needed by CollNetDirect)
  bool all_nvlink = false;          // comm->isAllNvlink (p2p chunk: NVL vs PCI)
  bool net_device_offload = false;  // netDeviceType != HOST (disables auto PAT)
  bool unpack_net_device = false;   // netDeviceType == UNPACK (channel doubling, multi-node)
  // Collective channels (comm->nChannels; 0: derive from the ring graph as ncclTopoPostset:
  // min(64, 2 * search channels), doubled again on sm90+ multi-node when ring bwIntra > 45 or with
  // unpack net devices, while below 16).
  int nchannels = 0;
  int max_ctas = 64;  // NCCL_MAX_CTAS / ncclConfig_t.maxCTAs
  int min_ctas = 1;   // NCCL_MIN_CTAS / ncclConfig_t.minCTAs
  // NVLS (NVLink SHARP): comm->nvlsSupport, comm->nvlsChannels (0: derive 16 on sm90, on sm100
  // 24 in one NVLink domain or 32 across nodes, clamped to [min_ctas, max_ctas]), and the heads
  // per NVLS channel (0: the NVLS graph's channel count).
  bool nvls_support = false;
  int nvls_channels = 0;
  int nvls_heads = 0;
  // CollNet (SHARP in the network): ncclConfig_t.collnetEnable with a CollNet plugin present,
  // heads per node (0: the CollNetDirect graph's channel count), and whether the plugin has
  // iallgather/ireducescatter.
  bool collnet_enable = false;
  int collnet_heads = 0;
  bool collnet_ag_rs_support = false;
  // p2p channels (comm->p2pnChannels, p2pnChannelsPerPeer; 0: derive pow2Up(nchannels) and, as
  // ncclTopoComputeP2pChannels does for NVLink peers, p2p_nchannels itself).
  int p2p_nchannels = 0;
  int p2p_nchannels_per_peer = 0;
  NcclEnv env;

  const NcclGraphInfo& graph(Algorithm a) const;
};

// ncclTopoTuneModel's output for one communicator, with what the per-call steps need.
struct NcclTables {
  using AlgoProto = std::array<std::array<double, kProtocolCount>, kAlgorithmCount>;
  std::array<AlgoProto, kTunedCollCount> latency_us{};      // [coll][algo][proto]
  std::array<AlgoProto, kTunedCollCount> bandwidth_GBps{};  // 0 = disabled
  std::array<std::array<int, kProtocolCount>, kAlgorithmCount> max_threads{};
  std::array<std::array<std::int64_t, kProtocolCount>, kAlgorithmCount> thread_threshold{};
  // The resolved communicator (derived fields filled in).
  NcclCommInfo comm;

  double latency(CollKind c, Algorithm a, Protocol p) const;
  double bandwidth(CollKind c, Algorithm a, Protocol p) const;
};

// Applies NCCL environment variables (name -> value, as a job would export them) to `info`:
// NCCL_ALGO, NCCL_PROTO, NCCL_MIN_CTAS, NCCL_MAX_CTAS, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS,
// NCCL_NTHREADS, NCCL_LL128_NTHREADS, NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE,
// NCCL_NVLS_CHUNKSIZE, NCCL_P2P_NVL_CHUNKSIZE, NCCL_P2P_PCI_CHUNKSIZE, NCCL_P2P_NET_CHUNKSIZE,
// NCCL_P2P_LL_THRESHOLD, NCCL_CHUNK_SIZE, NCCL_PAT_ENABLE, NCCL_LL128_C2C, NCCL_NET_OVERHEAD
// (ns, as NCCL reads it). Throws lagom::Error naming the variable for an unknown name (listing
// these) or a value NCCL would not parse or accept.
void apply_nccl_env(const std::map<std::string, std::string>& vars, NcclCommInfo& info);

// Fills in the derived ("0: derive") fields of `info` as NCCL's init would; throws lagom::Error
// for impossible inputs (nranks < 1, nnodes < 1 or > nranks, nranks not a multiple of nnodes is
// allowed).
NcclCommInfo resolve_comm_info(const NcclCommInfo& info);

// ncclTopoTuneModel (reference/nccl.md §2.2-2.4, §1.1 enable rules, NCCL_ALGO/NCCL_PROTO).
NcclTables nccl_tune_model(const NcclCommInfo& info);

// ncclTopoGetAlgoTime (§2.5): NCCL's predicted time in µs, or -1 when the combination is
// disabled. Computed in single precision as NCCL does.
double nccl_algo_time_us(const NcclTables& tables, CollKind coll, Algorithm algo, Protocol proto,
                         std::int64_t nbytes, int num_pipe_ops = 1);

// updateCollCostTable (§2.7): the table a tuner plugin sees, -1 for ignored/disabled entries.
NcclTables::AlgoProto nccl_cost_table(const NcclTables& tables, CollKind coll, std::int64_t nbytes,
                                      int num_pipe_ops = 1);

// NCCL's choice for one collective, with the numbers behind it.
struct NcclChoice {
  CommConfig config;        // what the kernel runs with (nchannels = CTAs launched)
  double predicted_us = 0;  // NCCL's estimate (ncclGroupSimulateEnd's estimatedTime); p2p: 0
  int max_channels = 0;     // nMaxChannels after the per-call reduction, before the cell split
};

// The default for a collective of `nbytes` (see the byte-count convention above).
// AllToAll and SendRecv are outside NCCL's tuner: they get algo = Ring (by our convention: a
// p2p schedule), LL or Simple by NCCL_P2P_LL_THRESHOLD, 640 threads, and NCCL's p2p chunk and
// per-peer channel split. A SendRecv in a multi-node communicator is taken to cross the network
// (no LL buffers on network p2p connections). AllToAll's nchannels counts the CTAs of all its
// nRanks rounds (one per peer offset, the self copy included; channel bases as on one node),
// at most p2p_nchannels. One rank: NCCL copies locally (ncclLaunchOneRank); we report a
// 1-channel Ring/Simple config and 0 us. Throws lagom::Error for nbytes < 0 or when NCCL would
// find no algorithm ("no algorithm/protocol available").
NcclChoice nccl_choose(const NcclTables& tables, CollKind coll, std::int64_t nbytes);
CommConfig nccl_default_config(const NcclCommInfo& info, CollKind coll, std::int64_t nbytes);

// What NCCL runs once algo/proto are fixed (by NCCL_ALGO/NCCL_PROTO or a tuner plugin), with a
// plugin's nChannels override when `plugin_nchannels` > 0: topoGetAlgoInfo's channel/thread
// reduction, the cell split and calcCollChunking. Tuned collectives only.
CommConfig nccl_config_for(const NcclTables& tables, CollKind coll, Algorithm algo, Protocol proto,
                           std::int64_t nbytes, int plugin_nchannels = 0);

// Why NCCL would refuse (or silently corrupt data with) `config` for `coll` on this
// communicator, naming the rule (reference/nccl.md §1.1-1.5); nullopt when it is legal.
std::optional<std::string> why_illegal(const NcclCommInfo& info, CollKind coll,
                                       const CommConfig& config);

}  // namespace lagom::sim
