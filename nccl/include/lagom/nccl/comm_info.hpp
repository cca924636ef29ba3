// What NCCL knows about one communicator when it tunes: its topology-search graphs, its
// environment, and the fields NCCL's init derives from them (nccl@v2.28.9-1 init.cc,
// connect.cc, paths.cc, nvls.cc; reference/nccl.md §1-2). Inputs are plain numbers so that any
// topology source can fill them (topologies/nccl_comm_info.hpp fills them from a Cluster).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/topo.hpp"
#include "lagom/nccl/version.hpp"

namespace lagom::nccl {

// One topology-search result (struct ncclTopoGraph) for one algorithm. Bandwidths are per
// search channel, in GB/s; a graph with nchannels == 0 was not found (e.g. NVLS without
// NVSwitch).
struct GraphInfo {
  int nchannels = 0;
  double bw_intra_GBps = 0.0;
  double bw_inter_GBps = 0.0;
  double latency_inter_us = 0.0;  // 0 for the built-in IB and socket transports
  PathType type_intra = PathType::kNvl;
  PathType type_inter = PathType::kPix;
  bool same_channels = false;
};

// Communicator-wide environment variables that the model reads. Defaults are NCCL's.
struct Env {
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
struct CommInfo {
  Version version = kDefaultVersion;
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
  GraphInfo tree;
  GraphInfo ring;
  GraphInfo collnet_direct;
  GraphInfo collnet_chain;
  GraphInfo nvls;
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
  Env env;

  const GraphInfo& graph(Algorithm a) const;
};

// Fills in the derived ("0: derive") fields of `info` as NCCL's init would; throws lagom::Error
// for impossible inputs (nranks < 1, nnodes < 1 or > nranks, nranks not a multiple of nnodes is
// allowed).
CommInfo resolve_comm_info(const CommInfo& info);

}  // namespace lagom::nccl
