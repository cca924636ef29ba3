// pipeline_order: the 1F1B schedule of one stage, worked out by hand.
#include "lagom/models/pipeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace lagom::models {
namespace {

PipelineUnit F(int mb, int chunk = 0) {
  return {true, mb, chunk};
}
PipelineUnit B(int mb, int chunk = 0) {
  return {false, mb, chunk};
}

TEST(PipelineOrder, OneF1BWarmsUpByTheStagesAfterIt) {
  // pp = 4, 6 micro-batches. Stage 0 runs 3 forwards ahead, stage 3 none.
  EXPECT_EQ(pipeline_order(4, 1, 0, 6),
            (std::vector<PipelineUnit>{F(0), F(1), F(2), F(3), B(0), F(4), B(1), F(5), B(2), B(3),
                                       B(4), B(5)}));
  EXPECT_EQ(pipeline_order(4, 1, 3, 6),
            (std::vector<PipelineUnit>{F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3), F(4), B(4),
                                       F(5), B(5)}));
}

TEST(PipelineOrder, FewerMicroBatchesThanStagesRunAllForwardsFirst) {
  EXPECT_EQ(pipeline_order(8, 1, 0, 2), (std::vector<PipelineUnit>{F(0), F(1), B(0), B(1)}));
}

TEST(PipelineOrder, InterleavedAsMegatronSchedulesIt) {
  // pp = 2, vpp = 2, 4 micro-batches, stage 0: warm-up (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4
  // forwards; micro-batches go in groups of pp through chunk 0 then chunk 1; backwards run the
  // chunks in reverse.
  EXPECT_EQ(pipeline_order(2, 2, 0, 4),
            (std::vector<PipelineUnit>{F(0, 0), F(1, 0), F(0, 1), F(1, 1), F(2, 0), B(0, 1),
                                       F(3, 0), B(1, 1), F(2, 1), B(0, 0), F(3, 1), B(1, 0),
                                       B(2, 1), B(3, 1), B(2, 0), B(3, 0)}));
}

TEST(PipelineOrder, EveryPassOnceAndBackwardAfterItsForward) {
  for (int pp : {2, 4, 8}) {
    for (int vpp : {1, 2, 3}) {
      for (int stage = 0; stage < pp; ++stage) {
        const int micro = 2 * pp;
        const auto order = pipeline_order(pp, vpp, stage, micro);
        ASSERT_EQ(order.size(), static_cast<std::size_t>(2 * micro * vpp));
        std::map<std::pair<int, int>, int> seen;  // (mb, chunk) -> 1 after F, 2 after B
        int in_flight = 0;
        int most = 0;
        for (const PipelineUnit& u : order) {
          int& state = seen[{u.micro_batch, u.chunk}];
          EXPECT_EQ(state, u.forward ? 0 : 1) << pp << " " << vpp << " " << stage;
          state = u.forward ? 1 : 2;
          in_flight += u.forward ? 1 : -1;
          most = std::max(most, in_flight);
        }
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(micro * vpp));
        if (vpp == 1) {
          // 1F1B keeps at most pp - stage micro-batches' activations (the memory estimate's
          // "min(pp, micro-batches) in flight" on stage 0).
          EXPECT_EQ(most, std::min(pp - stage, micro));
        }
      }
    }
  }
}

}  // namespace
}  // namespace lagom::models
