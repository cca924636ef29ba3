// Internal: what every search method shares. A SearchRun holds the evaluator, the options, the
// evaluations spent and the best plan so far; a method (autoccl.cpp, lagom.cpp, oracles.cpp)
// walks the space through it and returns the configurations it ends on. search.cpp's method
// table dispatches to them.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <compare>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "lagom/search/evaluator.hpp"
#include "lagom/search/search.hpp"

namespace lagom::search::internal {

using Configs = std::vector<std::optional<nccl::CommConfig>>;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A grid point of one class: subspace and (channels, threads, chunk) indices.
struct Point {
  int sub = 0;
  std::array<int, 3> idx{0, 0, 0};
  auto operator<=>(const Point&) const = default;
};

inline int axis_size(const Subspace& s, int d) {
  switch (d) {
    case 0:
      return static_cast<int>(s.channels.size());
    case 1:
      return static_cast<int>(s.threads.size());
    default:
      return static_cast<int>(s.chunks.size());
  }
}

inline nccl::CommConfig config_of(const CollClass& c, const Point& p) {
  return c.subspaces[static_cast<std::size_t>(p.sub)].at(static_cast<std::size_t>(p.idx[0]),
                                                         static_cast<std::size_t>(p.idx[1]),
                                                         static_cast<std::size_t>(p.idx[2]));
}

template <typename T>
inline int nearest(const std::vector<T>& values, T want) {
  int best = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    const auto d = [&](T v) { return v > want ? v - want : want - v; };
    if (d(values[i]) < d(values[static_cast<std::size_t>(best)])) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

// The subspace of (algo, proto), or -1.
inline int find_subspace(const CollClass& c, nccl::Algorithm a, nccl::Protocol p) {
  for (std::size_t s = 0; s < c.subspaces.size(); ++s) {
    if (c.subspaces[s].algo == a && c.subspaces[s].proto == p) {
      return static_cast<int>(s);
    }
  }
  return -1;
}

// The grid point nearest to NCCL's own resources in subspace `sub`.
inline Point nccl_point(const CollClass& c, int sub) {
  const Subspace& s = c.subspaces[static_cast<std::size_t>(sub)];
  return Point{sub,
               {nearest(s.channels, s.nccl.nchannels), nearest(s.threads, s.nccl.nthreads),
                nearest(s.chunks, s.nccl.chunk_bytes)}};
}

// The subspace NCCL picks for the class (its first when NCCL's choice is outside the space).
inline int nccl_subspace(const CollClass& c) {
  const int s = find_subspace(c, c.nccl.algo, c.nccl.proto);
  return s >= 0 ? s : 0;
}

class SearchRun {
 public:
  SearchRun(Evaluator& eval, const SearchOptions& options)
      : eval_(eval), o_(options), classes_(eval.classes()) {}

  const std::vector<CollClass>& classes() const { return classes_; }
  const SearchOptions& options() const { return o_; }
  int jobs() const { return eval_.jobs(); }
  // NCCL's own choice, evaluated first.
  const Evaluation& nccl_evaluation() const { return nccl_eval_; }

  // Simulates `configs` (one evaluation).
  Evaluation evaluate(const Configs& configs);
  // Simulates independent candidates (one evaluation each) on the evaluator's threads; the
  // results, and what is kept of them, are as if evaluate() had been called on each in order.
  // `ahead`: what the caller may ask for next (Evaluator::evaluate_all), not evaluations.
  std::vector<Evaluation> evaluate_all(const std::vector<Configs>& batch,
                                       const std::vector<Configs>& ahead = {});
  // Walks: how many more evaluations fit before the final check of the plan (spent() after
  // that many). Oracles: oracle_room.
  std::int64_t room(std::int64_t fallback) const {
    return std::max<std::int64_t>(0, budget(fallback) - 1 - evaluations_);
  }
  std::int64_t oracle_room(std::int64_t fallback) const {
    return std::max<std::int64_t>(0, budget(fallback) - evaluations_);
  }
  std::int64_t budget(std::int64_t fallback) const { return o_.budget > 0 ? o_.budget : fallback; }
  // Walks (autoccl, lagom): whether the next evaluation would leave none for the final check of
  // the plan they end on. Oracles (exhaustive, random) keep their best evaluation and need none.
  bool spent(std::int64_t fallback) const { return evaluations_ + 1 >= budget(fallback); }
  bool oracle_spent(std::int64_t fallback) const { return evaluations_ >= budget(fallback); }
  // Oracles: simulates each candidate and keeps the first whose step beats the best so far
  // (NCCL's at first).
  void keep_best(const std::vector<Configs>& batch);
  // A walk's last accepted plan and its evaluation (so that the final check can reuse it).
  void set_best(const Configs& cfg, const Evaluation& e) {
    best_configs_ = cfg;
    best_ = e;
  }
  const Configs& best_configs() const { return best_configs_; }
  // A lower bound on class j's comm_us under `c` (Evaluator::alone_comm_us); not an evaluation.
  double alone_comm_us(std::size_t j, const nccl::CommConfig& c) {
    return eval_.alone_comm_us(j, c);
  }
  // Exhaustive search's bounds (Evaluator::alone_group_ns, add_stream_ns, uncontended_step);
  // not evaluations.
  std::size_t bound_streams() { return eval_.bound_streams(); }
  std::vector<double> alone_group_ns(std::size_t j, const nccl::CommConfig& c) {
    return eval_.alone_group_ns(j, c);
  }
  void add_stream_ns(std::size_t j, std::span<const double> group_ns,
                     std::vector<double>& streams) {
    eval_.add_stream_ns(j, group_ns, streams);
  }
  std::size_t bound_groups(std::size_t j) { return eval_.bound_groups(j); }
  // Evaluator::uncontended_step; an interrupt during it is a Stop, as during an evaluation.
  Time uncontended_step(const Configs& configs);
  // Exhaustive search: combinations its bounds ruled out without a simulation
  // (SearchResult::bounded).
  void add_bounded(std::int64_t n) { bounded_ += n; }
  // Lagom's walk: class j took an accepted step (SearchResult::step_order).
  void record_step(std::size_t j) { step_order_.push_back(j); }

  // Thrown by evaluate() when SIGINT/SIGTERM asked to stop after NCCL's evaluation; run()
  // catches it and returns the fastest plan evaluated so far.
  struct Stop {};

  // Evaluates NCCL's choice, runs `method` (which returns its plan), checks the plan and builds
  // the result. With `never_slower`, a plan that ends slower than NCCL's choice gives NCCL's
  // back.
  SearchResult run(Method method, Configs (*walk)(SearchRun&), bool never_slower);

 private:
  Evaluator& eval_;
  const SearchOptions& o_;
  const std::vector<CollClass>& classes_;
  Evaluation nccl_eval_;
  Evaluation last_;
  Configs last_configs_;
  Evaluation best_;  // the best evaluation so far (oracles) or the walk's last accepted (lagom)
  Configs best_configs_;     // and its configurations; NCCL's before any
  Evaluation fastest_;       // the shortest step evaluated so far (what an interrupt keeps)
  Configs fastest_configs_;  // and its configurations
  std::int64_t evaluations_ = 0;
  std::int64_t bounded_ = 0;
  std::vector<std::size_t> step_order_;
  std::chrono::steady_clock::time_point start_;        // of run()
  std::chrono::steady_clock::time_point last_report_;  // progress

  // evaluate() and evaluate_all()'s bookkeeping of one result, in candidate order.
  void record(const Configs& configs, const Evaluation& e);
};

// The methods (docs/search.md).
Configs autoccl(SearchRun& run);
Configs lagom(SearchRun& run);
Configs exhaustive(SearchRun& run);
Configs random(SearchRun& run);

}  // namespace lagom::search::internal
