// The search's oracle: simulates a step under a candidate assignment of configurations to its
// tunable collectives and measures what the searches need (docs/search.md).
//
// A *collective class* is what one plan rule covers and what NCCL's tuner plugin can tell
// apart: calls of the same collective, byte count, node count and rank count. Every call of a
// class runs with the class's configuration (e.g. the 32 per-layer all-gathers of an FSDP step
// are one class). NCCL's five tuned collectives and all-to-all are tunable; send/recv keep
// NCCL's choice.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/search/space.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::search {

struct CollClass {
  nccl::CollKind coll = nccl::CollKind::kAllReduce;
  std::int64_t bytes = 0;
  int nnodes = 0;
  int nranks = 0;
  int calls = 0;  // communication instances of the step in this class
  // The same counted over the whole training step: an instance of a folded step (one replica
  // simulated for dp) stands for a call on every replica it does not span. What reports show,
  // so that a count does not change when a search folds or not; `calls` is what the simulated
  // workload holds (searches average their times over it).
  std::int64_t step_calls = 0;
  std::vector<traces::OpId> examples;  // one member op per instance
  // Per example, the step's instances it stands for (1 unless folded): a folded step's sums over
  // the examples weigh each by it, so that they are the unfolded step's exactly.
  std::vector<std::int32_t> weights;
  nccl::CommConfig nccl;  // NCCL's own choice (of the first instance's communicator)
  // NCCL's own choice differs between the class's communicators (pairs over NVLink and over PCIe
  // of one size): a plan that leaves the class at NCCL's choice then writes no rule for it, since
  // one rule would give every communicator the first one's configuration on replay.
  bool nccl_varies = false;
  std::vector<Subspace> subspaces;  // legal on every communicator of the class
};

struct Evaluation {
  Time step_time;
  // Per class (same order as Evaluator::classes()):
  // x_j: summed duration of its calls over the whole step (start to end, one member; a folded
  // instance counts once for each it stands for: CollClass::weights).
  std::vector<double> comm_us;
  // Over the overlap groups (sim/stats.hpp) that hold one of its calls, summed over each rank's
  // groups and averaged over the ranks: X (communication) and Y (computation) of eq. 1.
  std::vector<double> group_comm_us;
  std::vector<double> group_compute_us;
  double compute_us = 0;  // every compute op's running time, all ranks
};

// Evaluations are deterministic, so the evaluator keeps them: a candidate evaluated before (NCCL's
// own choice, which every method of `lagom compare` starts from; a walk's return to a point) is
// looked up, not simulated again. A batch of independent candidates (evaluate_all) runs on up to
// jobs() threads, each on its own simulation sharing the step's execution graph and the models'
// read-only state; results are the same, in the same order, for every thread count.
class Evaluator final {
 public:
  // The workload, cluster and profile must outlive the evaluator. Throws lagom::Error as
  // ModelCost does (workload larger than the cluster, illegal pinned configs).
  Evaluator(const traces::Workload& w, const topologies::Cluster& cluster,
            const hardware::HardwareProfile& profile, SpaceOptions space, bool contention = true);
  ~Evaluator();

  const std::vector<CollClass>& classes() const { return classes_; }
  const SpaceOptions& space() const { return space_; }
  const traces::Workload& workload() const { return w_; }

  // Simulates the step with `configs[j]` for class j (nullopt: NCCL's own choice). Counts one
  // evaluation.
  Evaluation evaluate(std::span<const std::optional<nccl::CommConfig>> configs);
  // evaluate() of every candidate of `batch`, on up to jobs() threads; the results in the batch's
  // order. The first error (in batch order) is rethrown after every thread has stopped.
  // `ahead`: candidates the caller may ask for next (a walk's next move if this one fails),
  // simulated on threads the batch leaves idle and kept for then; not evaluations, and an error
  // in one is dropped (it recurs if the candidate is asked for).
  std::vector<Evaluation> evaluate_all(
      std::span<const std::vector<std::optional<nccl::CommConfig>>> batch,
      std::span<const std::vector<std::optional<nccl::CommConfig>>> ahead = {});
  // A candidate's evaluation when it was simulated before (after a batch that failed, the ones
  // that did not), without counting an evaluation.
  std::optional<Evaluation> kept(std::span<const std::optional<nccl::CommConfig>> configs) const;
  // A lower bound on Evaluation::comm_us[j] under `c`, without simulating: the class's calls
  // each timed alone as the engine times an instance before contention (its measured member's
  // duration, traces::measured_member, else the collective model). A call runs from its last
  // member's arrival, and contention only slows it (docs/models.md §6, "nothing faster than
  // alone"), so no evaluation of a candidate that runs class j with `c` has a shorter comm_us[j].
  // Uses the evaluator's own simulation: not during evaluate_all.
  double alone_comm_us(std::size_t j, const nccl::CommConfig& c);
  // Lower bounds for the exhaustive search (docs/search.md §4, its bound). Class j's calls,
  // grouped by communicator (calls of one communicator and the class's kind and size take the
  // same time alone under one configuration): each group's time alone under `c`, in ns.
  std::vector<double> alone_group_ns(std::size_t j, const nccl::CommConfig& c);
  // The streams that hold some class's calls.
  std::size_t bound_streams();
  // How many communicators alone_group_ns(j, ...) times.
  std::size_t bound_groups(std::size_t j);
  // Adds to `streams` (bound_streams() entries) class j's calls on each stream, timed alone as
  // `group_ns` (alone_group_ns) says, and its measured calls (which no configuration changes),
  // less 1 ns per call for the engine's rounding of an end time. A stream runs its ops one at a
  // time and a call lasts at least its time alone, so a candidate's step is at least its largest
  // entry summed over the classes.
  void add_stream_ns(std::size_t j, std::span<const double> group_ns, std::vector<double>& streams);
  // The step of `configs` with nothing contending: every op takes its time alone and starts as
  // soon as its stream, its dependencies and its collective's members let it. Contention only
  // lengthens ops, and an op's start is the latest end of what it waits on, so no evaluation of
  // `configs` is shorter; and the step never shortens when a group's time alone grows. Not an
  // evaluation; uses the evaluator's own simulation: not during evaluate_all.
  Time uncontended_step(std::span<const std::optional<nccl::CommConfig>> configs);
  // Candidates evaluated (a repeat counts: a real cluster would run that iteration again).
  std::int64_t evaluations() const { return evaluations_; }
  // Simulations run: the evaluations not looked up (a repeat of an earlier candidate), and the
  // look-ahead ones.
  std::int64_t simulations() const { return simulations_; }

  // Threads evaluate_all may use (1 by default). Each beyond the first holds a simulation of its
  // own (the per-run state: events, flows, per-op times), made when first needed.
  void set_jobs(int jobs);
  int jobs() const { return jobs_; }

  // What class j runs when given `c`: with Resources::kNccl only its algorithm, protocol and
  // channels are pinned and NCCL derives the threads and chunk (as a plan's replay and NCCL do).
  nccl::CommConfig applied(std::size_t j, const nccl::CommConfig& c) const;

 private:
  struct Worker;
  using Key = std::vector<std::int64_t>;
  nccl::ConfigOverride override_of(const nccl::CommConfig& c) const;
  // What a candidate runs as (the overrides it applies): equal keys give equal evaluations.
  Key key_of(std::span<const std::optional<nccl::CommConfig>> configs) const;
  // Sets the overrides `worker` runs with to `configs` (every class: nullopt is NCCL's choice).
  void apply(Worker& worker, std::span<const std::optional<nccl::CommConfig>> configs) const;
  Evaluation run_on(Worker& worker, std::span<const std::optional<nccl::CommConfig>> configs) const;
  Evaluation measure(const sim::SimResult& r) const;
  // Times with class j running `c` (as the evaluator's own simulation would), then restores what
  // it ran before, also when `f` throws.
  template <typename F>
  auto with_class_config(std::size_t j, const nccl::CommConfig& c, F f);
  // Per class, what alone_group_ns times and add_stream_ns sums: the calls timed by the models, one
  // representative op per communicator with the streams it runs on and how many calls each holds
  // there, and the measured calls' durations, which no configuration changes, summed per stream
  // once.
  struct StreamCalls {
    traces::OpId op;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> counts;  // (stream index, calls)
  };
  struct ClassBound {
    std::vector<StreamCalls> modelled;
    std::vector<double> measured_ns;  // by stream index, less 1 ns per call
  };
  void build_bounds();
  std::vector<ClassBound> bounds_;
  std::size_t bound_streams_ = 0;

  const traces::Workload& w_;
  SpaceOptions space_;
  std::vector<std::unique_ptr<Worker>> workers_;  // [0]: the evaluator's own simulation
  const sim::ModelCost* cost_;                    // workers_[0]'s
  std::vector<CollClass> classes_;
  std::vector<std::int32_t> class_of_op_;  // -1: not tunable
  std::map<Key, Evaluation> memo_;         // at most kMemo entries
  int jobs_ = 1;
  std::int64_t evaluations_ = 0;
  std::int64_t simulations_ = 0;
};

}  // namespace lagom::search
