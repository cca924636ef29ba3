// The Lagom paper's search (arXiv 2602.20656, Algorithms 1 and 2) as a search method
// (docs/search.md §4 has the readings of the paper's text and what each measured).
//
// With LagomSubspace::kAll the whole walk runs once per subspace index and the shortest step
// wins (a subspace that is only fast with resources far from NCCL's, e.g. Tree with 16 KiB
// chunks, is found at the cost of one walk per subspace).
//
// Algorithm 1 picks the unfinished class with the smallest H (or, in the round-robin ablation,
// the next unfinished class in a fixed order); Algorithm 2 moves it one step. The first step
// puts it at minimum resources (every grid index 0) in its subspace: NCCL's own (algorithm,
// protocol) or, by default, the one where the class is fastest at NCCL's resources. Later steps
// grow its resources:
//  * per axis (LagomWalk::kPerAxis, the default): each axis's own step (NC, NT, C) is tried
//    alone, one evaluation each, and the try with the shortest step among those that shorten
//    the class's communication is taken; only when none does, all axes at once (a plateau that
//    only a joint move leaves);
//  * lock-step (LagomWalk::kLockstep): every axis by the same step, as the pseudocode writes it.
// A step is max(1, round(lr x lr_scale)) grid points (LagomStep::kPoints) or that fraction of the
// axis's points (kAxis), lr the relative gain in the class's communication time of the last
// accepted step on that axis (per axis) or of the class (lock-step). A step that does not shorten
// the class's communication by more than min_gain is undone and ends the class. A step that
// shortens it but (step guard) lengthens the step is undone and parks the class: it waits until
// another class moves, then tries again (with parking off it ends). A step after which the
// communication of the class's overlap groups is hidden (X < Y) is kept and ends it (condition
// 1; SearchOptions::lagom_hidden_stop turns it off for the ablation); a kept step
// sets H = (Y' - Y) / (x - x'). A class whose walk would end (no move gains, or every resource
// at its maximum) first tries each subspace it has not walked in, once, at its channels, that
// subspace's NCCL threads and its smallest chunk; the fastest that gains as a move must is a
// kept step, and the walk goes on there (SearchOptions::lagom_switch; our addition: the paper
// does not say how its walk reaches a subspace that wins only with more resources than
// NCCL's). Every class is placed at minimum resources (in step order) before any grows: the
// placement leaves H at its initial 0.01, and ties on H would otherwise send the first class
// on growing while the others still run NCCL's choice.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "lagom/common/error.hpp"
#include "run.hpp"

namespace lagom::search::internal {
namespace {

struct Walk {
  int sub = 0;
  std::array<int, 3> idx{0, 0, 0};
  bool placed = false;
  bool done = false;
  // Every move shortened its communication but lengthened the step: waits until another class
  // moves (the step it lengthened may have changed), then tries again.
  bool parked = false;
  double h = 0.01;
  std::array<double, 3> lr{0, 0, 0};  // per axis (lock-step uses lr[0] for all)
  std::vector<bool> entered;          // the subspaces this class has walked in
};

int step_points(const SearchOptions& o, double lr, int size) {
  const double points = o.lagom_step == LagomStep::kAxis ? size : 1.0;
  return std::max(1, static_cast<int>(std::lround(lr * o.lagom_lr_scale * points)));
}

// The most subspaces any class has: the rounds that visit every class's every subspace.
std::size_t subspace_rounds(const SearchRun& run) {
  std::size_t rounds = 0;
  for (const CollClass& c : run.classes()) {
    rounds = std::max(rounds, c.subspaces.size());
  }
  return rounds;
}

// Each class's fastest subspace at NCCL's resources: one evaluation per subspace index (round r
// runs every class in its r-th subspace), the first fastest wins. The rounds that hold some
// class's NCCL subspace run first; a later round is skipped without a simulation when every class
// in it is slower even alone (Evaluator::alone_comm_us, a lower bound) than its fastest so far,
// since it could not then be any class's fastest: the same choice, fewer simulations.
void pick_subspaces(SearchRun& run, std::vector<Walk>& ws) {
  const std::size_t n = ws.size();
  const std::vector<CollClass>& classes = run.classes();
  const std::size_t all = subspace_rounds(run);
  if (all <= 1) {
    return;
  }
  const std::size_t rounds = std::min<std::size_t>(all, static_cast<std::size_t>(run.room(1000)));
  const auto probe_of = [&](std::size_t r) {
    Configs probe(n);
    for (std::size_t j = 0; j < n; ++j) {
      if (r < classes[j].subspaces.size()) {
        probe[j] = config_of(classes[j], nccl_point(classes[j], static_cast<int>(r)));
      }
    }
    return probe;
  };
  std::vector<std::optional<Evaluation>> es(rounds);
  std::vector<double> best(n, kInf);
  // Evaluates rounds `rs` (independent, so together) and lowers each class's fastest so far.
  const auto run_rounds = [&](const std::vector<std::size_t>& rs,
                              const std::vector<std::size_t>& ahead) {
    if (rs.empty()) {
      return;
    }
    std::vector<Configs> probes;
    for (std::size_t r : rs) {
      probes.push_back(probe_of(r));
    }
    std::vector<Configs> next;
    for (std::size_t r : ahead) {
      next.push_back(probe_of(r));
    }
    std::vector<Evaluation> done = run.evaluate_all(probes, next);
    for (std::size_t k = 0; k < rs.size(); ++k) {
      for (std::size_t j = 0; j < n; ++j) {
        if (rs[k] < classes[j].subspaces.size()) {
          best[j] = std::min(best[j], done[k].comm_us[j]);
        }
      }
      es[rs[k]] = std::move(done[k]);
    }
  };
  std::vector<std::size_t> first;
  std::vector<std::size_t> rest;
  for (std::size_t r = 0; r < rounds; ++r) {
    const bool native = std::any_of(classes.begin(), classes.end(), [&](const CollClass& c) {
      return r < c.subspaces.size() && nccl_subspace(c) == static_cast<int>(r);
    });
    (native ? first : rest).push_back(r);
  }
  // Class j's time alone in round r's probe, or NaN when the models refuse it (the probe's
  // evaluation then reports the error, in candidate order, as without the bound). Computed once:
  // the ranking and the skip both read it, and a class's calls are timed one by one.
  std::vector<std::optional<double>> alone_in(rounds * n);
  const auto alone = [&](std::size_t r, std::size_t j) {
    std::optional<double>& cell = alone_in[r * n + j];
    if (!cell) {
      cell = kInf;  // no probe for the class in this round
      if (r < classes[j].subspaces.size()) {
        try {
          cell = run.alone_comm_us(
              j, config_of(classes[j], nccl_point(classes[j], static_cast<int>(r))));
        } catch (const Error&) {
          cell = std::numeric_limits<double>::quiet_NaN();
        }
      }
    }
    return *cell;
  };
  // Threads the first rounds leave idle simulate later ones ahead, the likeliest to be needed
  // first: those whose some class comes closest, alone, to its time under NCCL's choice.
  std::vector<std::size_t> ahead;
  if (run.jobs() > 1) {
    std::vector<std::pair<double, std::size_t>> promise;
    for (std::size_t r : rest) {
      double closest = kInf;
      for (std::size_t j = 0; j < n; ++j) {
        const double ratio = alone(r, j) / run.nccl_evaluation().comm_us[j];
        closest = ratio < closest ? ratio : closest;  // NaN (refused, or 0 / 0) ranks last
      }
      promise.emplace_back(closest, r);
    }
    std::sort(promise.begin(), promise.end());
    for (const auto& pr : promise) {
      ahead.push_back(pr.second);
    }
  }
  run_rounds(first, ahead);
  std::erase_if(rest, [&](std::size_t r) {
    if (!run.options().lagom_probe_bound) {
      return false;
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (r < classes[j].subspaces.size() && !(alone(r, j) > best[j])) {  // NaN: kept
        return false;
      }
    }
    return true;
  });
  run_rounds(rest, {});
  std::fill(best.begin(), best.end(), kInf);
  for (std::size_t r = 0; r < rounds; ++r) {
    for (std::size_t j = 0; es[r] && j < n; ++j) {
      if (r < classes[j].subspaces.size() && es[r]->comm_us[j] < best[j]) {
        best[j] = es[r]->comm_us[j];
        ws[j].sub = static_cast<int>(r);
      }
    }
  }
}

// The next class to move: the smallest H, or the next in round-robin order after `last`.
std::size_t next_class(const std::vector<Walk>& ws, LagomOrder order, std::size_t last) {
  const std::size_t n = ws.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!ws[i].placed) {
      return i;  // every class is placed at minimum resources before any grows
    }
  }
  if (order == LagomOrder::kRoundRobin) {
    for (std::size_t k = 1; k <= n; ++k) {
      const std::size_t i = (last + k) % n;
      if (!ws[i].done && !ws[i].parked) {
        return i;
      }
    }
    return n;
  }
  std::size_t j = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (!ws[i].done && !ws[i].parked && (j == n || ws[i].h < ws[j].h)) {
      j = i;
    }
  }
  return j;
}

// The step changed (a placement or an accepted move): what lengthened it may not any more, so
// every parked class tries again.
void unpark(std::vector<Walk>& ws) {
  for (Walk& w : ws) {
    w.parked = false;
  }
}

// Where class c lands when it leaves its walk's end `from` for subspace `sub`: the same number
// of channels (the nearest on that grid), the threads NCCL runs in that subspace, and its
// smallest chunk (the walk then grows them, as from a placement). Carrying the threads over
// instead misses Tree on Phi-2 TP with 8 channels: Ring's walk ends on 128 threads, where a
// Tree of 16 KiB chunks is slower than that Ring (docs/search.md §4).
Point switch_point(const CollClass& c, const Point& from, int sub) {
  const Subspace& a = c.subspaces[static_cast<std::size_t>(from.sub)];
  const Subspace& b = c.subspaces[static_cast<std::size_t>(sub)];
  return Point{sub,
               {nearest(b.channels, a.channels[static_cast<std::size_t>(from.idx[0])]),
                nearest(b.threads, b.nccl.nthreads), 0}};
}

// A move of one class: its grid indices and the axis moved (-1: every axis at once).
using Move = std::pair<std::array<int, 3>, int>;

// Every axis at once, each by its own step (lock-step: by the class's one step); `moved` counts
// the axes that change.
Move joint_move(const Walk& w, const Subspace& s, const SearchOptions& o, int& moved) {
  const bool per_axis = o.lagom_walk == LagomWalk::kPerAxis;
  std::array<int, 3> next = w.idx;
  moved = 0;
  for (int a = 0; a < 3; ++a) {
    const std::size_t ua = static_cast<std::size_t>(a);
    next[ua] = std::min(axis_size(s, a) - 1,
                        w.idx[ua] + step_points(o, w.lr[per_axis ? ua : 0], axis_size(s, a)));
    moved += next[ua] != w.idx[ua] ? 1 : 0;
  }
  return {next, -1};
}

// The moves a class tries first: each axis's own step alone (per-axis walk) or the joint move
// (lock-step).
std::vector<Move> first_moves(const Walk& w, const Subspace& s, const SearchOptions& o) {
  if (o.lagom_walk != LagomWalk::kPerAxis) {
    int moved = 0;
    return {joint_move(w, s, o, moved)};
  }
  std::vector<Move> moves;
  for (int a = 0; a < 3; ++a) {
    const std::size_t ua = static_cast<std::size_t>(a);
    std::array<int, 3> next = w.idx;
    next[ua] = std::min(axis_size(s, a) - 1, w.idx[ua] + step_points(o, w.lr[ua], axis_size(s, a)));
    moves.emplace_back(next, a);
  }
  return moves;
}

struct Try {
  std::array<int, 3> idx;
  int axis = -1;  // the axis moved (-1: all, lock-step)
  Evaluation e;
};

// Algorithms 1 and 2 from every class's subspace in `ws`: the configurations the walk ends on
// and their evaluation.
std::pair<Configs, Evaluation> walk(SearchRun& run, std::vector<Walk> ws) {
  const SearchOptions& o = run.options();
  const std::size_t n = ws.size();
  Configs cfg(n);                               // NCCL's until a class is placed
  Evaluation accepted = run.nccl_evaluation();  // measurements under the accepted configurations
  std::size_t last = n - 1;
  // Placement: every class in turn at minimum resources, each evaluation with the classes before
  // it placed. What each places does not depend on the evaluations before it, so they are
  // simulated together.
  for (std::size_t j = 0; j < n; ++j) {
    ws[j].entered.assign(run.classes()[j].subspaces.size(), false);
    ws[j].entered[static_cast<std::size_t>(ws[j].sub)] = true;
  }
  std::vector<Configs> placements;
  for (std::size_t j = 0; j < n && static_cast<std::int64_t>(j) < run.room(1000); ++j) {
    cfg[j] = config_of(run.classes()[j], Point{ws[j].sub, ws[j].idx});
    placements.push_back(cfg);
  }
  for (std::size_t j = placements.size(); j < n; ++j) {
    cfg[j].reset();  // not placed: the budget ran out
  }
  const std::vector<Evaluation> placed = run.evaluate_all(placements);
  for (std::size_t j = 0; j < placed.size(); ++j) {
    accepted = placed[j];
    ws[j].placed = true;
    ws[j].done = o.lagom_hidden_stop &&
                 accepted.group_comm_us[j] < accepted.group_compute_us[j];  // condition 1
    last = j;
  }
  unpark(ws);
  while (!run.spent(1000)) {
    const std::size_t j = next_class(ws, o.lagom_order, last);
    if (j == n || !ws[j].placed) {
      break;  // every class moved as far as it goes, or the budget left some unplaced
    }
    last = j;
    Walk& w = ws[j];
    const CollClass& c = run.classes()[j];
    const Subspace& s = c.subspaces[static_cast<std::size_t>(w.sub)];
    const double x = accepted.comm_us[j];
    const std::optional<nccl::CommConfig> before = cfg[j];
    std::optional<Try> best;
    bool any_move = false;
    bool guarded_only = false;  // some move was faster and only the step guard refused it
    // What the walk simulates next if every move of class j in this round fails (j then parks
    // or ends, and the next class makes its first moves from the configurations before): worth
    // simulating on threads this round leaves idle, since the evaluator keeps the result.
    const auto after_failure = [&]() {
      std::vector<Configs> ahead;
      std::vector<Walk> alt = ws;
      alt[j].done = true;
      const std::size_t k = next_class(alt, o.lagom_order, j);
      if (k == n || !alt[k].placed) {
        return ahead;
      }
      const CollClass& ck = run.classes()[k];
      for (const auto& [next, axis] :
           first_moves(alt[k], ck.subspaces[static_cast<std::size_t>(alt[k].sub)], o)) {
        if (next != alt[k].idx) {
          Configs a = cfg;
          a[j] = before;
          a[k] = config_of(ck, Point{alt[k].sub, next});
          ahead.push_back(std::move(a));
        }
      }
      return ahead;
    };
    // What the walk simulates next if class j's one move is kept and j moves again, by the
    // step its last gain gives (a class often climbs several steps in a row: on GPT-3 175B
    // tp=8 pp=8 two classes climb 5 and 10 channel steps). With several moves which one wins is
    // not known, so nothing.
    const auto after_success = [&](const std::vector<Move>& moves) {
      std::vector<Configs> ahead;
      if (moves.size() != 1) {
        return ahead;
      }
      Walk moved = w;
      moved.idx = moves.front().first;
      for (const auto& [next, axis] : first_moves(moved, s, o)) {
        if (next != moved.idx) {
          Configs a = cfg;
          a[j] = config_of(c, Point{w.sub, next});
          ahead.push_back(std::move(a));
        }
      }
      return ahead;
    };
    // A step is kept when it shortens the class's communication by more than min_gain (faster)
    // and the step guard does not refuse it for lengthening the step; of two kept candidates the
    // one with the shorter step wins, then the one with the shorter communication.
    const auto faster = [&](const Evaluation& e) {
      return e.comm_us[j] < x * (1 - o.lagom_min_gain);
    };
    const auto guarded = [&](const Evaluation& e) {
      return o.lagom_step_guard && e.step_time > accepted.step_time;
    };
    const auto better = [j](const Evaluation& e, const Evaluation& than) {
      return e.step_time < than.step_time ||
             (e.step_time == than.step_time && e.comm_us[j] < than.comm_us[j]);
    };
    // Keeps class j at `p`, evaluated as `e`: it ends if its overlap groups' communication is
    // now hidden (condition 1), else its priority becomes the computation the step added per
    // unit of communication it saved; every parked class may try again.
    const auto keep = [&](const Point& p, const Evaluation& e) {
      cfg[j] = config_of(c, p);
      w.sub = p.sub;
      w.idx = p.idx;
      if (o.lagom_hidden_stop && e.group_comm_us[j] < e.group_compute_us[j]) {
        w.done = true;  // hidden: more resources would only slow the computation
      } else {
        w.h = (e.group_compute_us[j] - accepted.group_compute_us[j]) / (x - e.comm_us[j]);
      }
      accepted = e;
      run.record_step(j);
      unpark(ws);
    };
    // Simulates moving class j to each of `moves` (independent candidates, so simulated together)
    // and keeps in `best` the one that shortens the class's communication by more than min_gain
    // without lengthening the step and beats the moves tried before it on step time. `ahead`:
    // the candidates the walk simulates next if none does.
    const auto try_moves = [&](std::vector<Move> moves, std::vector<Configs> ahead) {
      std::erase_if(moves, [&](const Move& m) { return m.first == w.idx; });
      moves.resize(std::min<std::size_t>(moves.size(), static_cast<std::size_t>(run.room(1000))));
      if (moves.empty()) {
        return;
      }
      any_move = true;
      std::vector<Configs> batch;
      for (const auto& [next, axis] : moves) {
        cfg[j] = config_of(c, Point{w.sub, next});
        batch.push_back(cfg);
      }
      std::vector<Evaluation> es = run.evaluate_all(batch, ahead);
      for (std::size_t k = 0; k < moves.size(); ++k) {
        Evaluation& e = es[k];
        guarded_only = guarded_only || (faster(e) && guarded(e));
        if (faster(e) && !guarded(e) && (!best || better(e, best->e))) {
          best = Try{moves[k].first, moves[k].second, std::move(e)};
        }
      }
    };
    // The class's walk would end here. Before it does, each subspace it has not walked in is
    // tried at its channels (switch_point), one evaluation each and each once: the fastest that
    // shortens its communication by more than min_gain without lengthening the step is taken,
    // and the walk goes on there (a subspace that only wins with more resources than NCCL's, as
    // Tree does on the TP steps, is out of reach of a walk that picked its subspace at NCCL's).
    const auto try_switch = [&]() {
      if (!o.lagom_switch) {
        return false;
      }
      // A subspace whose landing point is not faster than x_j even alone (the collective model,
      // no contention) cannot be taken: it is marked tried without a simulation.
      std::vector<Point> points;
      for (std::size_t r = 0; r < c.subspaces.size(); ++r) {
        if (w.entered[r]) {
          continue;
        }
        const Point p = switch_point(c, Point{w.sub, w.idx}, static_cast<int>(r));
        if (run.alone_comm_us(j, config_of(c, p)) >= x * (1 - o.lagom_min_gain)) {
          w.entered[r] = true;
        } else {
          points.push_back(p);
        }
      }
      points.resize(std::min<std::size_t>(points.size(), static_cast<std::size_t>(run.room(1000))));
      if (points.empty()) {
        return false;
      }
      std::vector<Configs> batch;
      for (const Point& p : points) {
        cfg[j] = config_of(c, p);
        batch.push_back(cfg);
        w.entered[static_cast<std::size_t>(p.sub)] = true;
      }
      cfg[j] = before;
      std::vector<Evaluation> es = run.evaluate_all(batch);
      std::optional<std::size_t> pick;
      for (std::size_t k = 0; k < es.size(); ++k) {
        if (faster(es[k]) && !guarded(es[k]) && (!pick || better(es[k], es[*pick]))) {
          pick = k;
        }
      }
      if (!pick) {
        return false;
      }
      w.lr = {0, 0, 0};
      keep(points[*pick], es[*pick]);
      return true;
    };
    const bool speculate = run.jobs() > 1;
    // The per-axis walk's last resort when no axis alone gains: every axis at once (a plateau
    // that only a joint move leaves), when that moves more than one axis.
    int moved = 0;
    const Move joint = joint_move(w, s, o, moved);
    const bool joint_next = o.lagom_walk == LagomWalk::kPerAxis && moved > 1;
    std::vector<Move> moves = first_moves(w, s, o);
    std::erase_if(moves, [&](const Move& m) { return m.first == w.idx; });
    std::vector<Configs> ahead;
    if (speculate && joint_next) {
      ahead.push_back(cfg);
      ahead.back()[j] = config_of(c, Point{w.sub, joint.first});
    } else if (speculate) {
      ahead = after_success(moves);
      for (Configs& a : after_failure()) {
        ahead.push_back(std::move(a));
      }
    }
    try_moves(std::move(moves), std::move(ahead));
    if (!best && joint_next) {
      try_moves({joint}, speculate ? after_failure() : std::vector<Configs>{});
    }
    if (!any_move) {
      w.done = !try_switch() || w.done;  // every resource at its maximum
      continue;
    }
    if (!best) {
      cfg[j] = before;  // no move is faster, or each lengthens the step: stop where it was
      if (guarded_only && o.lagom_park) {
        w.parked = true;
      } else {
        w.done = !try_switch() || w.done;
      }
      continue;
    }
    const double gain = (x - best->e.comm_us[j]) / best->e.comm_us[j];
    if (best->axis >= 0) {
      w.lr[static_cast<std::size_t>(best->axis)] = gain;
    } else {
      w.lr = {gain, gain, gain};
    }
    keep(Point{w.sub, best->idx}, best->e);
  }
  return {cfg, accepted};
}

}  // namespace

Configs lagom(SearchRun& run) {
  const SearchOptions& o = run.options();
  const std::size_t n = run.classes().size();
  std::vector<Walk> ws(n);
  for (std::size_t j = 0; j < n; ++j) {
    ws[j].sub = nccl_subspace(run.classes()[j]);
  }
  if (o.lagom_subspace == LagomSubspace::kAll) {
    // One walk per subspace index (a class without that subspace walks in NCCL's); the walk
    // that ends on the shortest step wins.
    const std::size_t rounds = subspace_rounds(run);
    std::optional<std::pair<Configs, Evaluation>> best;
    for (std::size_t r = 0; r < rounds && !run.spent(1000); ++r) {
      std::vector<Walk> from = ws;
      for (std::size_t j = 0; j < n; ++j) {
        if (r < run.classes()[j].subspaces.size()) {
          from[j].sub = static_cast<int>(r);
        }
      }
      auto ended = walk(run, std::move(from));
      if (!best || ended.second.step_time < best->second.step_time) {
        best = std::move(ended);
      }
    }
    if (!best) {
      return Configs(n);
    }
    run.set_best(best->first, best->second);
    return best->first;
  }
  if (o.lagom_subspace != LagomSubspace::kNccl) {
    pick_subspaces(run, ws);
  }
  auto [cfg, accepted] = walk(run, std::move(ws));
  run.set_best(cfg, accepted);  // `accepted` is always the evaluation of `cfg`
  return cfg;
}

}  // namespace lagom::search::internal
