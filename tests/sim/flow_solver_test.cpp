// The max-min flow solver: hand-worked systems (each written out with its answer, in the manner
// of SimGrid's maxmin_test.cpp), the max-min certificate and conservation on random systems, and
// incremental solving against solving from scratch.
#include "lagom/sim/flow_solver.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "lagom/common/error.hpp"

namespace lagom::sim {
namespace {

using Use = FlowSolver::Use;
constexpr double kBig = 1e30;  // "unbounded"

std::vector<FlowSolver::FlowId> solve(FlowSolver& s) {
  std::vector<FlowSolver::FlowId> changed;
  s.solve(changed);
  return changed;
}

TEST(FlowSolver, TwoFlowsSplitOneResource) {
  // C = 10, two flows of demand 1: x1 + x2 <= 10, max-min: x1 = x2 = 5.
  FlowSolver s;
  const auto r = s.add_resource(10);
  const Use u[] = {{r, 1}};
  const auto a = s.add_flow(u, kBig);
  const auto b = s.add_flow(u, kBig);
  EXPECT_EQ(solve(s), (std::vector<FlowSolver::FlowId>{a, b}));
  EXPECT_DOUBLE_EQ(s.rate(a), 5);
  EXPECT_DOUBLE_EQ(s.rate(b), 5);
  EXPECT_DOUBLE_EQ(s.usage(r), 10);
}

TEST(FlowSolver, ABoundedFlowLeavesTheRestToOthers) {
  // C = 10; a <= 1: a = 1, b takes the remaining 9.
  FlowSolver s;
  const auto r = s.add_resource(10);
  const Use u[] = {{r, 1}};
  const auto a = s.add_flow(u, 1);
  const auto b = s.add_flow(u, kBig);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(a), 1);
  EXPECT_DOUBLE_EQ(s.rate(b), 9);
}

TEST(FlowSolver, WeightsSplitInProportion) {
  // C = 9, weights 1 and 2: x = (L, 2L), 3L = 9: (3, 6).
  FlowSolver s;
  const auto r = s.add_resource(9);
  const Use u[] = {{r, 1}};
  const auto a = s.add_flow(u, kBig, 1);
  const auto b = s.add_flow(u, kBig, 2);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(a), 3);
  EXPECT_DOUBLE_EQ(s.rate(b), 6);
}

TEST(FlowSolver, EqualRatesWhateverTheDemands) {
  // Demands 1 and 2 on C = 12 with rates in the flows' own units (progress): L + 2L = 12, both
  // at L = 4, using 4 and 8. This is the contention model's rule: at a full resource every flow
  // gets the same fraction of what it asks for.
  FlowSolver s;
  const auto r = s.add_resource(12);
  const Use ua[] = {{r, 1}};
  const Use ub[] = {{r, 2}};
  const auto a = s.add_flow(ua, 1e9);
  const auto b = s.add_flow(ub, 1e9);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(a), 4);
  EXPECT_DOUBLE_EQ(s.rate(b), 4);
  EXPECT_DOUBLE_EQ(s.usage(r), 12);
}

TEST(FlowSolver, ABottleneckElsewhereFreesCapacity) {
  // r1 = 10 carries A and B; r2 = 4 carries B and C. r2 fills first at level 2 (B = C = 2);
  // A then takes what B leaves on r1: 10 - 2 = 8.
  FlowSolver s;
  const auto r1 = s.add_resource(10);
  const auto r2 = s.add_resource(4);
  const Use ua[] = {{r1, 1}};
  const Use ub[] = {{r1, 1}, {r2, 1}};
  const Use uc[] = {{r2, 1}};
  const auto a = s.add_flow(ua, kBig);
  const auto b = s.add_flow(ub, kBig);
  const auto c = s.add_flow(uc, kBig);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(a), 8);
  EXPECT_DOUBLE_EQ(s.rate(b), 2);
  EXPECT_DOUBLE_EQ(s.rate(c), 2);
}

TEST(FlowSolver, MaxMinIsNotMonotone) {
  // The physics, not a bug. X crosses r1 (100) and r3 (10); E crosses r3 and r4 (4).
  // Without D: r4 fills first at level 4 (E = 4), then X takes 10 - 4 = 6 of r3.
  // D joins, crossing r1 (with X) and r4 (with E): r4 now fills at level 2 (E = D = 2), and X
  // takes 10 - 2 = 8 of r3. A competitor of X sped X up, by slowing X's other competitor.
  FlowSolver s;
  const auto r1 = s.add_resource(100);
  const auto r3 = s.add_resource(10);
  const auto r4 = s.add_resource(4);
  const Use ux[] = {{r1, 1}, {r3, 1}};
  const Use ue[] = {{r3, 1}, {r4, 1}};
  const Use ud[] = {{r1, 1}, {r4, 1}};
  const auto x = s.add_flow(ux, kBig);
  const auto e = s.add_flow(ue, kBig);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(x), 6);
  EXPECT_DOUBLE_EQ(s.rate(e), 4);
  const auto d = s.add_flow(ud, kBig);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(x), 8);
  EXPECT_DOUBLE_EQ(s.rate(e), 2);
  EXPECT_DOUBLE_EQ(s.rate(d), 2);
}

TEST(FlowSolver, FlowsOnRoomyResourcesRunAtTheirBounds) {
  // Demand at bounds 3 + 4 <= 10: nothing binds, every flow gets its bound, and a change to one
  // flow re-solves only that flow (nothing connects it to the other through a full resource).
  FlowSolver s;
  const auto r = s.add_resource(10);
  const Use u[] = {{r, 1}};
  const auto a = s.add_flow(u, 3);
  const auto b = s.add_flow(u, 4);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(a), 3);
  EXPECT_DOUBLE_EQ(s.rate(b), 4);
  const std::uint64_t before = s.flows_solved();
  s.set_bound(a, 5);
  EXPECT_EQ(solve(s), (std::vector<FlowSolver::FlowId>{a}));
  EXPECT_EQ(s.flows_solved() - before, 1u);
  EXPECT_DOUBLE_EQ(s.rate(a), 5);
  // Now 5 + 7 > 10: both are re-solved and share r equally, 5 each.
  s.set_bound(b, 7);
  solve(s);
  EXPECT_DOUBLE_EQ(s.rate(a), 5);
  EXPECT_DOUBLE_EQ(s.rate(b), 5);
  // b leaves: a gets its bound back.
  s.remove_flow(b);
  EXPECT_EQ(solve(s), (std::vector<FlowSolver::FlowId>{}));  // a stays at 5 = its bound
  EXPECT_DOUBLE_EQ(s.rate(a), 5);
  EXPECT_EQ(s.live_flows(), 1u);
}

TEST(FlowSolver, RejectsImpossibleNumbers) {
  FlowSolver s;
  EXPECT_THROW(s.add_resource(0), Error);
  EXPECT_THROW(s.add_resource(-1), Error);
  EXPECT_THROW(s.add_resource(std::nan("")), Error);
  const auto r = s.add_resource(1);
  const Use bad[] = {{r, -1}};
  EXPECT_THROW(s.add_flow(bad, 1), Error);
  const Use missing[] = {{r + 1, 1}};
  EXPECT_THROW(s.add_flow(missing, 1), Error);
  const Use ok[] = {{r, 1}};
  EXPECT_THROW(s.add_flow(ok, -1), Error);
  EXPECT_THROW(s.add_flow(ok, 1, 0), Error);
}

// --- Random systems ------------------------------------------------------------------------

struct RandomFlow {
  std::vector<Use> uses;
  double bound;
  double weight;
};

RandomFlow random_flow(std::mt19937& rng, std::size_t resources) {
  std::uniform_int_distribution<std::size_t> pick(0, resources - 1);
  std::uniform_int_distribution<int> count(1, 3);
  std::uniform_real_distribution<double> demand(0.1, 3.0);
  std::uniform_real_distribution<double> bound(0.5, 20.0);
  std::uniform_int_distribution<int> weight(1, 3);
  RandomFlow f;
  const int n = count(rng);
  for (int i = 0; i < n; ++i) {
    f.uses.push_back(Use{static_cast<FlowSolver::ResourceId>(pick(rng)), demand(rng)});
  }
  f.bound = bound(rng);
  f.weight = weight(rng);
  return f;
}

// Every resource within capacity, every flow within its bound, and the max-min certificate:
// a flow below its bound crosses a full resource on which no flow has a larger rate / weight.
void expect_max_min(const FlowSolver& s, const std::vector<FlowSolver::FlowId>& flows,
                    const std::vector<RandomFlow>& spec, const std::string& what) {
  for (FlowSolver::ResourceId r = 0; r < s.resource_count(); ++r) {
    EXPECT_LE(s.usage(r), s.capacity(r) * (1 + 1e-9)) << what << " resource " << r;
  }
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const FlowSolver::FlowId f = flows[i];
    EXPECT_LE(s.rate(f), s.bound(f) * (1 + 1e-12)) << what;
    EXPECT_GE(s.rate(f), 0) << what;
    if (s.rate(f) >= s.bound(f) * (1 - 1e-9)) {
      continue;
    }
    bool bottleneck = false;
    for (const Use& u : spec[i].uses) {
      if (s.usage(u.resource) < s.capacity(u.resource) * (1 - 1e-9)) {
        continue;
      }
      bool largest = true;
      for (const Use& other : s.users(u.resource)) {
        const std::size_t j = static_cast<std::size_t>(
            std::find(flows.begin(), flows.end(), other.resource) - flows.begin());
        largest = largest && s.rate(other.resource) / spec[j].weight <=
                                 s.rate(f) / spec[i].weight * (1 + 1e-9);
      }
      bottleneck = bottleneck || largest;
    }
    EXPECT_TRUE(bottleneck) << what << ": flow " << f << " at " << s.rate(f) << " below its bound "
                            << s.bound(f) << " has no bottleneck";
  }
}

TEST(FlowSolver, RandomSystemsAreMaxMinFairAndIncrementalEqualsFromScratch) {
  std::mt19937 rng(20261201);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t nres = 1 + trial % 6;
    std::vector<double> caps;
    FlowSolver inc;
    std::uniform_real_distribution<double> cap(1.0, 30.0);
    for (std::size_t r = 0; r < nres; ++r) {
      caps.push_back(cap(rng));
      inc.add_resource(caps.back());
    }
    std::vector<FlowSolver::FlowId> ids;
    std::vector<RandomFlow> spec;
    std::uniform_int_distribution<int> op(0, 11);
    for (int step = 0; step < 25; ++step) {
      const int o = op(rng);
      if (o < 5 || ids.empty()) {
        spec.push_back(random_flow(rng, nres));
        ids.push_back(inc.add_flow(spec.back().uses, spec.back().bound, spec.back().weight));
      } else if (o < 8) {
        const std::size_t k = std::uniform_int_distribution<std::size_t>(0, ids.size() - 1)(rng);
        inc.remove_flow(ids[k]);
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(k));
        spec.erase(spec.begin() + static_cast<std::ptrdiff_t>(k));
      } else if (o == 8) {
        const std::size_t k = std::uniform_int_distribution<std::size_t>(0, ids.size() - 1)(rng);
        spec[k].bound = std::uniform_real_distribution<double>(0.5, 20.0)(rng);
        inc.set_bound(ids[k], spec[k].bound);
      } else {
        // New demands on the same resources (updated in place), or other resources altogether;
        // renew also changes the weight.
        const std::size_t k = std::uniform_int_distribution<std::size_t>(0, ids.size() - 1)(rng);
        RandomFlow next = random_flow(rng, nres);
        if (o == 9) {
          next.uses.resize(spec[k].uses.size());
          for (std::size_t u = 0; u < spec[k].uses.size(); ++u) {
            next.uses[u] = Use{spec[k].uses[u].resource,
                               std::uniform_real_distribution<double>(0.1, 3.0)(rng)};
          }
        }
        next.weight = o == 11 ? next.weight : spec[k].weight;
        spec[k] = next;
        if (o == 11) {
          inc.renew(ids[k], next.uses, next.bound, next.weight);
        } else {
          inc.update_flow(ids[k], next.uses, next.bound);
        }
      }
      solve(inc);
      const std::string what = "trial " + std::to_string(trial) + " step " + std::to_string(step);
      expect_max_min(inc, ids, spec, what);
      // The same flows solved from scratch.
      FlowSolver fresh;
      for (double c : caps) {
        fresh.add_resource(c);
      }
      std::vector<FlowSolver::FlowId> fresh_ids;
      for (const RandomFlow& f : spec) {
        fresh_ids.push_back(fresh.add_flow(f.uses, f.bound, f.weight));
      }
      solve(fresh);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        EXPECT_NEAR(inc.rate(ids[i]), fresh.rate(fresh_ids[i]), 1e-9 * (1 + fresh.rate(fresh_ids[i])))
            << what << " flow " << i;
      }
    }
  }
}

TEST(FlowSolver, OnOneResourceACompetitorNeverHelpsAndALeaverNeverHurts) {
  // With a single resource max-min is monotone: adding a flow never raises another's rate, and
  // removing one never lowers another's.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    FlowSolver s;
    s.add_resource(std::uniform_real_distribution<double>(1, 30)(rng));
    std::vector<FlowSolver::FlowId> ids;
    for (int i = 0; i < 6; ++i) {
      const RandomFlow f = random_flow(rng, 1);
      ids.push_back(s.add_flow(f.uses, f.bound, f.weight));
    }
    solve(s);
    std::vector<double> before;
    for (auto f : ids) {
      before.push_back(s.rate(f));
    }
    const RandomFlow extra = random_flow(rng, 1);
    const auto x = s.add_flow(extra.uses, extra.bound, extra.weight);
    solve(s);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      EXPECT_LE(s.rate(ids[i]), before[i] * (1 + 1e-12)) << trial;
    }
    s.remove_flow(x);
    solve(s);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      EXPECT_NEAR(s.rate(ids[i]), before[i], 1e-9 * (1 + before[i])) << trial;
    }
  }
}

}  // namespace
}  // namespace lagom::sim
