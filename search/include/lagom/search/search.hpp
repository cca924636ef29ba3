// Searches for NCCL configurations that make a step fast, with the simulator as the oracle
// (docs/search.md has the algorithms, the paper's ambiguities and what we chose):
//  * nccl: NCCL 2.28's own choice for every call (one evaluation).
//  * autoccl: AutoCCL's per-collective coordinate descent over (NC, NT, C) inside every
//    (algorithm, protocol) subspace, each class minimising its own time measured in the step
//    (under interference), all classes tuned at once as AutoCCL tunes online.
//  * lagom: the Lagom paper's Algorithm 1 (the class with the smallest priority H = compute time
//    added per unit of its communication time saved goes next) and Algorithm 2 (start at minimum
//    resources, grow by a step proportional to the last relative gain, stop when the collective
//    slows or its overlap groups' communication is hidden).
//  * exhaustive: every combination of every class's grid points (an oracle for small spaces).
//  * random: `budget` uniformly drawn combinations, seeded.
// Every method returns its plan, the step time under it, NCCL's step time, the evaluations and
// the wall time; the same inputs give the same plan.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/search/evaluator.hpp"
#include "lagom/search/plan.hpp"

namespace lagom::search {

enum class Method { kNccl, kAutoCcl, kLagom, kExhaustive, kRandom };

std::string_view to_string(Method m);
// "nccl", "autoccl", "lagom", "exhaustive", "random" (case-insensitive).
std::optional<Method> parse_method(std::string_view text);

// Where Lagom's resource walk runs for each class: in NCCL's own (algorithm, protocol), in the
// subspace where the class is fastest at NCCL's resources (one extra evaluation per subspace
// round), or in each subspace in turn, one whole walk per subspace index, keeping the best.
enum class LagomSubspace { kNccl, kBest, kAll };

// How Lagom reads the paper's "NC += lr" on a grid: lr grid points (kPoints, so nearly always
// one point), or lr as a fraction of the axis's points (kAxis, as AutoCCL's
// findKCandidatesWithAxis takes k = lr x count candidates).
enum class LagomStep { kPoints, kAxis };

// How Lagom's Algorithm 2 grows a collective's resources: every axis (NC, NT, C) by the same
// step at once, as the paper's pseudocode writes it, or each axis on its own (one evaluation per
// axis, the best kept).
enum class LagomWalk { kLockstep, kPerAxis };

// Which collective Lagom moves next: the smallest priority H (Algorithm 1), or a fixed
// round-robin order (the ablation `lagom-roundrobin`).
enum class LagomOrder { kPriority, kRoundRobin };

struct SearchOptions {
  Method method = Method::kLagom;
  std::int64_t budget = 0;  // evaluations at most; 0: the method's default (docs/search.md)
  std::uint64_t seed = 1;
  LagomSubspace lagom_subspace = LagomSubspace::kBest;
  // Lagom's growth step: after a relative gain g each resource moves max(1, round(g *
  // lr_scale)) grid points (kPoints) or max(1, round(g * lr_scale * points on the axis))
  // (kAxis).
  LagomStep lagom_step = LagomStep::kPoints;
  double lagom_lr_scale = 1.0;
  // Lagom: a step must shorten the class's communication by more than this fraction to count
  // as an improvement (on real GPUs, measurement noise plays this part). 0.2%: a per-axis step
  // moves one grid point of ~32, and at 1% the walk stalled short of NCCL's own resources on
  // the EP steps (docs/search.md §4 has the measurements).
  double lagom_min_gain = 0.002;
  // Lagom: a move that lengthens the step (the makespan of the overlap groups) is undone: past
  // the balance point X = Y more resources only slow the computation. The class then parks
  // (lagom_park) or ends.
  bool lagom_step_guard = true;
  // Lagom: a class whose every move the step guard refused (each shortened its communication
  // but lengthened the step) waits for another class to move and then tries again, instead of
  // ending.
  bool lagom_park = true;
  // Lagom (Algorithm 2, condition 1): a class whose overlap groups' communication is hidden
  // (X < Y) ends, since more resources would only slow the computation. Off: it grows until a
  // step stops gaining or the guard refuses it.
  bool lagom_hidden_stop = true;
  // Lagom: a class whose walk ends tries each subspace it has not walked in, once, at its
  // channels (with that subspace's NCCL threads and smallest chunk), and walks on in the
  // fastest that gains (docs/search.md §4).
  bool lagom_switch = true;
  // Lagom: a probe of the subspaces at NCCL's resources that cannot be any class's fastest, even
  // with its collectives alone (Evaluator::alone_comm_us), is not simulated. The plan is the same
  // either way; off simulates every probe (for tests, and to measure what the bound saves).
  bool lagom_probe_bound = true;
  LagomWalk lagom_walk = LagomWalk::kPerAxis;
  // AutoCCL's phases per class (TUNER_PRETRAIN_STEPS and TUNER_TRAIN_STEPS, its code's
  // defaults), shared evenly by the class's subspaces.
  int autoccl_pretrain = 20;
  int autoccl_train = 50;
  // AutoCCL: a candidate must beat the best so far by more than this fraction (0: strictly, as
  // its code compares measured means).
  double autoccl_min_gain = 0;
  LagomOrder lagom_order = LagomOrder::kPriority;
  // Called with the evaluations so far and the seconds since the search began, at most once
  // every progress_every_s seconds of a long search (none for a search shorter than that).
  std::function<void(std::int64_t evaluations, double seconds)> progress;
  double progress_every_s = 5;
  // SIGINT/SIGTERM after NCCL's evaluation: return the fastest plan so far, marked interrupted
  // (lagom tune, which writes it), or throw lagom::Interrupted (every other caller, whose
  // numbers would be partial).
  bool keep_on_interrupt = false;
  // Threads that simulate a round's independent candidates (Evaluator::set_jobs): Lagom's
  // per-axis tries and subspace probes, the oracles' draws. AutoCCL's rounds depend each on the
  // last and run one at a time. Plans, times and evaluation counts are the same for every value.
  int jobs = 1;
  // Exhaustive: rule out without a simulation every combination whose lower bound (each
  // stream's calls alone, or the step with nothing contending) is longer than a step already
  // simulated (SearchResult::bounded). The plan and step are the same either way; off, every
  // combination is simulated (the tests' reference).
  bool exhaustive_bound = true;
};

struct ClassChoice {
  nccl::CommConfig config;  // chosen
  double time_us = 0;       // its calls' mean time in the final evaluation
  double nccl_time_us = 0;  // and in NCCL's evaluation
};

struct SearchResult {
  Method method = Method::kNccl;
  Time step_time;
  Time nccl_step_time;
  std::int64_t evaluations = 0;  // including NCCL's baseline and the final check
  // Simulations run for them: fewer when a candidate was evaluated before (Evaluator keeps
  // evaluations), more with -j when look-ahead candidates were simulated and not asked for.
  std::int64_t simulations = 0;
  // Exhaustive: combinations ruled out without a simulation, since a lower bound on their step
  // (each stream's calls alone, or the step with nothing contending) was longer than a step
  // already simulated (docs/search.md §4).
  std::int64_t bounded = 0;
  double search_ms = 0;              // wall time of the search
  std::vector<ClassChoice> choices;  // by class (Evaluator::classes())
  // Lagom: the class of each accepted step, in the order the walk took them (Algorithm 1's
  // priority at work; placements at minimum resources are not steps). Empty for other methods.
  std::vector<std::size_t> step_order;
  ConfigPlan plan;  // one rule per class (none for nccl)
  // SIGINT/SIGTERM stopped the search after NCCL's evaluation and keep_on_interrupt was set: the
  // plan is the fastest one evaluated so far (common/interrupt.hpp).
  bool interrupted = false;
};

// Runs one method. lagom::Error when the method cannot run within its budget (exhaustive on a
// space larger than the budget says how large the space is).
SearchResult run_search(Evaluator& eval, const SearchOptions& options);

}  // namespace lagom::search
