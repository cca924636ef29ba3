// Lagom's contention model: every running op is a flow over the physical resources it uses, and
// their rates are the bounded max-min fair share of those resources (flow_solver.hpp),
// re-solved whenever something starts or ends. docs/models.md §6 has the derivation.
//
// Resources, each with a capacity:
//  * every direction of every link of the hardware graph (NVLink ports, NVSwitch, PCIe links and
//    switch uplinks, the CPU interconnect, NIC links, leaf-spine links): its bandwidth times the
//    profile's efficiency for its class, so that a collective alone gets exactly what the
//    collective model gives it;
//  * every GPU's HBM: peak * contention.hbm_efficiency.
// SMs are allocated per GPU before the flows are solved (below).
//
// Flows. A flow's rate p is its speed relative to running alone, in (0, b]; at rate p it uses
// p times its demand on each resource (its average draw alone):
//  * a communication instance: the bytes its algorithm moves over each link, from the
//    communicator's footprints (topologies/traffic.hpp: ring neighbours per channel, the tree's
//    chain and NICs, NVLS ports, all-to-all pairs, a send's path) divided by its time alone, and
//    on each member GPU's HBM its payload times the HBM touches per byte
//    (CollectiveModel::hbm_per_payload_byte); bound 1. Members of a collective move in lock step,
//    so the instance is one flow, and a late peer only delays its start;
//  * a compute kernel: its HBM bytes (times L2 pollution, below) over its time alone; its bound
//    is its time alone over its time on the SMs it has been granted (< 1 when NCCL's CTAs hold
//    SMs, a whole extra wave when the blocks no longer fit);
//  * a memcpy: 2 * bytes over its time alone on HBM; bound 1 (copy engines, no SMs).
// At a full resource every flow through it gets the same fraction of its demand (equal weights,
// so max-min fairness of the rates p): both a GEMM beside an HBM-bound all-reduce and the
// all-reduce slow down, and two rings through one PCIe switch split it. Where a flow is limited
// elsewhere, what it leaves goes to the others (progressive filling).
//
// SMs, per GPU, whenever its ops change: every communication op on it, running or still waiting
// for its peers, holds one CTA per channel, resident on its own SM (min(CTAs, SMs) SMs shared).
// Kernels split the free SMs and then the shared ones by water-filling on what one wave of each
// needs (ceil(blocks / blocks_per_sm)); on a shared SM a kernel runs only the blocks that fit
// beside the CTA (ComputeModel::blocks_beside_comm: threads and shared memory). A kernel always
// gets at least one block slot, so a step never stalls on SMs.
//
// L2: while collectives run on a GPU, their in-flight chunks (4 * channels * chunk) evict the
// kernels' working sets: a kernel's HBM traffic grows by l2_pollution * min(1, in-flight / L2).
//
// Limits: clocks and power are not modelled; a ring's channels are averaged into one flow (NCCL
// rotates them); all coefficients but the links' bandwidths are profile priors until calibrated.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "lagom/sim/compute_model.hpp"
#include "lagom/sim/contention.hpp"
#include "lagom/sim/flow_solver.hpp"
#include "lagom/sim/model_cost.hpp"

namespace lagom::sim {

class ResourceContention final : public ContentionModel {
 public:
  // `models` must outlive this object; one instance per simulation.
  explicit ResourceContention(const ModelCost& models);

  static constexpr std::string_view kName = "lagom (links, HBM, SMs; max-min fair)";
  std::string_view name() const override { return kName; }
  void bind(const traces::Workload& w, const traces::ExecutionGraph& g) override;
  void waiting(traces::OpId op) override;
  void started(const Activity& a) override;
  void finished(const Activity& a) override;
  Time fixed_part(std::uint32_t instance, Time alone) override;
  void rates(std::vector<RateChange>& changed) override;

  // --- For tests and reports -------------------------------------------------------------------
  const FlowSolver& solver() const { return solver_; }
  // "node0/gpu3 -> node0/nvswitch0 (nvlink)", "rank 3 HBM".
  std::string resource_name(FlowSolver::ResourceId r) const;
  // NCCL CTAs (channels) on `rank` now, running or waiting.
  int held_ctas(traces::Rank rank) const;
  // The SMs running kernel `op` (a compute op now running) was granted at the last solve.
  SmGrant grant_of(traces::OpId op) const;
  // Describes the first broken conservation law as of the last rates() (a resource above its
  // capacity, a flow above its bound or above 1, a GPU with more SMs given out than it has), or
  // returns "" when there is none.
  std::string check_invariants() const;

  // Inputs the physics had to correct, for the command to print: ops whose duration_us says they
  // moved bytes faster than a resource allows alone (their draw there is capped at its capacity,
  // so they run at their stated speed), and GPUs asked to hold more NCCL CTAs than they have
  // SMs. The first few, and how many in all.
  const std::vector<std::string>& warnings() const { return warnings_; }
  std::uint64_t warning_count() const { return warning_count_; }

 private:
  struct CommInfo {
    double time_us = 0;  // the collective model's time alone
    // The share of it that no bandwidth buys back (launch, hop latencies, chunk-step
    // overheads): the engine runs it first (fixed_part); `uses` are the draws of the rest
    // (transfer and pipeline fill), where the bytes move.
    double fixed_share = 0;
    int nchannels = 0;
    int nthreads = 0;
    double in_flight_bytes = 0;         // 4 * channels * chunk
    std::vector<FlowSolver::Use> uses;  // at rate 1
    // A folded communicator's (Group::mirrors): one instance's draws, in the order of `uses`
    // (which add its mirrors' bytes; 0 where only they go); empty otherwise.
    std::vector<FlowSolver::Use> own;
    std::vector<int> crossings;  // likewise: how many of the instances cross each resource
    // The most any instance may be sped up before some resource alone cannot carry it:
    // min over uses of capacity / demand (>= 1 for the model's own time).
    double margin = 0;
    // Flows of finished instances, kept at bound 0 for the next instance with these uses
    // (re-bounding a flow is cheaper than building it again).
    std::vector<FlowSolver::FlowId> parked;
  };
  // Ops of the same communicator, kind, size, pinned config and direction behave alike.
  struct CommKey {
    traces::GroupId group;
    std::int32_t from;  // p2p: sender and receiver ranks; -1 otherwise
    std::int32_t to;
    traces::OpKind kind;
    std::int64_t bytes;
    const nccl::ConfigOverride* pin;
    bool operator==(const CommKey&) const = default;
  };
  struct CommKeyHash {
    std::size_t operator()(const CommKey& k) const;
  };
  struct Gpu {
    std::vector<traces::OpId> comms;     // communication ops on it (waiting or running)
    std::vector<std::uint32_t> kernels;  // slots of running compute ops
    int ctas = 0;                        // their channels, together
    int comm_threads = 0;                // the most threads of one CTA among them
    double in_flight_bytes = 0;          // of the running collectives
    bool dirty = false;
    // What the kernels' grants were computed from, to skip a regrant that would change nothing.
    bool kernels_changed = true;
    bool warned_ctas = false;
    int granted_ctas = -1;
    int granted_threads = -1;
    double granted_in_flight = -1;
  };
  struct Running {
    FlowSolver::FlowId flow = 0;
    bool kernel = false;
    traces::OpId op = 0;  // compute or memcpy op; first member for an instance
    SmGrant grant;
    double bound = 1;
    double hbm_demand = 0;
    // Kernels: what does not change while it runs.
    traces::ComputeShape shape;
    int tb = 1;         // blocks per SM
    double blocks = 0;  // thread blocks (one full wave when the op does not say)
    int need = 0;       // SMs one wave fills
    double bytes = 0;
    double alone_model_us = 0;   // the compute model's time on the whole GPU
    double alone_us = 0;         // its standalone time (duration_us when given)
    bool duration_only = false;  // no shape and no bytes: slows with the block slots it loses
    int beside_threads = -1;     // blocks_beside_comm(shape, beside_threads) = beside
    int beside = 0;
    bool unrated = false;  // started, rate not reported yet (duration-only kernels)
    std::vector<FlowSolver::FlowId>* pool = nullptr;  // an instance's: where its flow is parked
    // An instance's solver rate is in units of its model time; its own (measured) time is
    // `scale` times shorter, so its speed relative to alone is the solver rate / scale.
    double scale = 1;
    bool alive = false;
  };
  int beside_of(Running& run, int comm_threads) const;

  CommInfo& comm_info(traces::OpId op);
  void mark(traces::Rank rank);
  void add_comm(traces::Rank rank, traces::OpId op);
  // Caps each demand so that the flow alone, at `bound`, fits every resource; warns for `op`
  // when it is `measured` (its time given by the workload).
  // The member an instance's communication is keyed by (a send's sender; else the first).
  traces::OpId key_op(std::uint32_t instance) const;
  void fit_alone(std::vector<FlowSolver::Use>& uses, double bound, traces::OpId op, bool measured);
  void warn(std::string message);
  void bind_flow(std::uint32_t slot);
  void remove_comm(traces::Rank rank, traces::OpId op);
  void regrant(traces::Rank rank);
  FlowSolver::ResourceId hbm_of(std::uint32_t gpu) const { return hbm_base_ + gpu; }

  const ModelCost& models_;
  const traces::Workload* w_ = nullptr;
  const traces::ExecutionGraph* g_ = nullptr;
  FlowSolver solver_;
  FlowSolver::ResourceId hbm_base_ = 0;
  std::vector<CommInfo*> by_op_;                             // indexed by OpId, filled on first use
  std::unordered_map<CommKey, CommInfo, CommKeyHash> comm_;  // node-based: pointers stay valid
  CommKey last_key_{};
  CommInfo* last_info_ = nullptr;
  std::vector<Gpu> gpus_;  // by workload rank
  std::vector<traces::Rank> dirty_;
  std::vector<Running> running_;             // by engine slot
  std::vector<std::uint32_t> slot_of_flow_;  // by flow id
  std::vector<char> flow_parked_;            // by flow id
  std::vector<char> flow_capped_;            // by flow id: an instance's, with capped uses
  std::vector<FlowSolver::FlowId> changed_;
  std::vector<std::uint32_t> direct_;  // duration-only kernels whose rate (= bound) changed
  std::vector<FlowSolver::Use> scratch_;
  std::vector<std::string> warnings_;
  std::uint64_t warning_count_ = 0;
  struct Scratch {
    std::vector<int> need, full, beside, need_shared, on_shared;
  };
  Scratch grant_scratch_;
};

}  // namespace lagom::sim
