// Lagom's collective cost model: the time of one collective alone, for any NCCL configuration
// (algorithm, protocol, channels, threads, chunk size), derived from how the algorithm moves
// chunks through its steps and calibrated per link class and protocol in the HardwareProfile.
//
// The form (docs/models.md has the derivation and the validation against nccl-tests logs):
//
//   T = launch + nc * per_channel                                   (kernel launch and setup)
//     + sum over critical-path hops of step(link, proto)            (hop latency, paid once)
//     + chunk_steps * chunk(link, proto)                            (per-chunk-step overhead)
//     + max over resources r of V_r / (w(proto) * capacity_r)       (bytes through bottleneck)
//     + (depth - 1) * transfer * stage / (S / nc)                   (Simple's pipeline fill)
//
//  * Resources: the GPU's intra-node link (NVLink/PCIe per direction, times the profile's link
//    efficiency; the NVSwitch multicast path times nvls_efficiency for NVLS), the node's network
//    (all of its NICs: a ring or tree crosses the node boundary once per channel), and the
//    channels themselves: nc CTAs each move at most channel_GBps * min(1, nt / saturation).
//  * V_r: bytes per GPU (or per node, for the network) per direction: Ring AllReduce 2(n-1)/n S,
//    AllGather/ReduceScatter (n-1)/n S, chain Broadcast/Reduce S, Tree 2S, NVLS AllReduce S,
//    NVLS AllGather/ReduceScatter (n-1)/n S, CollNet S on the network (the switch reduces),
//    AllToAll the off-GPU and off-node shares, Send/Recv S. S is nccl-tests' size.
//  * w(proto): wire efficiency, 1/2 for LL (8-byte flag per 8 bytes), 120/128 for LL128, 1 for
//    Simple (reference/nccl.md §1.5).
//  * Critical-path hops: Ring 2(n-1) (AllReduce) or n-1, of which 2(N-1) or N-1 cross the network
//    for N nodes (as NCCL's own latency model counts them, reference/nccl.md §2.4); Tree 2(ppn-1)
//    + 2 log2 N; NVLS 2 (AllReduce) or 1 through the switch.
//  * chunk_steps: Ring runs ceil(S / (nc * n * C)) loops of 2(n-1) (AllReduce) or n-1 chunk
//    steps; pipelined algorithms (chain, Tree, NVLS, CollNet) run L + depth - 1 stages for
//    L = ceil(S / (nc * stage)) stages through `depth` hops; a stage is C, or C x heads for NVLS
//    and NVLSTree (their kernels advance a channel by a chunk per head, a head per local GPU).
//  * C is the chunk size in payload bytes (clamped to a channel's share of the message).
//  * Fill: the L stages of a channel stream in `transfer`, one stage time each; the first
//    crosses depth - 1 hops before the last one streams, whichever resource binds.
// Channel count and chunk size therefore have non-monotonic effects: more channels add launch
// cost and stop adding bandwidth at the link limit; smaller chunks add steps, larger chunks add
// pipeline fill (NVLS, Tree, chain).
//
// Validity: one collective alone on an otherwise idle system, homogeneous GPUs; the per-link and
// per-protocol numbers are the profile's (calibrated on nccl-tests logs where we have them,
// NCCL's constants otherwise; each carries its source). Contention with concurrent compute and
// other collectives is the contention model's job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/topologies/communicator.hpp"

namespace lagom::sim {

struct CollectiveEstimate {
  double time_us = 0;
  double launch_us = 0;    // launch + nc * per_channel
  double hop_us = 0;       // latency of the hops on the critical path (once)
  double sync_us = 0;      // sync_steps * per-chunk-step overhead
  double transfer_us = 0;  // bytes through the bottleneck resource
  double fill_us = 0;      // pipeline fill and drain
  std::int64_t sync_steps = 0;
  double bottleneck_bytes = 0;  // V of the limiting resource
  double bottleneck_GBps = 0;   // its effective capacity (after w(proto))
  std::string bottleneck;       // "nvlink", "pcie", "cpu-interconnect", "network", "nvls",
                                // "channels", "hbm" or "none"
  double gpu_bytes = 0;         // payload through each GPU's channels (what its HBM serves)
};

class CollectiveModel {
 public:
  CollectiveModel(const hardware::HardwareProfile& profile,
                  const topologies::CommunicatorInfo& comm);

  // `bytes` follows nccl-tests' size column (see nccl/comm_config.hpp and nccl/tuning.hpp). The
  // config must be legal (check with nccl::why_illegal first); a config the model cannot time (e.g.
  // NVLS without NVLink) is a lagom::Error.
  CollectiveEstimate estimate(nccl::CollKind kind, std::int64_t bytes,
                              const nccl::CommConfig& config) const;
  // A send of `bytes` from cluster GPU `from_gpu` to `to_gpu` (both of this communicator), on
  // their own path.
  CollectiveEstimate estimate_p2p(std::int64_t bytes, const nccl::CommConfig& config, int from_gpu,
                                  int to_gpu) const;

  const topologies::CommunicatorInfo& communicator() const { return comm_; }

  // Where a collective's bytes go, for the contention model: each footprint with the bytes of
  // its unit and the link bytes per payload byte (1 / w(proto); NVLS pays the NVLink ports
  // efficiency / nvls_efficiency). Point-to-point kinds (AllToAll aside) return nothing: the
  // caller knows the direction (CommunicatorTraffic::pair).
  struct Share {
    const topologies::Footprint* footprint = nullptr;
    double bytes = 0;
    double link_scale = 1;
  };
  std::vector<Share> traffic(nccl::CollKind kind, std::int64_t bytes,
                             const nccl::CommConfig& config) const;

  // HBM bytes per payload byte on each GPU: comm_hbm_reduce (reducing kinds) or comm_hbm_copy
  // touches, over the protocol's wire efficiency, plus the L2 spill once its in-flight chunks
  // (4 * nc * C, at most what a GPU moves of a collective of `bytes`) exceed L2 (contention
  // section of the profile; docs/models.md §6).
  double hbm_per_payload_byte(nccl::CollKind kind, const nccl::CommConfig& config,
                              std::int64_t bytes) const;

 private:
  CollectiveEstimate plan(nccl::CollKind kind, std::int64_t bytes, const nccl::CommConfig& config,
                          std::vector<Share>* shares, const topologies::Footprint* path) const;

  const hardware::HardwareProfile& profile_;
  topologies::CommunicatorInfo comm_;
};

// Payload per wire byte (reference/nccl.md §1.5): LL 1/2, LL128 120/128, Simple 1.
double wire_efficiency(nccl::Protocol p);

// The profile's achievable fraction of a link class's raw bandwidth (the CPU interconnect takes
// PCIe's).
double link_efficiency(const hardware::HardwareProfile& profile, nccl::LinkClass cls);

// nccl-tests' busbw factor (reference/nccl.md §4.3): AllReduce 2(n-1)/n; AllGather,
// ReduceScatter, AllToAll (n-1)/n; Broadcast, Reduce, SendRecv 1.
double busbw_factor(nccl::CollKind kind, int nranks);

}  // namespace lagom::sim
