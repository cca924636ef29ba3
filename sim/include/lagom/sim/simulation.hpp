// One simulation, wired once: the pipeline every command, search and benchmark runs.
//
//   workload ──analyze──► execution graph ─┐
//   cluster + profile ──► ModelCost ───────┼──► Engine ──► SimResult
//   plan (ConfigSource) ──► ModelCost      │
//   ResourceContention (per run) ──────────┘
//
// Without a cluster every op must carry its duration and nothing contends. With one, ops without
// a duration are timed by Lagom's models (model_cost.hpp) and, unless turned off, overlapping ops
// slow each other on the physical resources (resource_contention.hpp). run() may be called again,
// for example after the config source changed (a search evaluates one candidate per run); each
// run gets a fresh contention model, so runs do not influence each other.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

struct SimulationOptions {
  bool contention = true;  // ops slow each other (only with a cluster)
  // Names the workload in errors ("file.json: ..."); empty: errors are not prefixed.
  std::string source;
};

class Simulation {
 public:
  // Ops with fixed durations only (no cluster): nothing is modelled.
  explicit Simulation(const traces::Workload& w, SimulationOptions options = {});
  // Ops without duration_us timed by the models on `cluster` with `profile`. Throws lagom::Error
  // when the workload does not fit the cluster or a pinned config is illegal. The workload,
  // cluster and profile must outlive this.
  Simulation(const traces::Workload& w, const topologies::Cluster& cluster,
             const hardware::HardwareProfile& profile, SimulationOptions options = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  const traces::Workload& workload() const { return w_; }
  const traces::ExecutionGraph& graph() const { return *graph_; }
  // The models (nullptr without a cluster).
  const ModelCost* cost() const { return cost_.get(); }
  // The models, to tune them for repeated runs (ModelCost::memoize_alone); nullptr without a
  // cluster.
  ModelCost* mutable_cost() { return cost_.get(); }
  // A simulation of the same workload on the same hardware that runs beside this one on another
  // thread: it shares the execution graph and the models' read-only state (ModelCost::sibling),
  // and has its own config source (none yet) and no observers. This one must outlive it.
  std::unique_ptr<Simulation> sibling() const;
  // Per-op overrides of NCCL parameters (a plan); nullptr: none. Needs a cluster.
  void set_config_source(const ConfigSource* source);
  void add_observer(SimObserver* observer) { observers_.push_back(observer); }

  // Replays the workload. Throws lagom::Error when an op cannot be timed.
  SimResult run();
  // The same with contention on or off for this run alone (`false`: every op at its time alone,
  // a lower bound on the contended run's every end time).
  SimResult run(bool contention);

  // What the last run's contention model warned about (at most a few, then a count).
  const std::vector<std::string>& warnings() const { return warnings_; }
  std::size_t warning_count() const { return warning_count_; }
  // "lagom collective model (profile ..., cluster ...)" or "fixed (duration_us)";
  // "lagom (links, HBM, SMs; max-min fair)" or "none".
  std::string cost_model_name() const;
  std::string contention_model_name() const;

 private:
  struct Share {};
  Simulation(const Simulation& base, Share);

  const traces::Workload& w_;
  SimulationOptions options_;
  std::shared_ptr<const traces::ExecutionGraph> graph_;  // immutable, shared with siblings
  std::unique_ptr<ModelCost> cost_;
  std::vector<SimObserver*> observers_;
  std::vector<std::string> warnings_;
  std::size_t warning_count_ = 0;
};

}  // namespace lagom::sim
