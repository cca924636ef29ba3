// Overlap groups (X, Y, Z of the paper's eq. 1) and per-op slowdowns, on scenarios whose times
// are derived by hand in each test, plus a randomized check of the sweep against brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "lagom/sim/contention.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/stats.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using test::simulate;
using test::us;
using test::workload;

using test::FairShare;

std::vector<std::string> names(const test::Simulated& s, const OverlapStats& o,
                               const OverlapGroup& g) {
  std::vector<std::string> out;
  for (traces::OpId op : o.ops_of(g)) {
    out.push_back(s.w.name(op));
  }
  return out;
}

using Names = std::vector<std::string>;

TEST(OverlapGroups, ComputeAndCommunicationOnTwoStreamsFormOneGroup) {
  // Rank 0: c0 (compute, 10) on "compute"; ar0 (all-reduce, 15) on "comm".
  // Rank 1: w (compute, 5) then ar1 on one stream.
  // The all-reduce starts when rank 1 arrives at 5 and ends at 5 + 15 = 20.
  // Rank 0 runs c0 [0, 10) and ar0 [5, 20): they overlap, one group:
  //   X = 20 - 5 = 15, Y = 10 - 0 = 10, Z = 20 - 0 = 20 (>= max(X, Y) = 15).
  // Rank 1 runs w [0, 5) and ar1 [5, 20): they only touch, so no group there.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "c0", "kind": "compute", "duration_us": 10}]},
          {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 15}]}]},
      {"rank": 1, "streams": [
          {"stream": "m", "ops": [{"id": "w", "kind": "compute", "duration_us": 5},
                                  {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
                                   "duration_us": 15}]}]}])",
                             R"({"g": [0, 1]})"));
  const OverlapStats o = find_overlap_groups(s.w, s.r);
  ASSERT_EQ(o.groups.size(), 1u);
  const OverlapGroup& g = o.groups[0];
  EXPECT_EQ(g.rank, 0u);
  EXPECT_EQ(g.start.count_ns(), us(0));
  EXPECT_EQ(g.end.count_ns(), us(20));
  EXPECT_EQ(g.comm.count_ns(), us(15));
  EXPECT_EQ(g.compute.count_ns(), us(10));
  EXPECT_EQ(g.makespan().count_ns(), us(20));
  EXPECT_EQ(names(s, o, g), (Names{"c0", "ar0"}));  // by start
  EXPECT_EQ(o.comm.count_ns(), us(15));
  EXPECT_EQ(o.compute.count_ns(), us(10));
  EXPECT_EQ(o.makespan.count_ns(), us(20));
  // No contention model: every op ran exactly as long as alone.
  EXPECT_DOUBLE_EQ(o.compute_slowdown_mean, 1.0);
  EXPECT_DOUBLE_EQ(o.compute_slowdown_max, 1.0);
  EXPECT_DOUBLE_EQ(o.comm_slowdown_mean, 1.0);
  // summarize() carries the same groups.
  const StepStats st = summarize(s.w, s.r);
  EXPECT_EQ(st.overlap.groups.size(), 1u);
  EXPECT_EQ(st.overlap.ops, o.ops);
}

TEST(OverlapGroups, AChainComputeCommComputeIsOneGroup) {
  // Rank 0, stream "compute": a (10) then b (15): a [0, 10), b [10, 25), then c (5) [25, 30).
  // Stream "comm": ar0 (10), which starts when rank 1 arrives at 5: [5, 15).
  // a and b do not overlap each other, but both overlap ar0, so {a, ar0, b} is one group:
  //   start 0, end 25, X = 10, Y = 10 + 15 = 25, Z = 25 (= max(X, Y): ar0 is fully hidden).
  // c starts when b ends (25) and overlaps nothing: it is in no group.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "a", "kind": "compute", "duration_us": 10},
                                        {"id": "b", "kind": "compute", "duration_us": 15},
                                        {"id": "c", "kind": "compute", "duration_us": 5}]},
          {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 10}]}]},
      {"rank": 1, "streams": [
          {"stream": "m", "ops": [{"id": "w", "kind": "compute", "duration_us": 5},
                                  {"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
                                   "duration_us": 10}]}]}])",
                             R"({"g": [0, 1]})"));
  const OverlapStats o = find_overlap_groups(s.w, s.r);
  ASSERT_EQ(o.groups.size(), 1u);
  const OverlapGroup& g = o.groups[0];
  EXPECT_EQ(g.rank, 0u);
  EXPECT_EQ(names(s, o, g), (Names{"a", "ar0", "b"}));
  EXPECT_EQ(g.start.count_ns(), us(0));
  EXPECT_EQ(g.end.count_ns(), us(25));
  EXPECT_EQ(g.comm.count_ns(), us(10));
  EXPECT_EQ(g.compute.count_ns(), us(25));
  EXPECT_EQ(g.makespan().count_ns(), us(25));
}

TEST(OverlapGroups, OpsThatDoNotOverlapFormNone) {
  // Rank 0: a (compute, 10) [0, 10); ar0 (15) on another stream with deps [a]: [10, 25) (rank 1
  // arrives at 0). They only touch. Rank 1: two compute ops overlap ([0, 10) and [0, 4)) and
  // ar1 runs [10, 25) after them on a third stream; compute with compute is not an overlap
  // group, and ar1 touches nothing. Rank 2: a memcpy [0, 8) beside a compute op [0, 8): no
  // communication, no group.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "a", "kind": "compute", "duration_us": 10}]},
          {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 15, "deps": ["a"]}]}]},
      {"rank": 1, "streams": [
          {"stream": "s1", "ops": [{"id": "k1", "kind": "compute", "duration_us": 10}]},
          {"stream": "s2", "ops": [{"id": "k2", "kind": "compute", "duration_us": 4}]},
          {"stream": "comm", "ops": [{"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 15}]}]},
      {"rank": 2, "streams": [
          {"stream": "s1", "ops": [{"id": "m", "kind": "memcpy", "bytes": 8, "duration_us": 8}]},
          {"stream": "s2", "ops": [{"id": "k", "kind": "compute", "duration_us": 8}]}]}])",
                             R"({"g": [0, 1]})"));
  ASSERT_EQ(s.start_ns("ar1"), us(10));
  const OverlapStats o = find_overlap_groups(s.w, s.r);
  EXPECT_TRUE(o.groups.empty());
  EXPECT_TRUE(o.ops.empty());
  EXPECT_EQ(o.comm.count_ns(), 0);
  EXPECT_EQ(o.compute.count_ns(), 0);
  EXPECT_EQ(o.makespan.count_ns(), 0);
  EXPECT_DOUBLE_EQ(o.compute_slowdown_mean, 1.0);  // nothing to average: 1 by definition
  EXPECT_DOUBLE_EQ(o.compute_slowdown_max, 1.0);
  EXPECT_DOUBLE_EQ(o.comm_slowdown_mean, 1.0);
}

TEST(OverlapGroups, GroupsArePerRank) {
  // Rank 0: k0 (compute, 30) [0, 30); ar0 (10) with deps [k0]: launched at 30, [30, 40).
  // Rank 1: k1 (compute, 50) [0, 50); ar1 launched at 0, waits for rank 0 until 30, [30, 40).
  // On rank 1 ar1 [30, 40) overlaps k1 [0, 50): one group {k1, ar1}, start 0, end 50,
  //   X = 10, Y = 50, Z = 50 (ar1's wait [0, 30) is not running time).
  // On rank 0, k0 and ar0 only touch. k0 overlaps rank 1's ops in time, but groups never span
  // ranks, so rank 0 has none.
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "k0", "kind": "compute", "duration_us": 30}]},
          {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 10, "deps": ["k0"]}]}]},
      {"rank": 1, "streams": [
          {"stream": "compute", "ops": [{"id": "k1", "kind": "compute", "duration_us": 50}]},
          {"stream": "comm", "ops": [{"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 10}]}]}])",
                             R"({"g": [0, 1]})"));
  const OverlapStats o = find_overlap_groups(s.w, s.r);
  ASSERT_EQ(o.groups.size(), 1u);
  const OverlapGroup& g = o.groups[0];
  EXPECT_EQ(g.rank, 1u);
  EXPECT_EQ(names(s, o, g), (Names{"k1", "ar1"}));
  EXPECT_EQ(g.start.count_ns(), us(0));
  EXPECT_EQ(g.end.count_ns(), us(50));
  EXPECT_EQ(g.comm.count_ns(), us(10));
  EXPECT_EQ(g.compute.count_ns(), us(50));
  EXPECT_EQ(g.makespan().count_ns(), us(50));
}

TEST(OverlapGroups, MemcpyJoinsAGroupAndGroupsComeInRankOrder) {
  // Both ranks run the same program (rank 1 is listed first in the file), on two streams:
  //   compute: c1 (10) [0, 10), c2 (10) [10, 20), c3 (10) with deps [ar1]: [20, 30)
  //   comm:    w (memcpy, 2) [0, 2), ar1 (5) [2, 7), ar2 (5) with deps [c3]: [30, 35)
  // w and ar1 overlap c1: {c1, w, ar1} is a group (by start, ties by OpId: the compute stream's
  // ops come first), start 0, end 10, X = 5 (w is a memcpy: neither X nor Y), Y = 10, Z = 10.
  // c2, c3 and ar2 only touch their neighbours. One group per rank, rank 0's first.
  // Sums: X = 10, Y = 20, Z = 20.
  const std::string rank_json = R"(
      {"rank": R, "streams": [
          {"stream": "compute", "ops": [{"id": "rR.c1", "kind": "compute", "duration_us": 10},
                                        {"id": "rR.c2", "kind": "compute", "duration_us": 10},
                                        {"id": "rR.c3", "kind": "compute", "duration_us": 10,
                                         "deps": ["rR.ar1"]}]},
          {"stream": "comm", "ops": [{"id": "rR.w", "kind": "memcpy", "bytes": 8,
                                      "duration_us": 2},
                                     {"id": "rR.ar1", "kind": "allreduce", "group": "g",
                                      "bytes": 8, "duration_us": 5},
                                     {"id": "rR.ar2", "kind": "allreduce", "group": "g",
                                      "bytes": 8, "duration_us": 5, "deps": ["rR.c3"]}]}]})";
  auto for_rank = [&](char r) {
    std::string j = rank_json;
    std::replace(j.begin(), j.end(), 'R', r);
    return j;
  };
  auto s = simulate(workload("[" + for_rank('1') + "," + for_rank('0') + "]", R"({"g": [0, 1]})"));
  ASSERT_EQ(s.start_ns("r0.c3"), us(20));
  ASSERT_EQ(s.start_ns("r0.ar2"), us(30));
  const OverlapStats o = find_overlap_groups(s.w, s.r);
  ASSERT_EQ(o.groups.size(), 2u);
  EXPECT_EQ(o.groups[0].rank, 0u);
  EXPECT_EQ(names(s, o, o.groups[0]), (Names{"r0.c1", "r0.w", "r0.ar1"}));
  EXPECT_EQ(o.groups[1].rank, 1u);
  EXPECT_EQ(names(s, o, o.groups[1]), (Names{"r1.c1", "r1.w", "r1.ar1"}));
  for (const OverlapGroup& g : o.groups) {
    EXPECT_EQ(g.start.count_ns(), us(0));
    EXPECT_EQ(g.end.count_ns(), us(10));
    EXPECT_EQ(g.comm.count_ns(), us(5));
    EXPECT_EQ(g.compute.count_ns(), us(10));
  }
  EXPECT_EQ(o.comm.count_ns(), us(10));
  EXPECT_EQ(o.compute.count_ns(), us(20));
  EXPECT_EQ(o.makespan.count_ns(), us(20));
}

TEST(Slowdown, IsRunningTimeOverAloneTime) {
  EXPECT_DOUBLE_EQ(slowdown({Time::ns(0), Time::ns(10), Time::ns(40), Time::ns(20)}), 1.5);
  EXPECT_DOUBLE_EQ(slowdown({Time::ns(0), Time::ns(0), Time::ns(0), Time::ns(0)}), 1.0);
  // A waiting communication op's wait (launch to start) is not part of its slowdown.
  EXPECT_DOUBLE_EQ(slowdown({Time::ns(0), Time::ns(100), Time::ns(110), Time::ns(10)}), 1.0);
}

TEST(Slowdown, UnderContentionInsideAGroup) {
  // As in FluidEngine.CollectiveRunsAtItsSlowestRank: rank 0 runs k (compute, 100) beside the
  // all-reduce (40); rank 1 runs only the all-reduce. Rank 0 gives both 1/2, so the all-reduce
  // runs at 1/2 on both ranks: [0, 80). k did 40 by 80; its last 60 alone: ends at 140.
  //   slowdown(k) = 140 / 100 = 1.4; slowdown(ar0) = slowdown(ar1) = 80 / 40 = 2.
  // z (compute, 0 us) on rank 1 has alone = 0: slowdown 1.
  // Rank 0's group {k, ar0}: X = 80, Y = 140, Z = 140; rank 1 (ar1 alone, z empty): none.
  // In groups: compute slowdown mean = max = 1.4, communication mean = 2.
  FairShare model;
  auto s = simulate(workload(R"([
      {"rank": 0, "streams": [
          {"stream": "compute", "ops": [{"id": "k", "kind": "compute", "duration_us": 100}]},
          {"stream": "comm", "ops": [{"id": "ar0", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 40}]}]},
      {"rank": 1, "streams": [
          {"stream": "compute", "ops": [{"id": "z", "kind": "compute", "duration_us": 0}]},
          {"stream": "comm", "ops": [{"id": "ar1", "kind": "allreduce", "group": "g", "bytes": 8,
                                      "duration_us": 40}]}]}])",
                             R"({"g": [0, 1]})"),
                    SimOptions{nullptr, &model});
  EXPECT_DOUBLE_EQ(slowdown(s.r.ops[s.op("k")]), 140.0 / 100.0);
  EXPECT_DOUBLE_EQ(slowdown(s.r.ops[s.op("ar0")]), 80.0 / 40.0);
  EXPECT_DOUBLE_EQ(slowdown(s.r.ops[s.op("ar1")]), 80.0 / 40.0);
  EXPECT_DOUBLE_EQ(slowdown(s.r.ops[s.op("z")]), 1.0);
  const OverlapStats o = find_overlap_groups(s.w, s.r);
  ASSERT_EQ(o.groups.size(), 1u);
  EXPECT_EQ(o.groups[0].rank, 0u);
  EXPECT_EQ(o.groups[0].comm.count_ns(), us(80));
  EXPECT_EQ(o.groups[0].compute.count_ns(), us(140));
  EXPECT_EQ(o.groups[0].makespan().count_ns(), us(140));
  EXPECT_DOUBLE_EQ(o.compute_slowdown_mean, 1.4);
  EXPECT_DOUBLE_EQ(o.compute_slowdown_max, 1.4);
  EXPECT_DOUBLE_EQ(o.comm_slowdown_mean, 2.0);
}

TEST(Slowdown, MeanAndMaxOverComputeOpsInGroups) {
  // One rank, streams a, b, c. Processor sharing among running ops:
  //   a: k1 (compute, 30); b: k2 (compute, 10); c: ar (all-reduce on a one-rank group, 20).
  // From 0 three ops run at 1/3: k2 (10) ends at 30; k1 and ar have done 10, left 20 and 10.
  // From 30 two at 1/2: ar (10 left) ends at 50; k1 has done 10 more, 10 left, alone: ends 60.
  //   slowdown(k1) = 60 / 30 = 2, slowdown(k2) = 30 / 10 = 3, slowdown(ar) = 50 / 20 = 2.5.
  // One group {k1, k2, ar}: compute mean (2 + 3) / 2 = 2.5, max 3; communication mean 2.5.
  //   X = 50, Y = 60 + 30 = 90, Z = 60 (Y > Z: the compute ops run on two streams).
  FairShare model;
  auto s = simulate(workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "k1", "kind": "compute", "duration_us": 30}]},
      {"stream": "b", "ops": [{"id": "k2", "kind": "compute", "duration_us": 10}]},
      {"stream": "c", "ops": [{"id": "ar", "kind": "allreduce", "group": "solo", "bytes": 8,
                               "duration_us": 20}]}]}])",
                             R"({"solo": [0]})"),
                    SimOptions{nullptr, &model});
  ASSERT_EQ(s.end_ns("k2"), us(30));
  ASSERT_EQ(s.end_ns("ar"), us(50));
  ASSERT_EQ(s.end_ns("k1"), us(60));
  const OverlapStats o = find_overlap_groups(s.w, s.r);
  ASSERT_EQ(o.groups.size(), 1u);
  EXPECT_EQ(o.groups[0].comm.count_ns(), us(50));
  EXPECT_EQ(o.groups[0].compute.count_ns(), us(90));
  EXPECT_EQ(o.groups[0].makespan().count_ns(), us(60));
  EXPECT_DOUBLE_EQ(o.compute_slowdown_mean, 2.5);
  EXPECT_DOUBLE_EQ(o.compute_slowdown_max, 3.0);
  EXPECT_DOUBLE_EQ(o.comm_slowdown_mean, 2.5);
}

// Connected components of the "running intervals overlap" relation per rank, by union-find over
// all pairs: the definition, quadratic, for checking the sweep.
std::vector<std::vector<traces::OpId>> brute_force_groups(const traces::Workload& w,
                                                          const SimResult& r) {
  const std::uint32_t n = w.op_count();
  std::vector<std::uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&](std::uint32_t x) {
    while (parent[x] != x) {
      x = parent[x] = parent[parent[x]];
    }
    return x;
  };
  auto runs = [&](traces::OpId op) { return r.ops[op].end > r.ops[op].start; };
  for (traces::OpId a = 0; a < n; ++a) {
    for (traces::OpId b = a + 1; b < n; ++b) {
      if (w.rank_of(a) == w.rank_of(b) && runs(a) && runs(b) && r.ops[a].start < r.ops[b].end &&
          r.ops[b].start < r.ops[a].end) {
        parent[find(a)] = find(b);
      }
    }
  }
  std::vector<std::vector<traces::OpId>> comp(n);
  for (traces::OpId op = 0; op < n; ++op) {
    if (runs(op)) {
      comp[find(op)].push_back(op);
    }
  }
  std::vector<std::vector<traces::OpId>> groups;
  for (auto& c : comp) {
    const bool comm = std::any_of(c.begin(), c.end(),
                                  [&](traces::OpId op) { return traces::is_comm(w.kind(op)); });
    const bool compute = std::any_of(c.begin(), c.end(), [&](traces::OpId op) {
      return w.kind(op) == traces::OpKind::kCompute;
    });
    if (comm && compute) {
      std::sort(c.begin(), c.end());
      groups.push_back(std::move(c));
    }
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

TEST(OverlapGroups, SweepMatchesTheDefinitionOnRandomTimelines) {
  // Random intervals (not necessarily what an engine would produce: ops of a stream may
  // overlap, some are empty) on 3 ranks x 3 streams; the sweep must find exactly the groups
  // the quadratic definition finds, with X, Y, Z summed from their ops.
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 50; ++trial) {
    traces::WorkloadBuilder b(3);
    b.add_group("world", {0, 1, 2});
    const traces::OpKind kinds[] = {traces::OpKind::kCompute, traces::OpKind::kAllReduce,
                                    traces::OpKind::kMemcpy, traces::OpKind::kCompute};
    for (traces::Rank rank = 0; rank < 3; ++rank) {
      for (int st = 0; st < 3; ++st) {
        const traces::StreamId sid = b.add_stream(rank, "s" + std::to_string(st));
        for (int i = 0; i < 20; ++i) {
          traces::OpSpec spec;
          spec.kind = kinds[rng() % 4];
          spec.bytes = 8;
          spec.duration_ns = 1;
          spec.group = spec.kind == traces::OpKind::kAllReduce ? 0 : traces::kNoGroup;
          b.add_op(sid, spec);
        }
      }
    }
    const traces::Workload w = std::move(b).build();
    SimResult r;
    r.ops.resize(w.op_count());
    for (traces::OpTimes& t : r.ops) {
      t.start = Time::ns(static_cast<std::int64_t>(rng() % 1000));
      t.launch = t.start;
      t.end = t.start + Time::ns(static_cast<std::int64_t>(rng() % 40));
      t.alone = Time::ns(static_cast<std::int64_t>(rng() % 30));
    }
    const OverlapStats o = find_overlap_groups(w, r);
    std::vector<std::vector<traces::OpId>> got;
    Time sum_x;
    Time sum_y;
    Time sum_z;
    for (const OverlapGroup& g : o.groups) {
      std::vector<traces::OpId> ops(o.ops_of(g).begin(), o.ops_of(g).end());
      Time x;
      Time y;
      Time first = r.ops[ops.front()].start;
      Time last = r.ops[ops.front()].end;
      for (traces::OpId op : ops) {
        EXPECT_EQ(w.rank_of(op), g.rank);
        const Time run = r.ops[op].end - r.ops[op].start;
        if (traces::is_comm(w.kind(op))) {
          x += run;
        } else if (w.kind(op) == traces::OpKind::kCompute) {
          y += run;
        }
        first = std::min(first, r.ops[op].start);
        last = std::max(last, r.ops[op].end);
      }
      EXPECT_EQ(g.comm, x);
      EXPECT_EQ(g.compute, y);
      EXPECT_EQ(g.start, first);
      EXPECT_EQ(g.end, last);
      sum_x += x;
      sum_y += y;
      sum_z += last - first;
      std::sort(ops.begin(), ops.end());
      got.push_back(std::move(ops));
    }
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, brute_force_groups(w, r)) << "trial " << trial;
    EXPECT_EQ(o.comm, sum_x);
    EXPECT_EQ(o.compute, sum_y);
    EXPECT_EQ(o.makespan, sum_z);
    for (std::size_t i = 1; i < o.groups.size(); ++i) {
      const OverlapGroup& p = o.groups[i - 1];
      const OverlapGroup& q = o.groups[i];
      EXPECT_TRUE(p.rank < q.rank || (p.rank == q.rank && p.end <= q.start));
    }
  }
}

}  // namespace
}  // namespace lagom::sim
