// AutoCCL (NSDI'25) as a search method (docs/search.md §3; reference/lagom-paper.md §5.3 has
// the facts from AutoCCL's code that this follows).
//
// Per class (AutoCCL's workload: collective, size, communicator), after NCCL's native config
// (our baseline evaluation), each (algorithm, protocol) subspace in turn, NCCL's first, gets
// pretrain/#subspaces and train/#subspaces of the class's calls (TUNER_PRETRAIN_STEPS and
// TUNER_TRAIN_STEPS, 20 and 50 by default):
//  * pretrain: candidates at an even stride through the subspace's grid (stride sampling; with
//    fewer points than samples, every point);
//  * train: coordinate descent over (NC, NT, C) from the subspace's best point so far (in NCCL's
//    subspace, NCCL's own config counts, measured by the native phase): along one
//    axis and direction until a move stops helping, then the other direction, then the next
//    axis; after a gain g the next move is max(1, round(0.8 g n)) points on an axis of n
//    (AutoCCL's lr; its top-k cone sampling is one point per move here). A descent has
//    converged after 2 x axes moves in a row without gain; then, while train steps remain, up to
//    TUNER_RETRY = 5 random restarts from unvisited points.
//  * pruning: a subspace is dropped when its best is worse than 3x the class's best after 5
//    probes, or worse than 1.5x after 10% of its train steps.
// AutoCCL's code compares measured means strictly (autoccl_min_gain 0); a noise floor, as
// Lagom's min gain, is an option (on FSDP it changes nothing: the channels AutoCCL pins beat
// NCCL's by more than 1% in its own measure).
// The objective is AutoCCL's: each class's own mean call time as measured in the step, i.e.
// under interference from whatever else runs (the kernel time its CUDA events measure). Every
// evaluation moves every unfinished class once, as online tuning measures every workload in the
// same training iteration, so evaluations are AutoCCL's iterations (Figure 8c's count). The best
// config each class saw is pinned at the end.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "run.hpp"

namespace lagom::search::internal {
namespace {

constexpr int kRetries = 5;  // TUNER_RETRY

struct Descent {
  std::vector<int> order;  // subspaces to visit
  std::size_t at = 0;      // index into order
  // Pretrain: the stride samples not yet measured in this subspace.
  std::vector<Point> samples;
  // Train: the descent's current point and its time (unset until its first probe).
  std::optional<Point> origin;
  double origin_t = kInf;
  bool probing_origin = false;  // the pending point starts a descent (first or restart)
  bool sampling = false;        // the pending point is a pretrain sample
  int train_used = 0;
  int train_budget = 1;
  int restarts = 0;
  Point best_sub;  // the subspace's best so far
  double best_sub_t = kInf;
  Point best;  // the class's best so far (NCCL's native config at first)
  double best_t = kInf;
  double native_t = kInf;  // NCCL's native config's time (the baseline evaluation)
  std::vector<int> axes;   // axes with more than one point in this subspace
  std::size_t axis = 0;
  int dir = 1;
  int step = 1;
  int fails = 0;
  int probes = 0;
  std::set<Point> visited;
  std::optional<Point> pending;
  bool done = false;
};

Point point_at(const Subspace& s, int sub, std::size_t flat) {
  const std::size_t nt = s.threads.size();
  const std::size_t nc = s.chunks.size();
  return Point{sub,
               {static_cast<int>(flat / (nt * nc)), static_cast<int>(flat / nc % nt),
                static_cast<int>(flat % nc)}};
}

void enter_subspace(const CollClass& c, Descent& d, int pretrain, int train) {
  const int sub = d.order[d.at];
  const Subspace& s = c.subspaces[static_cast<std::size_t>(sub)];
  const int nsub = static_cast<int>(d.order.size());
  d.samples.clear();
  const std::size_t size = s.size();
  const std::size_t want = static_cast<std::size_t>(std::max(0, pretrain / nsub));
  if (want > 0 && size > 0) {
    const std::size_t n = std::min(want, size);
    for (std::size_t i = 0; i < n; ++i) {
      // Even stride through the flattened grid, centred in each stride.
      d.samples.push_back(point_at(s, sub, (2 * i + 1) * size / (2 * n)));
    }
  }
  d.origin.reset();
  d.origin_t = kInf;
  d.probing_origin = false;
  d.train_used = 0;
  d.train_budget = std::max(1, train / nsub);
  d.restarts = 0;
  d.best_sub_t = kInf;
  d.axes.clear();
  for (int a = 0; a < 3; ++a) {
    if (axis_size(s, a) > 1) {
      d.axes.push_back(a);
    }
  }
  d.axis = 0;
  d.dir = 1;
  d.step = 1;
  d.fails = 0;
  d.probes = 0;
  d.visited.clear();
  // NCCL's own point, measured by the native phase: where a descent in NCCL's subspace may
  // start (AutoCCL descends from the best point seen), at no second evaluation.
  const Point native = nccl_point(c, sub);
  if (config_of(c, native) == c.nccl) {
    d.visited.insert(native);
    d.best_sub = native;
    d.best_sub_t = d.native_t;
  }
}

void next_subspace(const CollClass& c, Descent& d, int pretrain, int train) {
  if (++d.at >= d.order.size()) {
    d.done = true;
    return;
  }
  enter_subspace(c, d, pretrain, train);
}

void turn(Descent& d) {
  d.step = 1;
  ++d.fails;
  if (d.dir > 0) {
    d.dir = -1;
  } else {
    d.dir = 1;
    d.axis = d.axes.empty() ? 0 : (d.axis + 1) % d.axes.size();
  }
}

// A random unvisited point of the subspace, or nullopt when every point was visited.
std::optional<Point> restart_point(const Subspace& s, int sub, const Descent& d,
                                   std::mt19937_64& rng) {
  const std::size_t size = s.size();
  if (d.visited.size() >= size) {
    return std::nullopt;
  }
  for (int tries = 0; tries < 64; ++tries) {
    const Point p = point_at(s, sub, std::uniform_int_distribution<std::size_t>(0, size - 1)(rng));
    if (!d.visited.count(p)) {
      return p;
    }
  }
  for (std::size_t f = 0; f < size; ++f) {  // nearly all visited: the first one left
    const Point p = point_at(s, sub, f);
    if (!d.visited.count(p)) {
      return p;
    }
  }
  return std::nullopt;
}

// The next point to try, or nullopt when the class is done.
std::optional<Point> propose(const CollClass& c, Descent& d, int pretrain, int train,
                             std::mt19937_64& rng) {
  while (!d.done) {
    const int sub = d.order[d.at];
    const Subspace& s = c.subspaces[static_cast<std::size_t>(sub)];
    while (!d.samples.empty() && d.visited.count(d.samples.back())) {
      d.samples.pop_back();
    }
    d.sampling = !d.samples.empty();
    if (d.sampling) {  // pretrain
      const Point p = d.samples.back();
      d.samples.pop_back();
      return p;
    }
    // Pruning (AutoCCL's early drop of a subspace far behind the class's best).
    if ((d.probes >= 5 && d.best_sub_t > 3 * d.best_t) ||
        (d.train_used >= std::max(1, d.train_budget / 10) && d.best_sub_t > 1.5 * d.best_t) ||
        d.train_used >= d.train_budget) {
      next_subspace(c, d, pretrain, train);
      continue;
    }
    if (!d.origin) {
      if (d.best_sub_t < kInf) {  // descend from the best point seen in the subspace
        d.origin = d.best_sub;
        d.origin_t = d.best_sub_t;
      } else {
        d.probing_origin = true;  // no samples: from NCCL's resources in this subspace
        return nccl_point(c, sub);
      }
    }
    if (d.axes.empty() || d.fails >= 2 * static_cast<int>(d.axes.size())) {
      // Converged: a random restart while train steps remain.
      std::optional<Point> p;
      if (d.restarts < kRetries) {
        p = restart_point(s, sub, d, rng);
      }
      if (!p) {
        next_subspace(c, d, pretrain, train);
        continue;
      }
      ++d.restarts;
      d.fails = 0;
      d.axis = 0;
      d.dir = 1;
      d.step = 1;
      d.probing_origin = true;
      return p;
    }
    const int a = d.axes[d.axis];
    Point p = *d.origin;
    p.idx[static_cast<std::size_t>(a)] += d.dir * d.step;
    const int n = axis_size(s, a);
    if (p.idx[static_cast<std::size_t>(a)] < 0 || p.idx[static_cast<std::size_t>(a)] >= n ||
        d.visited.count(p)) {
      turn(d);
      continue;
    }
    return p;
  }
  return std::nullopt;
}

// `t` beats `than` when shorter by more than the noise floor `min_gain` (a fraction).
bool beats(double t, double than, double min_gain) {
  return t < than * (1 - min_gain);
}

void report(const CollClass& c, Descent& d, const Point& p, double t, double min_gain) {
  d.visited.insert(p);
  ++d.probes;
  if (!d.sampling) {
    ++d.train_used;
    if (d.probing_origin) {
      d.probing_origin = false;
      d.origin = p;
      d.origin_t = t;
    } else if (beats(t, d.origin_t, min_gain)) {
      const double gain = (d.origin_t - t) / d.origin_t;
      d.origin = p;
      d.origin_t = t;
      d.fails = 0;
      const int a = d.axes[d.axis];
      const int n = axis_size(c.subspaces[static_cast<std::size_t>(p.sub)], a);
      d.step = std::max(1, static_cast<int>(std::lround(0.8 * gain * n)));
    } else {
      turn(d);
    }
  }
  if (beats(t, d.best_sub_t, min_gain)) {
    d.best_sub_t = t;
    d.best_sub = p;
  }
  if (beats(t, d.best_t, min_gain)) {
    d.best_t = t;
    d.best = p;
  }
}

}  // namespace

Configs autoccl(SearchRun& run) {
  const SearchOptions& o = run.options();
  const std::size_t n = run.classes().size();
  std::vector<Descent> ds(n);
  std::vector<bool> native_best(n, true);  // NCCL's own config is still the class's best
  std::mt19937_64 rng(o.seed);
  for (std::size_t j = 0; j < n; ++j) {
    const CollClass& c = run.classes()[j];
    const int first = nccl_subspace(c);
    ds[j].order.push_back(first);
    for (int s = 0; s < static_cast<int>(c.subspaces.size()); ++s) {
      if (s != first) {
        ds[j].order.push_back(s);
      }
    }
    // The native phase: NCCL's own config, measured in the baseline evaluation.
    ds[j].best_t = run.nccl_evaluation().comm_us[j] / static_cast<double>(c.step_calls);
    ds[j].native_t = ds[j].best_t;
    enter_subspace(c, ds[j], o.autoccl_pretrain, o.autoccl_train);
  }
  auto current = [&]() {
    Configs cfg(n);
    for (std::size_t j = 0; j < n; ++j) {
      if (ds[j].pending) {
        cfg[j] = config_of(run.classes()[j], *ds[j].pending);
      } else if (!native_best[j]) {
        cfg[j] = config_of(run.classes()[j], ds[j].best);
      }
    }
    return cfg;
  };
  while (!run.spent(2000)) {
    bool any = false;
    for (std::size_t j = 0; j < n; ++j) {
      ds[j].pending = propose(run.classes()[j], ds[j], o.autoccl_pretrain, o.autoccl_train, rng);
      any = any || ds[j].pending.has_value();
    }
    if (!any) {
      break;
    }
    const Evaluation e = run.evaluate(current());
    for (std::size_t j = 0; j < n; ++j) {
      if (ds[j].pending) {
        const double before = ds[j].best_t;
        report(run.classes()[j], ds[j], *ds[j].pending,
               e.comm_us[j] / static_cast<double>(run.classes()[j].step_calls), o.autoccl_min_gain);
        native_best[j] = native_best[j] && !(ds[j].best_t < before);
      }
    }
  }
  for (Descent& d : ds) {
    d.pending.reset();
  }
  return current();
}

}  // namespace lagom::search::internal
