// Golden scenarios for the engine, each with its expected times derived in a comment.
#include "lagom/sim/engine.hpp"

#include <gtest/gtest.h>

#include <random>

#include "lagom/sim/stats.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using test::simulate;
using test::us;
using test::workload;

TEST(Engine, OpsOnOneStreamRunBackToBack) {
  // a (10 us) then b (5 us) on one stream: b starts when a ends. Step = 10 + 5 = 15 us.
  auto s = simulate(workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "a", "kind": "compute", "duration_us": 10},
      {"id": "b", "kind": "compute", "duration_us": 5}]}]}])"));
  EXPECT_EQ(s.start_ns("b"), us(10));
  EXPECT_EQ(s.end_ns("b"), us(15));
  EXPECT_EQ(s.r.step_time.count_ns(), us(15));
}

TEST(Engine, CrossStreamDependencyWaitsForItsSource) {
  // Stream s1: a (10) then c (3). Stream s2: b (4) with deps [a].
  // a: [0, 10]; c: [10, 13] (stream order); b: launched when a ends, [10, 14]. Step = 14 us.
  auto s = simulate(workload(R"([{"rank": 0, "streams": [
      {"stream": "s1", "ops": [{"id": "a", "kind": "compute", "duration_us": 10},
                               {"id": "c", "kind": "compute", "duration_us": 3}]},
      {"stream": "s2", "ops": [{"id": "b", "kind": "compute", "duration_us": 4, "deps": ["a"]}]}
      ]}])"));
  EXPECT_EQ(s.start_ns("c"), us(10));
  EXPECT_EQ(s.end_ns("c"), us(13));
  EXPECT_EQ(s.launch_ns("b"), us(10));
  EXPECT_EQ(s.end_ns("b"), us(14));
  EXPECT_EQ(s.r.step_time.count_ns(), us(14));
}

TEST(Engine, CollectiveStartsWhenTheLastMemberArrives) {
  // Rank 0 computes 10 us, rank 1 computes 30 us, then both all-reduce (20 us).
  // Rank 0 reaches the all-reduce at 10 and waits; it starts at max(10, 30) = 30 on both ranks
  // and ends at 30 + 20 = 50. Rank 0's comm stream waited 30 - 10 = 20 us.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [{"stream": "main", "ops": [
          {"id": "c0", "kind": "compute", "duration_us": 10},
          {"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 1024, "duration_us": 20}]}]},
      {"rank": 1, "streams": [{"stream": "main", "ops": [
          {"id": "c1", "kind": "compute", "duration_us": 30},
          {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 1024, "duration_us": 20}]}]}
      ])",
                             R"({"g": [0, 1]})"));
  EXPECT_EQ(s.launch_ns("ar0"), us(10));
  EXPECT_EQ(s.start_ns("ar0"), us(30));
  EXPECT_EQ(s.start_ns("ar1"), us(30));
  EXPECT_EQ(s.end_ns("ar0"), us(50));
  EXPECT_EQ(s.end_ns("ar1"), us(50));
  const StepStats st = summarize(s.w, s.r);
  EXPECT_EQ(st.streams[s.w.stream_of(s.op("ar0"))].comm_wait.count_ns(), us(20));
  EXPECT_EQ(st.streams[s.w.stream_of(s.op("ar0"))].busy.count_ns(), us(50));
  EXPECT_EQ(st.streams[s.w.stream_of(s.op("ar0"))].idle.count_ns(), 0);
}

TEST(Engine, CollectiveTakesTheLongestMemberDuration) {
  // Members give 20 and 25 us: the slowest member determines the end, 0 + 25.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a0", "kind": "allgather", "group": "g", "bytes": 64, "duration_us": 20}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "a1", "kind": "allgather", "group": "g", "bytes": 64, "duration_us": 25}]}]}
      ])",
                             R"({"g": [0, 1]})"));
  EXPECT_EQ(s.end_ns("a0"), us(25));
  EXPECT_EQ(s.end_ns("a1"), us(25));
}

TEST(Engine, SendAndRecvRendezvous) {
  // Rank 0: compute 5 then send (10). Rank 1: recv (10) then compute 7.
  // The recv is launched at 0 but the transfer starts when the send is launched, at 5; both end
  // at 15; rank 1's compute runs [15, 22]. Step = 22 us.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "c", "kind": "compute", "duration_us": 5},
          {"id": "snd", "kind": "send", "peer": 1, "bytes": 100, "duration_us": 10}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "rcv", "kind": "recv", "peer": 0, "bytes": 100, "duration_us": 10},
          {"id": "d", "kind": "compute", "duration_us": 7}]}]}])"));
  EXPECT_EQ(s.launch_ns("rcv"), 0);
  EXPECT_EQ(s.start_ns("rcv"), us(5));
  EXPECT_EQ(s.end_ns("snd"), us(15));
  EXPECT_EQ(s.end_ns("d"), us(22));
  EXPECT_EQ(s.r.step_time.count_ns(), us(22));
}

TEST(Engine, DependencyAcrossRanks) {
  // b on rank 1 waits for a on rank 0 (10 us): b runs [10, 12].
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [{"id": "a", "kind": "compute", "duration_us": 10}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "b", "kind": "compute", "duration_us": 2, "deps": ["a"]}]}]}])"));
  EXPECT_EQ(s.start_ns("b"), us(10));
  EXPECT_EQ(s.end_ns("b"), us(12));
}

TEST(Engine, IndependentStreamsOverlapWithoutContention) {
  // Two streams of 10 us each with no contention model: both run [0, 10]; step 10 us. The rank
  // is busy 10 us, each stream 10 us.
  auto s = simulate(workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "x", "kind": "compute", "duration_us": 10}]},
      {"stream": "b", "ops": [{"id": "y", "kind": "memcpy", "bytes": 1, "duration_us": 10}]}]}])"));
  EXPECT_EQ(s.r.step_time.count_ns(), us(10));
  const StepStats st = summarize(s.w, s.r);
  EXPECT_EQ(st.ranks[0].busy.count_ns(), us(10));
  EXPECT_EQ(st.ranks[0].idle.count_ns(), 0);
}

TEST(Engine, RankBusyIsTheUnionOfItsStreams) {
  // Stream a: x [0, 10]. Stream b: y waits for z on rank 1 ([0, 15]) then runs [15, 20].
  // Rank 0 busy = [0, 10] U [15, 20] = 15 us of a 20 us step; idle 5 us.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "a", "ops": [{"id": "x", "kind": "compute", "duration_us": 10}]},
          {"stream": "b", "ops": [{"id": "y", "kind": "compute", "duration_us": 5, "deps": ["z"]}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [{"id": "z", "kind": "compute", "duration_us": 15}]}]}])"));
  const StepStats st = summarize(s.w, s.r);
  EXPECT_EQ(st.step_time.count_ns(), us(20));
  EXPECT_EQ(st.ranks[0].busy.count_ns(), us(15));
  EXPECT_EQ(st.ranks[0].idle.count_ns(), us(5));
}

TEST(Engine, ZeroDurationOpsAreAllowed) {
  auto s = simulate(workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "a", "kind": "compute", "duration_us": 0},
      {"id": "b", "kind": "compute", "duration_us": 0},
      {"id": "c", "kind": "compute", "duration_us": 1}]}]}])"));
  EXPECT_EQ(s.end_ns("b"), 0);
  EXPECT_EQ(s.end_ns("c"), us(1));
}

TEST(Engine, EmptyStreamsAndRanksWithoutOpsAreFine) {
  auto s = simulate(workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": []}]},
                                {"rank": 1, "streams": []}])"));
  EXPECT_EQ(s.r.step_time.count_ns(), 0);
}

TEST(Engine, MissingDurationWithoutCostModelNamesTheOp) {
  traces::Workload w = workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "timed", "kind": "compute", "duration_us": 1},
      {"id": "untimed", "kind": "compute", "bytes": 10}]}]}])");
  const std::string msg = test::error_of([&] { simulate(std::move(w)); });
  EXPECT_NE(msg.find("'untimed'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("duration_us"), std::string::npos) << msg;
}

// Times ops by their size, as a collective model would: 1 ns per byte.
class BytesCostModel final : public CostModel {
 public:
  std::string_view name() const override { return "bytes"; }
  Time standalone_time(const traces::Workload& w, const traces::ExecutionGraph&,
                       traces::OpId op) const override {
    ++calls;
    return Time::ns(w.bytes(op));
  }
  mutable int calls = 0;
};

TEST(Engine, CostModelTimesOpsWithoutDuration) {
  // Compute 'a' has no duration: 2000 bytes -> 2 us. The all-reduce instance (two members, no
  // durations) is timed once: 3000 bytes -> 3 us, [2, 5] on both ranks (rank 1 arrives at 0).
  traces::Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a", "kind": "compute", "bytes": 2000},
          {"id": "r0", "kind": "allreduce", "group": "g", "bytes": 3000}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "r1", "kind": "allreduce", "group": "g", "bytes": 3000}]}]}])",
                                R"({"g": [0, 1]})");
  BytesCostModel model;
  auto s = simulate(std::move(w), SimOptions{&model, nullptr});
  EXPECT_EQ(s.end_ns("a"), us(2));
  EXPECT_EQ(s.start_ns("r1"), us(2));
  EXPECT_EQ(s.end_ns("r1"), us(5));
  EXPECT_EQ(model.calls, 2);
  EXPECT_EQ(s.r.ops[s.op("r0")].alone.count_ns(), us(3));
}

TEST(Engine, RunTwiceIsAnError) {
  traces::Workload w = workload(R"([{"rank": 0, "streams": []}])");
  traces::ExecutionGraph g = traces::analyze(w);
  Engine e(w, g);
  e.run();
  EXPECT_THROW(e.run(), Error);
}

class Recorder final : public SimObserver {
 public:
  void on_start(traces::OpId op, Time t) override { log.push_back({op, t, false}); }
  void on_end(traces::OpId op, Time t) override { log.push_back({op, t, true}); }
  struct Rec {
    traces::OpId op;
    Time t;
    bool end;
  };
  std::vector<Rec> log;
};

TEST(Engine, ObserversSeeEveryStartAndEndInTimeOrder) {
  traces::Workload w = workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "x", "kind": "compute", "duration_us": 3},
                              {"id": "y", "kind": "compute", "duration_us": 1}]},
      {"stream": "b", "ops": [{"id": "z", "kind": "compute", "duration_us": 2}]}]}])");
  traces::ExecutionGraph g = traces::analyze(w);
  Engine e(w, g);
  Recorder rec;
  e.add_observer(&rec);
  SimResult r = e.run();
  ASSERT_EQ(rec.log.size(), 6u);
  for (std::size_t i = 1; i < rec.log.size(); ++i) {
    EXPECT_LE(rec.log[i - 1].t, rec.log[i].t);
  }
  for (const auto& e2 : rec.log) {
    EXPECT_EQ(e2.t, e2.end ? r.ops[e2.op].end : r.ops[e2.op].start);
  }
}

// A random but valid workload: ranks in groups of 4, compute and collectives on two streams,
// random cross-stream dependencies pointing backwards in the issue order.
traces::Workload random_workload(std::uint32_t seed) {
  std::mt19937 rng(seed);
  const std::uint32_t nranks = 8;
  traces::WorkloadBuilder b(nranks);
  const traces::GroupId g0 = b.add_group("a", {0, 1, 2, 3});
  const traces::GroupId g1 = b.add_group("b", {4, 5, 6, 7});
  const traces::GroupId all = b.add_group("all", {0, 1, 2, 3, 4, 5, 6, 7});
  std::vector<std::int64_t> durs(40);
  for (auto& d : durs) {
    d = std::uniform_int_distribution<std::int64_t>(0, 50000)(rng);
  }
  for (traces::Rank r = 0; r < nranks; ++r) {
    const traces::StreamId comp = b.add_stream(r, "compute");
    const traces::StreamId comm = b.add_stream(r, "comm");
    traces::OpId prev_compute = 0;
    for (int i = 0; i < 20; ++i) {
      traces::OpSpec c{traces::OpKind::kCompute, 0, traces::kNoGroup, traces::kNoPeer,
                       durs[static_cast<std::size_t>(i)] + r * 7};
      prev_compute = b.add_op(comp, c);
      traces::OpSpec a{i % 3 == 0 ? traces::OpKind::kAllReduce : traces::OpKind::kAllGather, 4096,
                       i % 5 == 0 ? all : (r < 4 ? g0 : g1), traces::kNoPeer,
                       durs[static_cast<std::size_t>(20 + i)]};
      const traces::OpId coll = b.add_op(comm, a);
      b.add_dep(coll, prev_compute);
    }
  }
  return std::move(b).build("random");
}

TEST(Engine, SameInputGivesIdenticalResults) {
  auto a = simulate(random_workload(7));
  auto b = simulate(random_workload(7));
  EXPECT_EQ(a.r.fingerprint, b.r.fingerprint);
  EXPECT_EQ(a.r.step_time, b.r.step_time);
  ASSERT_EQ(a.r.ops.size(), b.r.ops.size());
  for (std::size_t i = 0; i < a.r.ops.size(); ++i) {
    EXPECT_EQ(a.r.ops[i].launch, b.r.ops[i].launch);
    EXPECT_EQ(a.r.ops[i].start, b.r.ops[i].start);
    EXPECT_EQ(a.r.ops[i].end, b.r.ops[i].end);
  }
  auto c = simulate(random_workload(8));
  EXPECT_NE(a.r.fingerprint, c.r.fingerprint);
}

TEST(Engine, FingerprintSeesAOneNanosecondChange) {
  auto base = simulate(workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "a", "kind": "compute", "duration_us": 10},
      {"id": "b", "kind": "compute", "duration_us": 5}]}]}])"));
  auto moved = simulate(workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "a", "kind": "compute", "duration_us": 10.001},
      {"id": "b", "kind": "compute", "duration_us": 5}]}]}])"));
  EXPECT_NE(base.r.fingerprint, moved.r.fingerprint);
}

TEST(Engine, ManySimulationsShareOneWorkload) {
  const traces::Workload w = random_workload(3);
  const traces::ExecutionGraph g = traces::analyze(w);
  Engine e1(w, g);
  Engine e2(w, g);
  const SimResult r1 = e1.run();
  const SimResult r2 = e2.run();
  EXPECT_EQ(r1.fingerprint, r2.fingerprint);
}

}  // namespace
}  // namespace lagom::sim
