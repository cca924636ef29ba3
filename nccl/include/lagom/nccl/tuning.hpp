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

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/comm_info.hpp"

namespace lagom::nccl {

// ncclTopoTuneModel's output for one communicator, with what the per-call steps need.
struct Tables {
  using AlgoProto = std::array<std::array<double, kProtocolCount>, kAlgorithmCount>;
  std::array<AlgoProto, kTunedCollCount> latency_us{};      // [coll][algo][proto]
  std::array<AlgoProto, kTunedCollCount> bandwidth_GBps{};  // 0 = disabled
  std::array<std::array<int, kProtocolCount>, kAlgorithmCount> max_threads{};
  std::array<std::array<std::int64_t, kProtocolCount>, kAlgorithmCount> thread_threshold{};
  // The resolved communicator (derived fields filled in).
  CommInfo comm;

  double latency(CollKind c, Algorithm a, Protocol p) const;
  double bandwidth(CollKind c, Algorithm a, Protocol p) const;
};

// ncclTopoTuneModel (reference/nccl.md §2.2-2.4, §1.1 enable rules, NCCL_ALGO/NCCL_PROTO).
Tables tune_model(const CommInfo& info);

// ncclTopoGetAlgoTime (§2.5): NCCL's predicted time in µs, or -1 when the combination is
// disabled. Computed in single precision as NCCL does.
double algo_time_us(const Tables& tables, CollKind coll, Algorithm algo, Protocol proto,
                    std::int64_t nbytes, int num_pipe_ops = 1);

// updateCollCostTable (§2.7): the table a tuner plugin sees, -1 for ignored/disabled entries.
Tables::AlgoProto cost_table(const Tables& tables, CollKind coll, std::int64_t nbytes,
                             int num_pipe_ops = 1);

// NCCL's choice for one collective, with the numbers behind it.
struct Choice {
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
Choice choose(const Tables& tables, CollKind coll, std::int64_t nbytes);
CommConfig default_config(const CommInfo& info, CollKind coll, std::int64_t nbytes);

// What NCCL runs once algo/proto are fixed (by NCCL_ALGO/NCCL_PROTO or a tuner plugin), with a
// plugin's nChannels override when `plugin_nchannels` > 0: topoGetAlgoInfo's channel/thread
// reduction, the cell split and calcCollChunking. Tuned collectives only. NCCL 2.18 has no tuner
// plugin: there `plugin_nchannels` stands for NCCL_MIN_CTAS = NCCL_MAX_CTAS = n on a call large
// enough to keep them.
CommConfig config_for(const Tables& tables, CollKind coll, Algorithm algo, Protocol proto,
                      std::int64_t nbytes, int plugin_nchannels = 0);

// What NCCL's p2p path (AllToAll, SendRecv) runs with its protocol fixed: the chunk it sizes for
// that protocol (LL's from the LL buffer, Simple's from the p2p chunk) and its channels. P2p
// kinds only; the protocol may still be illegal here (LL across nodes without LL buffers).
CommConfig p2p_config_for(const Tables& tables, CollKind coll, Protocol proto, std::int64_t nbytes);

}  // namespace lagom::nccl
