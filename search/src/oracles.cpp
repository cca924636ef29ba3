// The oracles: exhaustive enumeration and seeded random sampling of the whole space, each keeping
// the best step it simulated, so that the other methods' optimality gap is a number.
#include <fmt/format.h>

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

Configs exhaustive(SearchRun& run) {
  const auto pts = all_points(run.classes());
  const std::int64_t limit = run.budget(100000);
  double size = 1;
  for (const auto& p : pts) {
    size *= static_cast<double>(p.size());
  }
  if (size + 1 > static_cast<double>(limit)) {
    throw Error(fmt::format(
        "exhaustive search: the space has {:.3g} combinations ({} collective classes), which "
        "with NCCL's own choice is more than the budget of {} evaluations; use --grid coarse, "
        "--space nccl, a smaller step, or --budget",
        size, pts.size(), limit));
  }
  std::vector<std::size_t> digit(pts.size(), 0);
  std::vector<Configs> batch;
  bool more = true;
  while (more) {
    Configs cfg(run.classes().size());
    for (std::size_t j = 0; j < pts.size(); ++j) {
      cfg[j] = config_of(run.classes()[j], pts[j][digit[j]]);
    }
    batch.push_back(std::move(cfg));
    std::size_t j = 0;
    while (j < pts.size() && ++digit[j] == pts[j].size()) {
      digit[j++] = 0;
    }
    more = j < pts.size();
    if (!more || static_cast<std::int64_t>(batch.size()) >= batch_size(run)) {
      run.keep_best(batch);
      batch.clear();
    }
  }
  return run.best_configs();
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
