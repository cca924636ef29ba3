// The CostModel the engine uses on a real cluster: Lagom's models time every op that carries
// no duration_us.
//  * Collectives and send/recv: the collective model (collective_model.hpp) with the op's
//    pinned config (format field "config") or, for what is not pinned, NCCL 2.28's own choice
//    for that communicator and size (nccl/tuning.hpp). A pinned config NCCL would refuse is an
//    error naming the op and the rule.
//  * Memcpy: a device-to-device copy reads and writes every byte at the HBM bandwidth that
//    concurrent streams sustain: 2 * bytes / (HBM peak * contention.hbm_efficiency).
//  * Compute: the compute model (compute_model.hpp) from the op's shape ("flops", "blocks",
//    "blocks_per_sm", "class") and "bytes"; an op with neither is an error naming it.
// Workload rank r runs on cluster GPU r (node r / gpus_per_node).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/config_override.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/sim/collective_model.hpp"
#include "lagom/sim/compute_model.hpp"
#include "lagom/sim/cost_model.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"

namespace lagom::sim {

// Per-op configuration overrides: a plan being searched or replayed (search/). An override takes
// precedence over the op's pinned config in the workload; what it leaves unset is NCCL's choice.
class ConfigSource {
 public:
  virtual ~ConfigSource() = default;
  // The override for communication op `op`, or nullptr to use the op's own config.
  virtual const nccl::ConfigOverride* override_for(traces::OpId op) const = 0;
};

class ModelCost final : public CostModel {
 public:
  // Binds the models to one workload. Checks that it fits the cluster and that every pinned
  // config is legal; throws lagom::Error naming the op otherwise. The cluster, profile and
  // workload must outlive this.
  ModelCost(const topologies::Cluster& cluster, const hardware::HardwareProfile& profile,
            const traces::Workload& w);
  ~ModelCost() override;
  ModelCost& operator=(const ModelCost&) = delete;

  // A second ModelCost over the same workload, cluster and profile for a simulation running
  // beside this one (a parallel search): it shares the communicators (their NCCL tables and
  // collective models, read-only) and the standalone memo, and has no config source yet.
  std::unique_ptr<ModelCost> sibling() const;
  // Computes every compute op's standalone time once, so that every later run (and every
  // sibling made after this) looks it up instead of re-running the compute model three times
  // per op: a search simulates the same step hundreds of times and a compute op's time alone
  // does not depend on NCCL's configuration. 8 bytes per op; a single simulation skips it.
  void memoize_alone();
  // The compute model's time for compute op `op` alone on a whole GPU, in microseconds, before
  // any slow-GPU factor (lagom::Error for an op with neither shape nor bytes).
  double compute_alone_us(traces::OpId op) const;

  std::string_view name() const override { return name_; }
  // The engine's question; `w` must be the workload this was built for.
  Time standalone_time(const traces::Workload& w, const traces::ExecutionGraph& graph,
                       traces::OpId op) const override;

  // The configuration a communication op runs with and the model's breakdown of its time.
  nccl::CommConfig config_for(traces::OpId op) const;
  CollectiveEstimate estimate(traces::OpId op) const;
  // A communication op's estimate under a given configuration (e.g. its resolved one).
  CollectiveEstimate estimate(traces::OpId op, const nccl::CommConfig& config) const;

  // How long `op` takes alone, in microseconds: its duration_us when given, else the model's;
  // a compute op on a slow GPU (ClusterSpec::slow_gpus) takes its slowdown times that.
  double alone_us(traces::OpId op) const;
  // The compute slowdown of the GPU a compute op runs on (1 for other ops).
  double slowdown(traces::OpId op) const;

  // Overrides for communication ops (nullptr: none). The source must outlive its use; changing
  // what it returns between simulations is allowed (nothing here caches configs).
  void set_config_source(const ConfigSource* source) { source_ = source; }
  // NCCL's view of the communicator a communication op runs on: its tuning tables (for its own
  // choice and for legality) and the topology summary (nodes, ranks, paths).
  const nccl::Tables& nccl_tables(traces::OpId op) const;
  const topologies::CommunicatorInfo& communicator_info(traces::OpId op) const;
  // The collective model of the communicator a communication op runs on.
  const CollectiveModel& collective_model(traces::OpId op) const;
  // The other instances a folded communicator stands for (traces::Group::mirrors) that share a
  // node with the op's own, each with its model, routing and GPUs (in communicator order);
  // empty for an unfolded one. They run the op's configuration at the same times.
  struct Mirror {
    const CollectiveModel* model;
    const topologies::CommunicatorInfo* info;
    std::span<const std::uint32_t> gpus;
  };
  std::vector<Mirror> mirrors(traces::OpId op) const;

  const ComputeModel& compute() const { return compute_; }
  const hardware::HardwareProfile& profile() const { return profile_; }
  const topologies::Cluster& cluster() const { return cluster_; }

 private:
  struct Communicator;
  ModelCost(const ModelCost&) = default;  // sibling()
  const Communicator& communicator_of(traces::OpId op) const;
  // The configuration asked for a communication op: the config source's override (`from_plan`),
  // else the op's pinned one; nullptr: NCCL's own choice. config_for and the memo below both
  // read it, so they cannot disagree on which one applies.
  const nccl::ConfigOverride* asked_for(traces::OpId op, bool* from_plan = nullptr) const;
  Time model_time(traces::OpId op) const;             // an op without duration_us, by the models
  double collective_alone_us(traces::OpId op) const;  // model_time of a communication op

  const traces::Workload& w_;
  const topologies::Cluster& cluster_;
  const hardware::HardwareProfile& profile_;
  ComputeModel compute_;
  std::string name_;
  // Immutable once built, so siblings share them.
  std::vector<std::shared_ptr<const Communicator>> groups_;  // by GroupId
  // Send/recv without a group: the two ranks, keyed by (low, high).
  std::map<std::pair<int, int>, std::shared_ptr<const Communicator>> pairs_;
  // memoize_alone(): compute_alone_us by op (NaN for other ops); null until then.
  std::shared_ptr<const std::vector<double>> alone_memo_;
  const ConfigSource* source_ = nullptr;
  // Collectives already timed alone, by what decides the time: the communicator, the kind, the
  // size and the configuration asked for (the source's override, else the pinned one). A step
  // repeats a few collectives thousands of times (a TP step's per-layer all-reduces), and
  // resolving NCCL's choice and costing it took a fifth of a folded TP step's simulation. A
  // ModelCost serves one simulation at a time (a parallel search gives each thread a sibling,
  // which starts empty), so the memo is not shared. At most kCollMemo entries, scanned in order;
  // when full a new one replaces the oldest, so a long search (random, exhaustive, AutoCCL's
  // rounds) keeps its current candidates' times rather than its first 64.
  struct TimedCollective {
    traces::GroupId group;
    traces::OpKind kind;
    std::int64_t bytes;
    nccl::ConfigOverride asked;
    double time_us;
  };
  static constexpr std::size_t kCollMemo = 64;
  mutable std::vector<TimedCollective> timed_;
  mutable std::size_t next_evicted_ = 0;
};

}  // namespace lagom::sim
