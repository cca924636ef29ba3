// The Lagom paper's search (arXiv 2602.20656, Algorithms 1 and 2) as a search method
// (docs/search.md).
//
// Algorithm 1 picks the unfinished class with the smallest H; Algorithm 2 moves it one step:
// the first step puts it at minimum resources (every grid index 0), later steps grow every
// resource axis by max(1, round(lr * lr_scale)) points, lr the relative gain in the
// class's communication time of its last accepted step. A step that does not shorten the
// class's communication by more than min_gain, or (step guard) lengthens the step, is undone
// and ends the class; a step after which the
// communication of the class's overlap groups is hidden (X < Y) is kept and ends it; a kept
// step sets H = (Y' - Y) / (x - x'). The first step leaves H at its initial 0.01, so every
// class is placed at minimum resources before any grows.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "run.hpp"

namespace lagom::search::internal {
namespace {

struct Walk {
  int sub = 0;
  std::array<int, 3> idx{0, 0, 0};
  bool placed = false;
  bool done = false;
  double h = 0.01;
  double lr = 0;
};

}  // namespace

Configs lagom(SearchRun& run) {
  const std::size_t n = run.classes().size();
  std::vector<Walk> ws(n);
  Configs cfg(n);  // NCCL's until a class is placed
  for (std::size_t j = 0; j < n; ++j) {
    ws[j].sub = nccl_subspace(run.classes()[j]);
  }
  if (run.options().lagom_subspace == LagomSubspace::kBest) {
    // Each class's fastest subspace at NCCL's resources: one round per subspace index.
    std::size_t rounds = 0;
    for (const CollClass& c : run.classes()) {
      rounds = std::max(rounds, c.subspaces.size());
    }
    std::vector<double> best(n, kInf);
    for (std::size_t r = 0; r < rounds && rounds > 1 && !run.spent(1000); ++r) {
      Configs probe(n);
      for (std::size_t j = 0; j < n; ++j) {
        if (r < run.classes()[j].subspaces.size()) {
          probe[j] = config_of(run.classes()[j], nccl_point(run.classes()[j], static_cast<int>(r)));
        }
      }
      const Evaluation e = run.evaluate(probe);
      for (std::size_t j = 0; j < n; ++j) {
        if (r < run.classes()[j].subspaces.size() && e.comm_us[j] < best[j]) {
          best[j] = e.comm_us[j];
          ws[j].sub = static_cast<int>(r);
        }
      }
    }
  }
  Evaluation accepted = run.nccl_evaluation();  // measurements under the accepted configurations
  while (!run.spent(1000)) {
    std::size_t j = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (!ws[i].done && (j == n || ws[i].h < ws[j].h)) {
        j = i;
      }
    }
    if (j == n) {
      break;
    }
    Walk& w = ws[j];
    const CollClass& c = run.classes()[j];
    const Subspace& s = c.subspaces[static_cast<std::size_t>(w.sub)];
    std::array<int, 3> next = w.idx;
    if (w.placed) {
      bool moved = false;
      for (int a = 0; a < 3; ++a) {
        const int size = axis_size(s, a);
        const double points = run.options().lagom_step == LagomStep::kAxis ? size : 1.0;
        const int step = std::max(
            1, static_cast<int>(std::lround(w.lr * run.options().lagom_lr_scale * points)));
        const int v = std::min(size - 1, w.idx[static_cast<std::size_t>(a)] + step);
        moved = moved || v != w.idx[static_cast<std::size_t>(a)];
        next[static_cast<std::size_t>(a)] = v;
      }
      if (!moved) {
        w.done = true;  // every resource at its maximum
        continue;
      }
    }
    const std::optional<nccl::CommConfig> before = cfg[j];
    cfg[j] = config_of(c, Point{w.sub, next});
    const Evaluation e = run.evaluate(cfg);
    const double x = accepted.comm_us[j];
    const double x_new = e.comm_us[j];
    const bool hidden = e.group_comm_us[j] < e.group_compute_us[j];
    if (!w.placed) {
      w.placed = true;
      w.idx = next;
      w.done = hidden;  // condition 1: minimal resources already hide it
      accepted = e;
      continue;
    }
    if (x_new >= x * (1 - run.options().lagom_min_gain) ||
        (run.options().lagom_step_guard && e.step_time > accepted.step_time)) {
      cfg[j] = before;  // not faster, or the step got longer: undo the step and stop
      w.done = true;
      continue;
    }
    w.idx = next;
    if (hidden) {
      w.done = true;
    } else {
      w.h = (e.group_compute_us[j] - accepted.group_compute_us[j]) / (x - x_new);
      w.lr = (x - x_new) / x_new;
    }
    accepted = e;
  }
  run.set_best(cfg, accepted);  // `accepted` is always the evaluation of `cfg`: reused
  return cfg;
}

}  // namespace lagom::search::internal
