// Matching of collectives and send/recv across ranks, and deadlock detection.
#include "lagom/traces/execution_graph.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "strings.hpp"
#include "test_util.hpp"

namespace lagom::traces {
namespace {

using test::error_of;
using test::workload;

using test::contains;

TEST(ExecutionGraph, MatchesTheKthCollectiveOfEachRank) {
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8},
          {"id": "b0", "kind": "allgather", "group": "g", "bytes": 16}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "a1", "kind": "allreduce", "group": "g", "bytes": 8},
          {"id": "b1", "kind": "allgather", "group": "g", "bytes": 16}]}]}])",
                        R"({"g": [1, 0]})");
  ExecutionGraph g = analyze(w);
  ASSERT_EQ(g.instance_count(), 2u);
  const InstanceId ia = g.instance_of(*w.find_op("a0"));
  EXPECT_EQ(ia, g.instance_of(*w.find_op("a1")));
  EXPECT_NE(ia, g.instance_of(*w.find_op("b0")));
  // Members are in communicator order: the group lists rank 1 first.
  ASSERT_EQ(g.members(ia).size(), 2u);
  EXPECT_EQ(g.members(ia)[0], *w.find_op("a1"));
  EXPECT_EQ(g.members(ia)[1], *w.find_op("a0"));
}

TEST(ExecutionGraph, PairsSendsAndRecvsInOrderPerPeer) {
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "s1", "kind": "send", "peer": 1, "bytes": 1},
          {"id": "s2", "kind": "send", "peer": 1, "bytes": 2}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "r1", "kind": "recv", "peer": 0, "bytes": 1},
          {"id": "r2", "kind": "recv", "peer": 0, "bytes": 2}]}]}])");
  ExecutionGraph g = analyze(w);
  EXPECT_EQ(g.instance_of(*w.find_op("s1")), g.instance_of(*w.find_op("r1")));
  EXPECT_EQ(g.instance_of(*w.find_op("s2")), g.instance_of(*w.find_op("r2")));
  EXPECT_EQ(g.instance_of(*w.find_op("s1")) == g.instance_of(*w.find_op("s2")), false);
}

TEST(ExecutionGraph, AMemberThatNeverArrivesIsADeadlock) {
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a0", "kind": "allreduce", "group": "dp", "bytes": 8},
          {"id": "b0", "kind": "allreduce", "group": "dp", "bytes": 8}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "a1", "kind": "allreduce", "group": "dp", "bytes": 8}]}]}])",
                        R"({"dp": [0, 1]})");
  const std::string msg = error_of([&] { analyze(w, "x.json"); });
  EXPECT_TRUE(contains(msg, "x.json: deadlock")) << msg;
  EXPECT_TRUE(contains(msg, "collective #1 on group 'dp'")) << msg;
  EXPECT_TRUE(contains(msg, "'b0'")) << msg;
  EXPECT_TRUE(contains(msg, "never by rank(s) 1")) << msg;
}

TEST(ExecutionGraph, MembersReachingDifferentCollectivesIsAnError) {
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "a1", "kind": "allgather", "group": "g", "bytes": 8}]}]}])",
                        R"({"g": [0, 1]})");
  const std::string msg = error_of([&] { analyze(w); });
  EXPECT_TRUE(contains(msg, "differs in kind")) << msg;
  EXPECT_TRUE(contains(msg, "'a0'") && contains(msg, "'a1'")) << msg;
}

TEST(ExecutionGraph, DifferentSizesOrRootsAreErrors) {
  Workload sizes = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "a1", "kind": "allreduce", "group": "g", "bytes": 9}]}]}])",
                            R"({"g": [0, 1]})");
  EXPECT_TRUE(contains(error_of([&] { analyze(sizes); }), "differs in size"));
  Workload roots = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a0", "kind": "broadcast", "group": "g", "bytes": 8, "root": 0}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "a1", "kind": "broadcast", "group": "g", "bytes": 8, "root": 1}]}]}])",
                            R"({"g": [0, 1]})");
  EXPECT_TRUE(contains(error_of([&] { analyze(roots); }), "differs in root"));
}

// The model times an instance by one member's configuration: members that pin different ones
// (or one pins and another does not) would be timed by whichever member comes first.
TEST(ExecutionGraph, MembersPinningDifferentConfigsAreAnError) {
  for (const char* second : {R"(, "config": {"nchannels": 32})", ""}) {
    Workload w = workload(fmt::format(R"([
      {{"rank": 0, "streams": [{{"stream": "m", "ops": [
          {{"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8,
            "config": {{"nchannels": 1}}}}]}}]}},
      {{"rank": 1, "streams": [{{"stream": "m", "ops": [
          {{"id": "a1", "kind": "allreduce", "group": "g", "bytes": 8{}}}]}}]}}])",
                                      second),
                          R"({"g": [0, 1]})");
    EXPECT_TRUE(contains(error_of([&] { analyze(w); }), "pin different NCCL configurations"))
        << second;
  }
  Workload same = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8, "config": {"algo": "Ring"}}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "a1", "kind": "allreduce", "group": "g", "bytes": 8, "config": {"algo": "Ring"}}]}]}])",
                           R"({"g": [0, 1]})");
  EXPECT_NO_THROW(analyze(same));
}

TEST(ExecutionGraph, CollectivesInCrossedOrderDeadlock) {
  // Rank 0 calls x then y; rank 1 calls y then x, on one stream each: each waits for the other.
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "x0", "kind": "allreduce", "group": "gx", "bytes": 8},
          {"id": "y0", "kind": "allreduce", "group": "gy", "bytes": 8}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "y1", "kind": "allreduce", "group": "gy", "bytes": 8},
          {"id": "x1", "kind": "allreduce", "group": "gx", "bytes": 8}]}]}])",
                        R"({"gx": [0, 1], "gy": [0, 1]})");
  const std::string msg = error_of([&] { analyze(w); });
  EXPECT_TRUE(contains(msg, "deadlock")) << msg;
  EXPECT_TRUE(contains(msg, "group 'gx'") && contains(msg, "group 'gy'")) << msg;
  EXPECT_TRUE(contains(msg, "rank 0 'x0'") && contains(msg, "rank 1 'y1'")) << msg;
}

TEST(ExecutionGraph, BlockingSendsBothWaysOnOneStreamDeadlock) {
  // The classic pipeline bug: each rank sends before it receives, on one stream.
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "s01", "kind": "send", "peer": 1, "bytes": 8},
          {"id": "r10", "kind": "recv", "peer": 1, "bytes": 8}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "s10", "kind": "send", "peer": 0, "bytes": 8},
          {"id": "r01", "kind": "recv", "peer": 0, "bytes": 8}]}]}])");
  const std::string msg = error_of([&] { analyze(w); });
  EXPECT_TRUE(contains(msg, "deadlock")) << msg;
  EXPECT_TRUE(contains(msg, "send/recv")) << msg;
}

TEST(ExecutionGraph, DependencyCycleNamesTheOps) {
  Workload w = workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "p", "kind": "compute", "duration_us": 1, "deps": ["r"]}]},
      {"stream": "b", "ops": [{"id": "q", "kind": "compute", "duration_us": 1, "deps": ["p"]},
                              {"id": "r", "kind": "compute", "duration_us": 1}]}]}])");
  const std::string msg = error_of([&] { analyze(w, "c.json"); });
  EXPECT_TRUE(contains(msg, "c.json: dependency cycle")) << msg;
  EXPECT_TRUE(contains(msg, "'p'") && contains(msg, "'q'") && contains(msg, "'r'")) << msg;
}

TEST(ExecutionGraph, SendWithoutRecvIsADeadlock) {
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "s", "kind": "send", "peer": 1, "bytes": 8}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": []}]}])");
  const std::string msg = error_of([&] { analyze(w); });
  EXPECT_TRUE(contains(msg, "'s'")) << msg;
  EXPECT_TRUE(contains(msg, "no matching recv")) << msg;
}

TEST(ExecutionGraph, RecvWithoutSendIsADeadlock) {
  Workload w = workload(R"([
      {"rank": 0, "streams": []},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "r", "kind": "recv", "peer": 0, "bytes": 8}]}]}])");
  EXPECT_TRUE(contains(error_of([&] { analyze(w); }), "no matching send"));
}

TEST(ExecutionGraph, MismatchedSendRecvSizesAreAnError) {
  Workload w = workload(R"([
      {"rank": 0, "streams": [{"stream": "m", "ops": [
          {"id": "s", "kind": "send", "peer": 1, "bytes": 8}]}]},
      {"rank": 1, "streams": [{"stream": "m", "ops": [
          {"id": "r", "kind": "recv", "peer": 0, "bytes": 4}]}]}])");
  const std::string msg = error_of([&] { analyze(w); });
  EXPECT_TRUE(contains(msg, "sends 8 bytes") && contains(msg, "receives 4 bytes")) << msg;
}

TEST(ExecutionGraph, DependentsAreTheReverseOfDeps) {
  Workload w = workload(R"([{"rank": 0, "streams": [
      {"stream": "a", "ops": [{"id": "p", "kind": "compute", "duration_us": 1}]},
      {"stream": "b", "ops": [{"id": "q", "kind": "compute", "duration_us": 1, "deps": ["p"]},
                              {"id": "r", "kind": "compute", "duration_us": 1, "deps": ["p"]}]}]}])");
  ExecutionGraph g = analyze(w);
  auto d = g.dependents(*w.find_op("p"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], *w.find_op("q"));
  EXPECT_EQ(d[1], *w.find_op("r"));
}

}  // namespace
}  // namespace lagom::traces
