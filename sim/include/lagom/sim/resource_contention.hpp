// Lagom's contention model: what overlapping compute kernels and NCCL collectives do to each
// other on one GPU (reference/lagom-paper.md §3.3; docs/models.md §5 has the derivation).
//
//  * SMs. Every collective present on the GPU, running or still waiting for its peers, holds
//    one SM per channel (one CTA per channel, resident for the kernel's life). Compute kernels
//    running at the same time split the remaining SMs evenly, and each runs in
//    ceil(blocks / (SMs_left * blocks_per_SM)) waves (Lagom eq. 5).
//  * HBM bandwidth. Each op draws the bandwidth it would use alone: a kernel bytes / time, a
//    memcpy 2 * bytes / time, a collective k * R / w * (1 + l2_spill * min(1, 4 * nc * C / L2))
//    with R its payload rate per direction, k HBM touches per payload byte (3 reducing, 2
//    copying), w the protocol's wire efficiency, and the last factor the extra DRAM traffic once
//    its in-flight chunks no longer fit L2 (so larger channels x chunk contend more, Lagom §3.2).
//    When the draws exceed the sustained bandwidth (HBM peak * hbm_efficiency) every op gets the
//    same fraction of what it asks for: kernels' memory phases stretch (Lagom eq. 6, generalised
//    to both directions), collectives slow by that fraction.
//  * L2. While collectives' in-flight chunks (4 * channels * chunk) fill the L2, they evict the
//    kernels' working sets: a kernel's HBM traffic grows by l2_pollution * min(1, in-flight / L2).
//  * Links. Collectives on this GPU whose bottleneck is the same link class share it in
//    proportion to their rates (max-min fair when they ask alike).
//
// A kernel's speed factor is its time alone over its time with the SMs and bandwidth it now gets
// (compute model, compute_model.hpp); a kernel known only by its duration slows with the SMs it
// loses. Factors are re-evaluated whenever the ops on the GPU change, so a kernel running when
// a collective launches continues at its new rate (the engine's fluid core).
//
// Limits: sharing is per GPU: a NIC or PCIe switch shared by several GPUs of a node is not
// contended across GPUs here; L2 capacity effects other than the spill term and power/clock
// effects are not modelled. Coefficients are profile priors until calibrated on hardware.
#pragma once

#include <unordered_map>

#include "lagom/sim/contention.hpp"
#include "lagom/sim/model_cost.hpp"

namespace lagom::sim {

class ResourceContention final : public ContentionModel {
 public:
  // `models` must outlive this object; one instance per simulation (it caches per-op data).
  explicit ResourceContention(const ModelCost& models);

  std::string_view name() const override { return "lagom (SMs, HBM, links)"; }
  void speed_factors(const traces::Workload& w, traces::Rank rank, std::span<const ActiveOp> active,
                     std::span<double> factors) override;

  // SMs a communication op holds (its channels); 0 for other ops.
  int held_sms(const traces::Workload& w, traces::OpId op);

 private:
  struct CommInfo {
    int nchannels = 0;
    double rate_GBps = 0;        // payload per direction on its bottleneck, alone
    double hbm_GBps = 0;         // HBM it draws, alone
    double link_GBps = 0;        // capacity of its bottleneck link, if link-bound
    int link_class = -1;         // 0 intra-node, 1 network, -1 not link-bound
    double in_flight_bytes = 0;  // 4 * channels * chunk
  };
  const CommInfo& comm_info(const traces::Workload& w, traces::OpId op);

  // Ops of the same communicator, kind, size and pinned config behave alike: one entry each.
  struct CommKey {
    traces::GroupId group;
    std::int32_t peer;
    traces::OpKind kind;
    std::int64_t bytes;
    const traces::PinnedConfig* pin;
    bool operator==(const CommKey&) const = default;
  };
  struct CommKeyHash {
    std::size_t operator()(const CommKey& k) const;
  };

  const ModelCost& models_;
  std::vector<const CommInfo*> by_op_;  // indexed by OpId, filled on first use
  std::unordered_map<CommKey, CommInfo, CommKeyHash> comm_;
  std::vector<double> demand_;
};

}  // namespace lagom::sim
