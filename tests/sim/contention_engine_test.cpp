// The engine's fluid core: rates from a contention model, remaining work, rescheduling.
// The model here is a test double (processor sharing: n running ops on a GPU each get 1/n), so
// that expected times can be derived by hand; the real contention model is tested on its own.
#include <gtest/gtest.h>

#include "lagom/sim/contention.hpp"
#include "lagom/sim/engine.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using test::simulate;
using test::us;
using test::workload;

using test::FairShare;

TEST(FluidEngine, TwoOpsShareAGpu) {
  // x (100 us alone) and y (50 us alone) start together on two streams of one GPU, each at rate
  // 1/2. y has 50 us of work: it ends at 50 / (1/2) = 100. By then x has done 50 of its 100;
  // alone again at rate 1 it ends at 100 + 50 = 150.
  FairShare model;
  auto s = simulate(workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "x", "kind": "compute", "duration_us": 100}]},
      {"stream": "b", "ops": [{"id": "y", "kind": "compute", "duration_us": 50}]}]}])"),
                    SimOptions{nullptr, &model});
  EXPECT_EQ(s.end_ns("y"), us(100));
  EXPECT_EQ(s.end_ns("x"), us(150));
  EXPECT_GT(s.r.stale_events, 0u);  // x's first completion (at 100) was superseded
  EXPECT_GT(model.calls, 0);
}

TEST(FluidEngine, LateArrivalSpeedsUpWhenTheOtherLeaves) {
  // Stream a: x (100). Stream b: w (20) then y (30).
  FairShare model;
  auto s = simulate(workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "x", "kind": "compute", "duration_us": 100}]},
      {"stream": "b", "ops": [{"id": "w", "kind": "compute", "duration_us": 20},
                              {"id": "y", "kind": "compute", "duration_us": 30}]}]}])"),
                    SimOptions{nullptr, &model});
  // w and x share from 0: both at 1/2, w (20) ends at 40; x has 80 left.
  // From 40 y and x share: y (30) ends at 40 + 60 = 100; x did 30, 50 left, ends at 150.
  EXPECT_EQ(s.end_ns("w"), us(40));
  EXPECT_EQ(s.end_ns("y"), us(100));
  EXPECT_EQ(s.end_ns("x"), us(150));
}

TEST(FluidEngine, CollectiveRunsAtItsSlowestRank) {
  // Rank 0 runs compute k (100) beside the all-reduce (40); rank 1 runs only the all-reduce.
  // Rank 0 gives both 1/2; rank 1 gives the all-reduce 1; the all-reduce runs at min = 1/2 and
  // ends at 80 on both ranks. k did 40 by then, 60 left alone -> ends at 140.
  FairShare model;
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "k", "kind": "compute", "duration_us": 100}]},
          {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 40}]}]},
      {"rank": 1, "streams": [
          {"stream": "comm", "ops": [{"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 40}]}]}])",
                             R"({"g": [0, 1]})"),
                    SimOptions{nullptr, &model});
  EXPECT_EQ(s.end_ns("ar0"), us(80));
  EXPECT_EQ(s.end_ns("ar1"), us(80));
  EXPECT_EQ(s.end_ns("k"), us(140));
}

TEST(FluidEngine, WaitingCommunicationIsPresentButDoesNotRun) {
  // The model sees ar0 on rank 0 while it waits for rank 1 (busy 50 us), but a waiting op gets no
  // share in FairShare, so k (40) runs at full speed: [0, 40]. The all-reduce (10) runs [50, 60].
  FairShare model;
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "k", "kind": "compute", "duration_us": 40}]},
          {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 10}]}]},
      {"rank": 1, "streams": [
          {"stream": "m", "ops": [{"id": "c", "kind": "compute", "duration_us": 50},
                                  {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
                                   "duration_us": 10}]}]}])",
                             R"({"g": [0, 1]})"),
                    SimOptions{nullptr, &model});
  EXPECT_EQ(s.end_ns("k"), us(40));
  EXPECT_EQ(s.start_ns("ar0"), us(50));
  EXPECT_EQ(s.end_ns("ar0"), us(60));
}

// Gives every activity that starts the rate 0 (or, with `silent`, no rate at all).
class Broken final : public ContentionModel {
 public:
  explicit Broken(bool silent = false) : silent_(silent) {}
  std::string_view name() const override { return "broken"; }
  void bind(const traces::Workload&, const traces::ExecutionGraph&) override {}
  void waiting(traces::OpId) override {}
  void started(const Activity& a) override { started_.push_back(a.slot); }
  void finished(const Activity&) override {}
  void rates(std::vector<RateChange>& out) override {
    for (std::uint32_t slot : started_) {
      if (!silent_) {
        out.push_back({slot, 0.0});
      }
    }
    started_.clear();
  }

 private:
  bool silent_;
  std::vector<std::uint32_t> started_;
};

TEST(FluidEngine, RejectsAModelThatStopsOps) {
  Broken model;
  const std::string msg = test::error_of([&] {
    simulate(workload(R"([{"rank": 0, "streams": [{"stream": "a", "ops": [
        {"id": "x", "kind": "compute", "duration_us": 1}]}]}])"),
             SimOptions{nullptr, &model});
  });
  EXPECT_NE(msg.find("broken"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
}

TEST(FluidEngine, RejectsAModelThatForgetsAnOp) {
  Broken model(true);
  const std::string msg = test::error_of([&] {
    simulate(workload(R"([{"rank": 0, "streams": [{"stream": "a", "ops": [
        {"id": "x", "kind": "compute", "duration_us": 1}]}]}])"),
             SimOptions{nullptr, &model});
  });
  EXPECT_NE(msg.find("gave no rate"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
}

TEST(FluidEngine, WithoutOverlapContentionChangesNothing) {
  // Ops that never overlap take exactly their standalone time with the model on.
  FairShare model;
  auto s = simulate(workload(R"([{"rank": 0, "streams": [{"stream": "a", "ops": [
      {"id": "x", "kind": "compute", "duration_us": 7},
      {"id": "y", "kind": "compute", "duration_us": 9}]}]}])"),
                    SimOptions{nullptr, &model});
  EXPECT_EQ(s.end_ns("x"), us(7));
  EXPECT_EQ(s.end_ns("y"), us(16));
  EXPECT_EQ(s.r.stale_events, 0u);
}

}  // namespace
}  // namespace lagom::sim
