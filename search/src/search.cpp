// The search methods (see search.hpp and docs/search.md).
#include "lagom/search/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "lagom/common/error.hpp"

namespace lagom::search {
namespace {

using Configs = std::vector<std::optional<nccl::CommConfig>>;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A grid point of one class: subspace and (channels, threads, chunk) indices.
struct Point {
  int sub = 0;
  std::array<int, 3> idx{0, 0, 0};
  auto operator<=>(const Point&) const = default;
};

int axis_size(const Subspace& s, int d) {
  switch (d) {
    case 0:
      return static_cast<int>(s.channels.size());
    case 1:
      return static_cast<int>(s.threads.size());
    default:
      return static_cast<int>(s.chunks.size());
  }
}

nccl::CommConfig config_of(const CollClass& c, const Point& p) {
  return c.subspaces[static_cast<std::size_t>(p.sub)].at(static_cast<std::size_t>(p.idx[0]),
                                                         static_cast<std::size_t>(p.idx[1]),
                                                         static_cast<std::size_t>(p.idx[2]));
}

template <typename T>
int nearest(const std::vector<T>& values, T want) {
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
int find_subspace(const CollClass& c, nccl::Algorithm a, nccl::Protocol p) {
  for (std::size_t s = 0; s < c.subspaces.size(); ++s) {
    if (c.subspaces[s].algo == a && c.subspaces[s].proto == p) {
      return static_cast<int>(s);
    }
  }
  return -1;
}

// The grid point nearest to NCCL's own resources in subspace `sub`.
Point nccl_point(const CollClass& c, int sub) {
  const Subspace& s = c.subspaces[static_cast<std::size_t>(sub)];
  return Point{sub,
               {nearest(s.channels, s.nccl.nchannels), nearest(s.threads, s.nccl.nthreads),
                nearest(s.chunks, s.nccl.chunk_bytes)}};
}

// The subspace NCCL picks for the class (its first when NCCL's choice is outside the space).
int nccl_subspace(const CollClass& c) {
  const int s = find_subspace(c, c.nccl.algo, c.nccl.proto);
  return s >= 0 ? s : 0;
}

class Run {
 public:
  Run(Evaluator& eval, const SearchOptions& o) : eval_(eval), o_(o), classes_(eval.classes()) {}

  SearchResult go() {
    const auto t0 = std::chrono::steady_clock::now();
    const Configs nccl(classes_.size());
    nccl_eval_ = evaluate(nccl);
    best_configs_ = nccl;
    best_ = nccl_eval_;
    Configs best;
    switch (o_.method) {
      case Method::kNccl:
        best = nccl;
        break;
      case Method::kAutoCcl:
        best = autoccl();
        break;
      case Method::kLagom:
        best = lagom();
        break;
      case Method::kExhaustive:
        best = exhaustive();
        break;
      case Method::kRandom:
        best = random();
        break;
    }
    // The plan's own evaluation: reused when it was the last or the best one simulated; otherwise
    // one more, which the walks keep inside the budget (spent() reserves it).
    Evaluation final_eval = best == last_configs_   ? last_
                            : best == best_configs_ ? best_
                                                    : evaluate(best);
    // Lagom optimises the step, so it can always keep NCCL's own choice: a walk that ends slower
    // than NCCL (a step that helped one collective's group and hurt the step elsewhere) gives
    // NCCL's plan back. AutoCCL optimises each collective's own time and may lose to NCCL, as the
    // paper reports; it keeps its answer.
    if (o_.method == Method::kLagom && final_eval.step_time > nccl_eval_.step_time) {
      best = nccl;
      final_eval = nccl_eval_;
    }
    SearchResult r;
    r.method = o_.method;
    r.step_time = final_eval.step_time;
    r.nccl_step_time = nccl_eval_.step_time;
    r.evaluations = evaluations_;
    r.search_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t j = 0; j < classes_.size(); ++j) {
      const CollClass& c = classes_[j];
      ClassChoice ch;
      ch.config = best[j] ? eval_.applied(j, *best[j]) : c.nccl;
      ch.time_us = final_eval.comm_us[j] / c.calls;
      ch.nccl_time_us = nccl_eval_.comm_us[j] / c.calls;
      r.choices.push_back(ch);
      if (o_.method == Method::kNccl) {
        continue;
      }
      PlanRule rule;
      rule.coll = c.coll;
      rule.min_bytes = rule.max_bytes = c.bytes;
      rule.nnodes = c.nnodes;
      rule.nranks = c.nranks;
      rule.algo = ch.config.algo;
      rule.proto = ch.config.proto;
      rule.nchannels = ch.config.nchannels;
      if (eval_.space().resources == Resources::kFull) {
        rule.nthreads = ch.config.nthreads;
        rule.chunk_bytes = ch.config.chunk_bytes;
      }
      rule.calls = c.calls;
      rule.time_us = ch.time_us;
      rule.nccl = c.nccl;
      rule.nccl_time_us = ch.nccl_time_us;
      r.plan.rules.push_back(rule);
    }
    r.plan.context.method = std::string(to_string(o_.method));
    r.plan.context.step_time_us = r.step_time.us();
    r.plan.context.nccl_step_time_us = r.nccl_step_time.us();
    r.plan.context.evaluations = r.evaluations;
    return r;
  }

 private:
  Evaluation evaluate(const Configs& configs) {
    last_ = eval_.evaluate(configs);
    last_configs_ = configs;
    ++evaluations_;
    return last_;
  }
  long budget(long fallback) const { return o_.budget > 0 ? o_.budget : fallback; }
  // Walks (autoccl, lagom): whether the next evaluation would leave none for the final check of
  // the plan they end on. Oracles (exhaustive, random) keep their best evaluation and need none.
  bool spent(long fallback) const { return evaluations_ + 1 >= budget(fallback); }
  bool oracle_spent(long fallback) const { return evaluations_ >= budget(fallback); }

  // --- AutoCCL -------------------------------------------------------------------------------
  //
  // Per class, coordinate descent over the resource axes inside each subspace in turn (NCCL's
  // first), from NCCL's resources: along one axis and direction until a move stops helping,
  // then the other direction, then the next axis; a subspace is done after 2 x axes moves in a
  // row without gain, or after 5 probes worse than 3x the class's best (AutoCCL's pruning).
  // After a gain of g the next move is max(1, round(0.8 g n)) points on an axis of n
  // (AutoCCL's lr). Every round moves every unfinished class once and simulates once, so each
  // class is measured under the others' current candidates, as online tuning is.
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

  Configs autoccl() {
    const std::size_t n = classes_.size();
    std::vector<Descent> ds(n);
    for (std::size_t j = 0; j < n; ++j) {
      const CollClass& c = classes_[j];
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
          cfg[j] = config_of(classes_[j], *ds[j].pending);
        } else if (ds[j].best_t < kInf) {
          cfg[j] = config_of(classes_[j], ds[j].best);
        }
      }
      return cfg;
    };
    while (!spent(2000)) {
      bool any = false;
      for (std::size_t j = 0; j < n; ++j) {
        ds[j].pending = propose(classes_[j], ds[j]);
        any = any || ds[j].pending.has_value();
      }
      if (!any) {
        break;
      }
      const Evaluation e = evaluate(current());
      for (std::size_t j = 0; j < n; ++j) {
        if (ds[j].pending) {
          report(classes_[j], ds[j], *ds[j].pending, e.comm_us[j] / classes_[j].calls);
        }
      }
    }
    for (Descent& d : ds) {
      d.pending.reset();
    }
    return current();
  }

  // --- Lagom ---------------------------------------------------------------------------------
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
  struct Walk {
    int sub = 0;
    std::array<int, 3> idx{0, 0, 0};
    bool placed = false;
    bool done = false;
    double h = 0.01;
    double lr = 0;
  };

  Configs lagom() {
    const std::size_t n = classes_.size();
    std::vector<Walk> ws(n);
    Configs cfg(n);  // NCCL's until a class is placed
    for (std::size_t j = 0; j < n; ++j) {
      ws[j].sub = nccl_subspace(classes_[j]);
    }
    if (o_.lagom_subspace == LagomSubspace::kBest) {
      // Each class's fastest subspace at NCCL's resources: one round per subspace index.
      std::size_t rounds = 0;
      for (const CollClass& c : classes_) {
        rounds = std::max(rounds, c.subspaces.size());
      }
      std::vector<double> best(n, kInf);
      for (std::size_t r = 0; r < rounds && rounds > 1 && !spent(1000); ++r) {
        Configs probe(n);
        for (std::size_t j = 0; j < n; ++j) {
          if (r < classes_[j].subspaces.size()) {
            probe[j] = config_of(classes_[j], nccl_point(classes_[j], static_cast<int>(r)));
          }
        }
        const Evaluation e = evaluate(probe);
        for (std::size_t j = 0; j < n; ++j) {
          if (r < classes_[j].subspaces.size() && e.comm_us[j] < best[j]) {
            best[j] = e.comm_us[j];
            ws[j].sub = static_cast<int>(r);
          }
        }
      }
    }
    Evaluation accepted = nccl_eval_;  // measurements under the accepted configurations
    while (!spent(1000)) {
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
      const CollClass& c = classes_[j];
      const Subspace& s = c.subspaces[static_cast<std::size_t>(w.sub)];
      std::array<int, 3> next = w.idx;
      if (w.placed) {
        bool moved = false;
        for (int a = 0; a < 3; ++a) {
          const int size = axis_size(s, a);
          const double points = o_.lagom_step == LagomStep::kAxis ? size : 1.0;
          const int step =
              std::max(1, static_cast<int>(std::lround(w.lr * o_.lagom_lr_scale * points)));
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
      const Evaluation e = evaluate(cfg);
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
      if (x_new >= x * (1 - o_.lagom_min_gain) ||
          (o_.lagom_step_guard && e.step_time > accepted.step_time)) {
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
    best_configs_ = cfg;  // `accepted` is always the evaluation of `cfg`: go() reuses it
    best_ = accepted;
    return cfg;
  }

  // --- Oracles -------------------------------------------------------------------------------

  std::vector<std::vector<Point>> all_points() const {
    std::vector<std::vector<Point>> pts(classes_.size());
    for (std::size_t j = 0; j < classes_.size(); ++j) {
      const CollClass& c = classes_[j];
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

  // Oracles: simulates `cfg` and keeps it when its step beats the best so far (NCCL's at first).
  void keep_best(const Configs& cfg) {
    const Evaluation e = evaluate(cfg);
    if (e.step_time < best_.step_time) {
      best_configs_ = cfg;
      best_ = e;
    }
  }

  Configs exhaustive() {
    const auto pts = all_points();
    const long limit = budget(100000);
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
    while (true) {
      Configs cfg(classes_.size());
      for (std::size_t j = 0; j < pts.size(); ++j) {
        cfg[j] = config_of(classes_[j], pts[j][digit[j]]);
      }
      keep_best(cfg);
      std::size_t j = 0;
      while (j < pts.size() && ++digit[j] == pts[j].size()) {
        digit[j++] = 0;
      }
      if (j == pts.size()) {
        break;
      }
    }
    return best_configs_;
  }

  Configs random() {
    const auto pts = all_points();
    std::mt19937_64 rng(o_.seed);
    while (!oracle_spent(200)) {
      Configs cfg(classes_.size());
      for (std::size_t j = 0; j < pts.size(); ++j) {
        cfg[j] = config_of(classes_[j], pts[j][rng() % pts[j].size()]);
      }
      keep_best(cfg);
    }
    return best_configs_;
  }

  Evaluator& eval_;
  const SearchOptions& o_;
  const std::vector<CollClass>& classes_;
  Evaluation nccl_eval_;
  Evaluation last_;
  Configs last_configs_;
  Evaluation best_;  // the best evaluation so far (oracles) or the walk's last accepted (lagom)
  Configs best_configs_;  // and its configurations; NCCL's before any
  long evaluations_ = 0;
};

}  // namespace

std::string_view to_string(Method m) {
  switch (m) {
    case Method::kNccl:
      return "nccl";
    case Method::kAutoCcl:
      return "autoccl";
    case Method::kLagom:
      return "lagom";
    case Method::kExhaustive:
      return "exhaustive";
    case Method::kRandom:
      return "random";
  }
  return "?";
}

std::optional<Method> parse_method(std::string_view text) {
  std::string s(text);
  for (char& ch : s) {
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  for (Method m :
       {Method::kNccl, Method::kAutoCcl, Method::kLagom, Method::kExhaustive, Method::kRandom}) {
    if (s == to_string(m)) {
      return m;
    }
  }
  return std::nullopt;
}

SearchResult run_search(Evaluator& eval, const SearchOptions& options) {
  return Run(eval, options).go();
}

}  // namespace lagom::search
