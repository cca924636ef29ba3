// AutoCCL (NSDI'25) as a search method (docs/search.md).
//
// Per class, coordinate descent over the resource axes inside each subspace in turn (NCCL's
// first), from NCCL's resources: along one axis and direction until a move stops helping,
// then the other direction, then the next axis; a subspace is done after 2 x axes moves in a
// row without gain, or after 5 probes worse than 3x the class's best (AutoCCL's pruning).
// After a gain of g the next move is max(1, round(0.8 g n)) points on an axis of n
// (AutoCCL's lr). Every round moves every unfinished class once and simulates once, so each
// class is measured under the others' current candidates, as online tuning is.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "run.hpp"

namespace lagom::search::internal {
namespace {

struct Descent {
  std::vector<int> order;  // subspaces to visit
  std::size_t at = 0;      // index into order
  bool started = false;
  Point best_sub;
  double best_sub_t = kInf;
  Point best;
  double best_t = kInf;
  std::vector<int> axes;  // axes with more than one point in this subspace
  std::size_t axis = 0;
  int dir = 1;
  int step = 1;
  int fails = 0;
  int probes = 0;
  std::set<Point> visited;
  std::optional<Point> pending;
  bool done = false;
};

void enter_subspace(const CollClass& c, Descent& d) {
  const int sub = d.order[d.at];
  const Subspace& s = c.subspaces[static_cast<std::size_t>(sub)];
  d.started = false;
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
}

void next_subspace(const CollClass& c, Descent& d) {
  if (++d.at >= d.order.size()) {
    d.done = true;
    return;
  }
  enter_subspace(c, d);
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

// The next point to try, or nullopt when the class is done.
std::optional<Point> propose(const CollClass& c, Descent& d) {
  while (!d.done) {
    const int sub = d.order[d.at];
    if (!d.started) {
      return nccl_point(c, sub);
    }
    if (d.fails >= 2 * static_cast<int>(d.axes.size()) ||
        (d.probes >= 5 && d.best_sub_t > 3 * d.best_t)) {
      next_subspace(c, d);
      continue;
    }
    const int a = d.axes[d.axis];
    Point p = d.best_sub;
    p.idx[static_cast<std::size_t>(a)] += d.dir * d.step;
    const int n = axis_size(c.subspaces[static_cast<std::size_t>(sub)], a);
    if (p.idx[static_cast<std::size_t>(a)] < 0 || p.idx[static_cast<std::size_t>(a)] >= n ||
        d.visited.count(p)) {
      turn(d);
      continue;
    }
    return p;
  }
  return std::nullopt;
}

void report(const CollClass& c, Descent& d, const Point& p, double t) {
  d.visited.insert(p);
  ++d.probes;
  if (!d.started) {
    d.started = true;
    d.best_sub = p;
    d.best_sub_t = t;
  } else if (t < d.best_sub_t) {
    const double gain = (d.best_sub_t - t) / d.best_sub_t;
    d.best_sub = p;
    d.best_sub_t = t;
    d.fails = 0;
    const int a = d.axes[d.axis];
    const int n = axis_size(c.subspaces[static_cast<std::size_t>(p.sub)], a);
    d.step = std::max(1, static_cast<int>(std::lround(0.8 * gain * n)));
  } else {
    turn(d);
  }
  if (t < d.best_t) {
    d.best_t = t;
    d.best = p;
  }
}

}  // namespace

Configs autoccl(SearchRun& run) {
  const std::size_t n = run.classes().size();
  std::vector<Descent> ds(n);
  for (std::size_t j = 0; j < n; ++j) {
    const CollClass& c = run.classes()[j];
    const int first = nccl_subspace(c);
    ds[j].order.push_back(first);
    for (int s = 0; s < static_cast<int>(c.subspaces.size()); ++s) {
      if (s != first) {
        ds[j].order.push_back(s);
      }
    }
    enter_subspace(c, ds[j]);
  }
  auto current = [&]() {
    Configs cfg(n);
    for (std::size_t j = 0; j < n; ++j) {
      if (ds[j].pending) {
        cfg[j] = config_of(run.classes()[j], *ds[j].pending);
      } else if (ds[j].best_t < kInf) {
        cfg[j] = config_of(run.classes()[j], ds[j].best);
      }
    }
    return cfg;
  };
  while (!run.spent(2000)) {
    bool any = false;
    for (std::size_t j = 0; j < n; ++j) {
      ds[j].pending = propose(run.classes()[j], ds[j]);
      any = any || ds[j].pending.has_value();
    }
    if (!any) {
      break;
    }
    const Evaluation e = run.evaluate(current());
    for (std::size_t j = 0; j < n; ++j) {
      if (ds[j].pending) {
        report(run.classes()[j], ds[j], *ds[j].pending, e.comm_us[j] / run.classes()[j].calls);
      }
    }
  }
  for (Descent& d : ds) {
    d.pending.reset();
  }
  return current();
}

}  // namespace lagom::search::internal
