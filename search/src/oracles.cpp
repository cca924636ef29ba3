// The oracles: exhaustive enumeration and seeded random sampling of the whole space, each keeping
// the best step it simulated, so that the other methods' optimality gap is a number.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <random>

#include "lagom/common/error.hpp"
#include "run.hpp"

namespace lagom::search::internal {
namespace {

// Every grid point of every class.
std::vector<std::vector<Point>> all_points(const std::vector<CollClass>& classes) {
  std::vector<std::vector<Point>> pts(classes.size());
  for (std::size_t j = 0; j < classes.size(); ++j) {
    const CollClass& c = classes[j];
    for (int s = 0; s < static_cast<int>(c.subspaces.size()); ++s) {
      const Subspace& sub = c.subspaces[static_cast<std::size_t>(s)];
      for (int a = 0; a < axis_size(sub, 0); ++a) {
        for (int b = 0; b < axis_size(sub, 1); ++b) {
          for (int k = 0; k < axis_size(sub, 2); ++k) {
            pts[j].push_back(Point{s, {a, b, k}});
          }
        }
      }
    }
  }
  return pts;
}

// Candidates an oracle simulates at once: enough to keep every thread busy, few enough that an
// interrupt is seen soon.
std::int64_t batch_size(const SearchRun& run) {
  return 8 * static_cast<std::int64_t>(run.jobs());
}

}  // namespace

// Combinations exhaustive search bounds, at most: a few seconds of arithmetic and up to 160 MB
// of candidates (16 bytes each), whatever is left to simulate.
constexpr double kMaxCombinations = 1e7;
// Candidates simulated together between two looks at the best step.
constexpr std::int64_t kBoundBatch = 16;

// Every combination is ruled on, but simulated only if it could win. Two lower bounds on a
// combination's step, each exact (docs/search.md §4):
//  1. a stream runs its calls one at a time, each at least as long as alone, so the step is at
//     least its busiest stream's calls alone (arithmetic on each class's per-point times);
//  2. the step with nothing contending (Evaluator::uncontended_step, a simulation without the
//     contention model, about a third of the cost), which only grows with the calls' times
//     alone: once a combination's is longer than the best step, so is that of every
//     combination whose communicators' times alone are all at least its own, unsimulated.
// Candidates go from the lowest first bound up, and the search ends when the next one's first
// bound exceeds the best step. What it returns is the same as simulating every combination in
// enumeration order and keeping the first shortest step, NCCL's own choice first.
Configs exhaustive(SearchRun& run) {
  const std::vector<CollClass>& classes = run.classes();
  const auto pts = all_points(classes);
  double size = 1;
  for (const auto& p : pts) {
    size *= static_cast<double>(p.size());
  }
  if (size > kMaxCombinations) {
    throw Error(fmt::format(
        "exhaustive search: the space has {:.3g} combinations ({} collective classes), more than "
        "the {:.3g} it enumerates; use --grid coarse, --space nccl or a smaller step",
        size, pts.size(), kMaxCombinations));
  }
  const std::int64_t limit = run.budget(100000);
  const bool bound = run.options().exhaustive_bound;
  if (!bound && size + 1 > static_cast<double>(limit)) {
    throw Error(fmt::format(
        "exhaustive search: the space has {:.3g} combinations ({} collective classes), which with "
        "NCCL's own choice is more than the budget of {} evaluations; raise --budget, or use "
        "--grid coarse, --space nccl or a smaller step",
        size, pts.size(), limit));
  }
  const std::size_t streams = bound ? run.bound_streams() : 0;
  // Per class and point: its communicators' times alone (concatenated, `groups[j]` each; NaN
  // where the models refuse the point, whose simulation then reports the error) and its calls'
  // per stream.
  std::vector<std::size_t> groups(pts.size(), 0);
  std::vector<std::vector<double>> group_ns(pts.size());
  std::vector<std::vector<double>> stream_ns(pts.size());
  for (std::size_t j = 0; j < pts.size() && bound; ++j) {
    groups[j] = run.bound_groups(j);
    for (const Point& p : pts[j]) {
      std::vector<double> g;
      std::vector<double> st(streams, 0);
      bool refused = false;
      try {
        g = run.alone_group_ns(j, config_of(classes[j], p));
        run.add_stream_ns(j, g, st);
      } catch (const Error&) {
        refused = true;
      }
      if (refused) {
        g.assign(groups[j], std::numeric_limits<double>::quiet_NaN());
        st.assign(streams, 0);
      }
      group_ns[j].insert(group_ns[j].end(), g.begin(), g.end());
      stream_ns[j].insert(stream_ns[j].end(), st.begin(), st.end());
    }
  }
  const auto digits_of = [&](std::int64_t index) {
    std::vector<std::size_t> digit(pts.size());
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const auto n = static_cast<std::int64_t>(pts[j].size());
      digit[j] = static_cast<std::size_t>(index % n);
      index /= n;
    }
    return digit;
  };
  const auto first_bound = [&](const std::vector<std::size_t>& digit) {
    double most = 0;
    for (std::size_t s = 0; s < streams; ++s) {
      double sum = 0;
      for (std::size_t j = 0; j < pts.size(); ++j) {
        sum += stream_ns[j][digit[j] * streams + s];
      }
      most = std::max(most, sum);
    }
    // Below the integer-nanosecond sum it stands for by more than a double's rounding.
    return most * (1 - 1e-12);
  };
  const auto configs_of = [&](const std::vector<std::size_t>& digit) {
    Configs cfg(classes.size());
    for (std::size_t j = 0; j < pts.size(); ++j) {
      cfg[j] = config_of(classes[j], pts[j][digit[j]]);
    }
    return cfg;
  };
  // The communicators' times alone of a combination (NaN: unknown).
  const auto times_of = [&](const std::vector<std::size_t>& digit) {
    std::vector<double> t;
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const auto from = group_ns[j].begin() + static_cast<std::ptrdiff_t>(digit[j] * groups[j]);
      t.insert(t.end(), from, from + static_cast<std::ptrdiff_t>(groups[j]));
    }
    return t;
  };
  // Combinations that could beat NCCL's own step, by first bound, then in enumeration order
  // (the first class's point fastest).
  Evaluation best = run.nccl_evaluation();
  auto best_ns = static_cast<double>(best.step_time.count_ns());
  struct Candidate {
    double bound;
    std::int64_t index;
  };
  std::vector<Candidate> cands;
  {
    std::vector<std::size_t> digit(pts.size(), 0);
    const auto total = static_cast<std::int64_t>(size);
    for (std::int64_t index = 0; index < total; ++index) {
      const double b = first_bound(digit);
      if (!(b > best_ns)) {
        cands.push_back(Candidate{b, index});
      }
      for (std::size_t j = 0; j < pts.size() && ++digit[j] == pts[j].size(); ++j) {
        digit[j] = 0;
      }
    }
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.bound != b.bound ? a.bound < b.bound : a.index < b.index;
  });
  // Times alone whose step with nothing contending is longer than the best step (which only
  // shortens, so they stay so): any combination at least as slow alone everywhere is too.
  std::vector<std::vector<double>> too_slow;
  // Whether every time of `a` is at most `b`'s (false at a NaN: unknown is never ruled out).
  const auto at_most = [](const std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!(a[i] <= b[i])) {
        return false;
      }
    }
    return true;
  };
  const auto dominated = [&](const std::vector<double>& t) {
    return std::any_of(too_slow.begin(), too_slow.end(),
                       [&](const std::vector<double>& v) { return at_most(v, t); });
  };
  std::int64_t simulated = 0;
  std::int64_t best_index = -1;  // NCCL's own choice
  Configs best_configs = run.best_configs();
  // Whether candidate i survives the second bound against the best step so far, and its floor
  // (the larger bound) if so.
  const auto survives = [&](std::size_t i, Configs& cfg) -> std::optional<double> {
    const std::vector<std::size_t> digit = digits_of(cands[i].index);
    cfg = configs_of(digit);
    if (!bound) {
      return cands[i].bound;
    }
    const std::vector<double> t = times_of(digit);
    if (dominated(t)) {
      return std::nullopt;
    }
    double uncontended = 0;
    try {
      uncontended = static_cast<double>(run.uncontended_step(cfg).count_ns());
    } catch (const Error&) {
      // Refused by the models: its evaluation reports it.
    }
    if (uncontended > best_ns) {
      // Kept minimal: what `t` dominates adds nothing.
      std::erase_if(too_slow, [&](const std::vector<double>& v) { return at_most(t, v); });
      too_slow.push_back(t);
      return std::nullopt;
    }
    return std::max(cands[i].bound, uncontended);
  };
  std::size_t next = 0;
  const auto open = [&] { return next < cands.size() && !(cands[next].bound > best_ns); };
  while (open()) {
    // The next batch: candidates that neither bound rules out against the best step so far.
    std::vector<std::int64_t> index;
    std::vector<double> floor_ns;
    std::vector<Configs> batch;
    const std::int64_t take =
        std::max<std::int64_t>(1, std::min(run.oracle_room(limit), kBoundBatch));
    for (; open() && static_cast<std::int64_t>(batch.size()) < take; ++next) {
      Configs cfg;
      if (const std::optional<double> floor = survives(next, cfg)) {
        index.push_back(cands[next].index);
        floor_ns.push_back(*floor);
        batch.push_back(std::move(cfg));
      }
    }
    if (batch.empty()) {
      continue;
    }
    if (run.oracle_spent(limit)) {
      std::size_t left = next;
      while (left < cands.size() && !(cands[left].bound > best_ns)) {
        ++left;
      }
      throw Error(fmt::format(
          "exhaustive search: after the budget of {} evaluations, {} of the {:.3g} combinations "
          "are not yet ruled out (none simulated is proven the shortest); raise --budget, or "
          "use --grid coarse, --space nccl or a smaller step",
          limit, left - next + batch.size(), size));
    }
    const std::vector<Evaluation> es = run.evaluate_all(batch);
    simulated += static_cast<std::int64_t>(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto ns = static_cast<double>(es[i].step_time.count_ns());
      if (ns < floor_ns[i]) {
        throw Error(fmt::format(
            "internal error: exhaustive search: a step of {} ns is shorter than its lower bound "
            "({:.0f} ns: its calls alone, or the step with nothing contending)",
            es[i].step_time.count_ns(), floor_ns[i]));
      }
      if (ns < best_ns || (ns == best_ns && index[i] < best_index)) {
        best_ns = ns;
        best_index = index[i];
        best = es[i];
        best_configs = batch[i];
      }
    }
  }
  run.add_bounded(static_cast<std::int64_t>(size) - simulated);
  if (best_index >= 0) {
    run.set_best(best_configs, best);
  }
  return best_configs;
}

Configs random(SearchRun& run) {
  const auto pts = all_points(run.classes());
  std::mt19937_64 rng(run.options().seed);
  // Drawn in the same order whatever the batch: the candidates do not depend on the results.
  while (!run.oracle_spent(200)) {
    std::vector<Configs> batch;
    const std::int64_t take = std::min(run.oracle_room(200), batch_size(run));
    for (std::int64_t k = 0; k < take; ++k) {
      Configs cfg(run.classes().size());
      for (std::size_t j = 0; j < pts.size(); ++j) {
        cfg[j] = config_of(run.classes()[j], pts[j][rng() % pts[j].size()]);
      }
      batch.push_back(std::move(cfg));
    }
    run.keep_best(batch);
  }
  return run.best_configs();
}

}  // namespace lagom::search::internal
