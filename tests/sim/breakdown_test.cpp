// The step breakdown (sim::Breakdown): each rank's step time split into compute, exposed
// communication, pipeline bubble, waiting on peers and idle, every part derived by hand, and the
// parts summing to the step time exactly, per rank and on average, on generated steps too.
#include <gtest/gtest.h>

#include "lagom/hardware/profile.hpp"
#include "lagom/models/generator.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/sim/stats.hpp"
#include "lagom/topologies/cluster.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using test::simulate;
using test::us;
using test::workload;

void expect_breakdown(const Breakdown& b, std::int64_t compute, std::int64_t exposed,
                      std::int64_t bubble, std::int64_t peer, std::int64_t idle) {
  EXPECT_EQ(b.compute.count_ns(), compute);
  EXPECT_EQ(b.exposed_comm.count_ns(), exposed);
  EXPECT_EQ(b.pipeline_bubble.count_ns(), bubble);
  EXPECT_EQ(b.peer_wait.count_ns(), peer);
  EXPECT_EQ(b.idle.count_ns(), idle);
}

TEST(Breakdown, EachPartOfAHandTimedStep) {
  // Rank 0: c0 [0, 10], then all-reduce ar0 with rank 1, launched at 10, started at 30 when
  //         rank 1 arrives, ended at 50; then a send to rank 2, [50, 55].
  // Rank 1: c1 [0, 30], ar1 [30, 50].
  // Rank 2: the receive, launched at 0, waits for the send, runs [50, 55]; c2 [55, 59].
  // Step 59 us.
  //   rank 0: compute 10, exposed 20 + 5, bubble 4 (a pipeline rank done at 55), peer wait 20.
  //   rank 1: compute 30, exposed 20, idle 9 (done at 50, no pipeline).
  //   rank 2: compute 4, exposed 5, bubble 50 (waiting for its input).
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [{"stream": "main", "ops": [
          {"id": "c0", "kind": "compute", "duration_us": 10},
          {"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 1024, "duration_us": 20},
          {"id": "tx", "kind": "send", "peer": 2, "bytes": 1024, "duration_us": 5}]}]},
      {"rank": 1, "streams": [{"stream": "main", "ops": [
          {"id": "c1", "kind": "compute", "duration_us": 30},
          {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 1024, "duration_us": 20}]}]},
      {"rank": 2, "streams": [{"stream": "main", "ops": [
          {"id": "rx", "kind": "recv", "peer": 0, "bytes": 1024, "duration_us": 5},
          {"id": "c2", "kind": "compute", "duration_us": 4}]}]}
      ])",
                             R"({"g": [0, 1]})"));
  ASSERT_EQ(s.r.step_time.count_ns(), us(59));
  const StepStats st = summarize(s.w, s.r);
  expect_breakdown(st.ranks[0].breakdown, us(10), us(25), us(4), us(20), 0);
  expect_breakdown(st.ranks[1].breakdown, us(30), us(20), 0, 0, us(9));
  expect_breakdown(st.ranks[2].breakdown, us(4), us(5), us(50), 0, 0);
  // The mean: exact means 14666.67, 16666.67, 18000, 6666.67 and 3000 ns; their fractions sum to
  // 2 ns, which go to the two largest fractions (ties: the earlier part), not to idle.
  expect_breakdown(st.breakdown, 14667, 16667, us(18), 6666, us(3));
  EXPECT_EQ(st.breakdown.total(), st.step_time);
  EXPECT_EQ(st.work.compute_mean.count_ns(), 14667);
  EXPECT_EQ(st.work.exposed_comm_mean.count_ns(), 16667);
}

TEST(Breakdown, ACollectiveWaitOutranksAPendingSendOnASideStream) {
  // Rank 0: a send to rank 1 on stream "tx", launched at 0, whose receive is posted at 30; on
  //         stream "main" an all-reduce with rank 2, launched at 0, whose peer arrives at 20.
  //         [0, 20] both wait: the collective names the cause (peer wait), not the send. The
  //         all-reduce runs [20, 30], the send [30, 35]: 15 exposed.
  // Rank 1: c1 [0, 30], the receive [30, 35]. Rank 2: c2 [0, 20], the all-reduce [20, 30].
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "tx", "ops": [{"id": "tx", "kind": "send", "peer": 1, "bytes": 1024,
                                    "duration_us": 5}]},
          {"stream": "main", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g",
                                      "bytes": 1024, "duration_us": 10}]}]},
      {"rank": 1, "streams": [{"stream": "main", "ops": [
          {"id": "c1", "kind": "compute", "duration_us": 30},
          {"id": "rx", "kind": "recv", "peer": 0, "bytes": 1024, "duration_us": 5}]}]},
      {"rank": 2, "streams": [{"stream": "main", "ops": [
          {"id": "c2", "kind": "compute", "duration_us": 20},
          {"id": "ar2", "kind": "allreduce", "group": "g", "bytes": 1024, "duration_us": 10}]}]}
      ])",
                             R"({"g": [0, 2]})"));
  ASSERT_EQ(s.r.step_time.count_ns(), us(35));
  const StepStats st = summarize(s.w, s.r);
  expect_breakdown(st.ranks[0].breakdown, 0, us(15), 0, us(20), 0);
  expect_breakdown(st.ranks[1].breakdown, us(30), us(5), 0, 0, 0);
  // Rank 2 is outside any pipeline: done at 30, idle 5.
  expect_breakdown(st.ranks[2].breakdown, us(20), us(10), 0, 0, us(5));
}

TEST(Breakdown, TheMeanCannotOverflowOnAVeryLongStep) {
  // Three ranks of one compute op each, timed by hand at 4e18 ns (127 years): the parts' sums
  // over ranks (1.2e19) exceed int64; the mean must not.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [{"id": "c0", "kind": "compute",
                                                         "duration_us": 1}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [{"id": "c1", "kind": "compute",
                                                         "duration_us": 1}]}]},
      {"rank": 2, "streams": [{"stream": "m", "ops": [{"id": "c2", "kind": "compute",
                                                         "duration_us": 1}]}]}
      ])",
                             "{}"));
  constexpr std::int64_t kLong = 4'000'000'000'000'000'000;
  s.r.step_time = Time::ns(kLong);
  for (traces::OpTimes& t : s.r.ops) {
    t = {Time(), Time(), Time::ns(kLong - 1), Time::ns(kLong - 1)};
  }
  s.r.ops[2].end = Time::ns(kLong);
  const StepStats st = summarize(s.w, s.r);
  // Compute's exact mean is kLong - 2/3 and idle's 2/3 (two ranks idle 1 ns): the larger fraction,
  // idle's, takes the nanosecond.
  expect_breakdown(st.breakdown, kLong - 1, 0, 0, 0, 1);
  EXPECT_EQ(st.breakdown.total(), st.step_time);
}

TEST(Breakdown, CommunicationUnderComputeIsHidden) {
  // Compute [0, 10] on one stream, an all-reduce [2, 14] on another (a one-rank group): 8 us of
  // it run under compute, so exposed communication is 14 - 10 = 4 us.
  auto s = simulate(workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "c", "kind": "compute", "duration_us": 10}]},
      {"stream": "b", "ops": [{"id": "d", "kind": "compute", "duration_us": 2},
                              {"id": "ar", "kind": "allreduce", "group": "g", "bytes": 8,
                               "duration_us": 12}]}]}])",
                             R"({"g": [0]})"));
  const StepStats st = summarize(s.w, s.r);
  expect_breakdown(st.ranks[0].breakdown, us(10), us(4), 0, 0, 0);
}

// A dense model made up for these tests (validated), and its generated step simulated with the
// models and contention on `nodes` dgx-h100 nodes.
models::ModelSpec dense_model(const char* name, int hidden, int heads, int head_dim, int seq) {
  models::ModelSpec m;
  m.name = name;
  m.sources = {"made up for this test"};
  m.layers = 8;
  m.hidden = hidden;
  m.ffn_hidden = 4 * hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = head_dim;
  m.vocab = 1024;  // a small head, so that the last stage is not the slow one
  m.seq_len = seq;
  models::validate(m);
  return m;
}

StepStats simulate_generated(const models::ModelSpec& m, const char* par, int gbs, int nodes) {
  models::TrainingConfig cfg;
  cfg.mbs = 1;
  cfg.gbs = gbs;
  const models::GeneratedStep g = models::generate_step(m, models::parse_parallelism(par), cfg);
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", nodes);
  const hardware::HardwareProfile profile =
      hardware::default_profile_for_gpu(cluster.spec().gpu_type);
  Simulation sim(g.workload, cluster, profile);
  return summarize(g.workload, sim.run());
}

TEST(Breakdown, PartsSumToTheStepOfGeneratedPipelines) {
  // Every rank of a simulated 1F1B step with TP and data parallelism: the five parts sum to the
  // step, a pipeline has a bubble, and its compute is the work figures' compute.
  const StepStats st =
      simulate_generated(dense_model("tiny", 256, 8, 32, 128), "tp=2,pp=4,dp=2", 16, 2);
  for (const RankStats& rs : st.ranks) {
    EXPECT_EQ(rs.breakdown.total(), st.step_time);
  }
  EXPECT_EQ(st.breakdown.total(), st.step_time);
  EXPECT_GT(st.breakdown.pipeline_bubble.count_ns(), 0);
  EXPECT_GT(st.breakdown.compute.count_ns(), 0);
  EXPECT_EQ(st.breakdown.compute, st.work.compute_mean);
}

TEST(Breakdown, TheBubbleOfOneFOneBIsTheClosedForm) {
  // 1F1B on p stages with m micro-batches idles each stage (p - 1) of (m + p - 1) forward and
  // backward slots: a bubble of (p - 1) / (m + p - 1) of the step when the stages are balanced
  // and the transfers short. 4 stages, 8 micro-batches: 3/11 = 27.3%.
  const StepStats st =
      simulate_generated(dense_model("balanced", 2048, 16, 128, 2048), "pp=4", 8, 1);
  const double bubble =
      st.breakdown.pipeline_bubble.count_ns_double() / st.step_time.count_ns_double();
  EXPECT_NEAR(bubble, 3.0 / 11.0, 0.03);
}

}  // namespace
}  // namespace lagom::sim
