// The synthetic step generator used by the benchmarks: valid, sized as documented, and
// simulated with the expected structure.
#include "synthetic.hpp"

#include <gtest/gtest.h>

#include "lagom/sim/engine.hpp"
#include "lagom/traces/execution_graph.hpp"

namespace lagom::bench {
namespace {

TEST(Synthetic, SizesFollowTheSpec) {
  // 64 ranks, TP 8 -> 8 TP groups of 8 and 8 DP groups of 8; 4 ops per layer per rank.
  const traces::Workload w = synthetic_step({64, 10, 8, 1});
  EXPECT_EQ(w.rank_count(), 64u);
  EXPECT_EQ(w.op_count(), 64u * 10u * 4u);
  EXPECT_EQ(w.groups().size(), 16u);
  const traces::ExecutionGraph g = traces::analyze(w);
  // Per layer: one TP all-reduce per TP group and one DP reduce-scatter per DP group.
  EXPECT_EQ(g.instance_count(), 10u * (8u + 8u));
}

TEST(Synthetic, SimulatesAndEveryOpEnds) {
  const traces::Workload w = synthetic_step({16, 6, 4, 3});
  const traces::ExecutionGraph g = traces::analyze(w);
  sim::Engine e(w, g);
  const sim::SimResult r = e.run();
  ASSERT_EQ(r.ops.size(), w.op_count());
  for (const traces::OpTimes& t : r.ops) {
    EXPECT_LE(t.launch, t.start);
    EXPECT_LE(t.start, t.end);
    EXPECT_LE(t.end, r.step_time);
  }
  // Completions: one per compute op plus one per communication instance.
  EXPECT_EQ(r.events, 16u * 6u * 2u + g.instance_count());
}

TEST(Synthetic, OneRankHasNoCommunication) {
  const traces::Workload w = synthetic_step({1, 5, 8, 1});
  EXPECT_EQ(w.op_count(), 15u);
  EXPECT_EQ(traces::analyze(w).instance_count(), 0u);
}

}  // namespace
}  // namespace lagom::bench
