// The JSON workload format: what it accepts, the errors it gives, and round trips.
#include "lagom/traces/workload_json.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "strings.hpp"
#include "test_util.hpp"

namespace lagom::traces {
namespace {

using test::error_of;

std::string doc(std::string_view ranks, std::string_view groups = "{}") {
  return std::string(R"({"format": "lagom.workload", "version": 1, "groups": )") +
         std::string(groups) + R"(, "ranks": )" + std::string(ranks) + "}";
}

std::string one_op(std::string_view op) {
  return doc(std::string(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [)") + std::string(op) +
             "]}]}]");
}

TEST(WorkloadJson, ReadsAllFields) {
  Workload w = parse_workload_json(doc(R"([
      {"rank": 1, "streams": [{"stream": "comm", "ops": [
        {"id": "b1", "kind": "broadcast", "group": "g", "bytes": 64, "root": 0}]}]},
      {"rank": 0, "streams": [
        {"stream": "compute", "ops": [
          {"id": "c", "kind": "compute", "duration_us": 12.5, "bytes": 100, "args": {"note": 1}},
          {"id": "m", "kind": "memcpy", "bytes": 10, "deps": ["c"]}]},
        {"stream": "comm", "ops": [
          {"id": "b0", "kind": "broadcast", "group": "g", "bytes": 64, "root": 0, "deps": ["c"]}]}]}])",
                                       R"({"g": [0, 1]})"),
                                   "t.json");
  EXPECT_EQ(w.rank_count(), 2u);
  EXPECT_EQ(w.op_count(), 4u);
  ASSERT_EQ(w.streams().size(), 3u);
  // Streams are ordered by rank; rank 0's keep their file order.
  EXPECT_EQ(w.stream(0).rank, 0u);
  EXPECT_EQ(w.stream(0).name, "compute");
  EXPECT_EQ(w.stream(1).name, "comm");
  EXPECT_EQ(w.stream(2).rank, 1u);
  const OpId c = *w.find_op("c");
  EXPECT_EQ(w.kind(c), OpKind::kCompute);
  EXPECT_EQ(w.duration_ns(c), 12500);
  EXPECT_EQ(w.bytes(c), 100);
  const OpId m = *w.find_op("m");
  EXPECT_EQ(w.position(m), 1u);
  ASSERT_EQ(w.deps(m).size(), 1u);
  EXPECT_EQ(w.deps(m)[0], c);
  EXPECT_EQ(w.duration_ns(m), kNoDuration);
  const OpId b0 = *w.find_op("b0");
  EXPECT_EQ(w.peer(b0), 0);
  EXPECT_EQ(w.group_info(w.group(b0)).name, "g");
  EXPECT_EQ(w.describe(b0), "op 'b0' (rank 0, stream 'comm', #0)");
}

TEST(WorkloadJson, WriteThenReadGivesTheSameWorkload) {
  const std::string text = doc(R"([
      {"rank": 0, "streams": [
        {"stream": "compute", "ops": [
          {"id": "c", "kind": "compute", "duration_us": 0.001},
          {"id": "s", "kind": "send", "peer": 1, "bytes": 5, "group": "g", "duration_us": 3}]},
        {"stream": "comm", "ops": [
          {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 64, "deps": ["c"]}]}]},
      {"rank": 1, "streams": [{"stream": "comm", "ops": [
          {"id": "a1", "kind": "allreduce", "group": "g", "bytes": 64},
          {"id": "r", "kind": "recv", "peer": 0, "bytes": 5, "group": "g"}]}]}])",
                               R"({"g": [1, 0]})");
  const Workload w = parse_workload_json(text, "a.json");
  std::ostringstream once;
  write_workload_json(w, once);
  const Workload again = parse_workload_json(once.str(), "b.json");
  std::ostringstream twice;
  write_workload_json(again, twice);
  EXPECT_EQ(once.str(), twice.str());
  EXPECT_EQ(again.op_count(), w.op_count());
  EXPECT_EQ(again.group_info(0).ranks, (std::vector<Rank>{1, 0}));
  EXPECT_EQ(again.duration_ns(*again.find_op("c")), 1);
}

TEST(WorkloadJson, AFoldedGroupKeepsItsGpusAndMirrors) {
  // A folded communicator: rank 0 on GPU 0 of an instance spanning GPUs 0 and 8, standing also
  // for the instances on GPUs (1, 9) and (2, 10). Written back as it was read.
  const Workload w = parse_workload_json(
      doc(R"([{"rank": 0, "streams": []}])",
          R"({"a": {"ranks": [0], "gpus": [0, 8], "mirrors": [[1, 9], [2, 10]]}, "b": [0]})"),
      "f.json");
  const Group& a = w.group_info(0);
  EXPECT_EQ(a.mirrors, (std::vector<std::vector<std::uint32_t>>{{1, 9}, {2, 10}}));
  EXPECT_TRUE(a.folded());
  EXPECT_FALSE(w.group_info(1).folded());
  std::ostringstream out;
  write_workload_json(w, out);
  EXPECT_NE(out.str().find(R"("a": {"ranks": [0], "gpus": [0, 8], "mirrors": [[1, 9], [2, 10]]})"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(R"("b": [0])"), std::string::npos) << out.str();
  EXPECT_EQ(parse_workload_json(out.str(), "g.json").group_info(0).mirrors, a.mirrors);
}

TEST(WorkloadJson, PrecisionIsReadAndWrittenOnlyWhereItIsNotBf16) {
  const Workload w = parse_workload_json(doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
        {"id": "a", "kind": "compute", "flops": 8, "class": "gemm", "precision": "fp8"},
        {"id": "b", "kind": "compute", "flops": 8, "class": "gemm", "precision": "fp16"},
        {"id": "c", "kind": "compute", "flops": 8, "class": "gemm", "precision": "fp32"},
        {"id": "d", "kind": "compute", "flops": 8, "class": "gemm"}]}]}])",
                                             "{}"),
                                         "p.json");
  EXPECT_EQ(w.compute_shape(*w.find_op("a"))->precision, Precision::kFp8);
  EXPECT_EQ(w.compute_shape(*w.find_op("b"))->precision, Precision::kBf16);  // same tensor rate
  EXPECT_EQ(w.compute_shape(*w.find_op("c"))->precision, Precision::kFp32);
  EXPECT_EQ(w.compute_shape(*w.find_op("d"))->precision, Precision::kBf16);
  std::ostringstream out;
  write_workload_json(w, out);
  EXPECT_NE(
      out.str().find(
          R"("id": "a", "kind": "compute", "flops": 8.0, "class": "gemm", "precision": "fp8")"),
      std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(R"("id": "d", "kind": "compute", "flops": 8.0, "class": "gemm"})"),
            std::string::npos)
      << out.str();
}

struct BadCase {
  const char* name;
  std::string text;
  std::vector<std::string> expect;  // substrings of the message
};

class BadWorkload : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadWorkload, GivesAClearError) {
  const BadCase& c = GetParam();
  const std::string msg = error_of([&] {
    Workload w = parse_workload_json(c.text, "bad.json");
    analyze(w, "bad.json");
  });
  EXPECT_EQ(msg.rfind("bad.json", 0), 0u) << "message should start with the file: " << msg;
  for (const std::string& e : c.expect) {
    EXPECT_NE(msg.find(e), std::string::npos) << "expected '" << e << "' in: " << msg;
  }
}

const std::string kTwoRankAllReduce = R"([
    {"rank": 0, "streams": [{"stream": "m", "ops": [
        {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8, "duration_us": 1}]}]},
    {"rank": 1, "streams": [{"stream": "m", "ops": [
        {"id": "a1", "kind": "allreduce", "group": "g", "bytes": 8, "duration_us": 1}]}]}])";

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadWorkload,
    ::testing::Values(
        BadCase{"empty", "", {"empty"}}, BadCase{"whitespace", "  \n ", {"empty"}},
        BadCase{"not_json", "this is not json", {"not valid JSON", "line 1"}},
        BadCase{
            "truncated", doc(kTwoRankAllReduce).substr(0, 120), {"not valid JSON", "truncated"}},
        BadCase{"top_level_array", "[1, 2]", {"expected a JSON object"}},
        BadCase{"unknown_precision",
                doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
                      {"id": "q", "kind": "compute", "flops": 8, "precision": "fp4"}]}]}])",
                    "{}"),
                {"id 'q'", "unknown precision 'fp4'", "bf16, fp16, fp8, fp32"}},
        BadCase{"precision_on_a_collective",
                doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
                      {"id": "q", "kind": "allreduce", "group": "g", "bytes": 8,
                       "precision": "fp8"}]}]}])",
                    R"({"g": [0]})"),
                {"id 'q'", "takes no 'flops'", "'precision'"}},
        BadCase{"wrong_format",
                R"({"format": "chakra", "version": 1, "ranks": []})",
                {"'format' must be \"lagom.workload\""}},
        BadCase{"wrong_version",
                R"({"format": "lagom.workload", "version": 7, "ranks": []})",
                {"unsupported 'version' 7"}},
        BadCase{"missing_version",
                R"({"format": "lagom.workload", "ranks": []})",
                {"missing required field 'version'"}},
        BadCase{"no_ranks",
                R"({"format": "lagom.workload", "version": 1, "ranks": []})",
                {"'ranks' must be a non-empty array"}},
        BadCase{
            "unknown_top_field",
            R"({"format": "lagom.workload", "version": 1, "rnaks": [], "ranks": [{"rank": 0, "streams": []}]})",
            {"unknown field 'rnaks'"}},
        BadCase{"rank_twice",
                doc(R"([{"rank": 0, "streams": []}, {"rank": 0, "streams": []}])"),
                {"ranks[1]", "rank 0 is listed twice"}},
        BadCase{"rank_out_of_range",
                doc(R"([{"rank": 3, "streams": []}])"),
                {"ranks[0]", "must be 0..0"}},
        BadCase{"duplicate_op_id",
                one_op(R"({"id": "x", "kind": "compute", "duration_us": 1},
                          {"id": "x", "kind": "compute", "duration_us": 1})"),
                {"ops[1] (id 'x')", "duplicate op id 'x'",
                 "first defined at ranks[0].streams[0].ops[0]"}},
        BadCase{"unknown_kind",
                one_op(R"({"id": "x", "kind": "allreduse", "bytes": 8})"),
                {"ops[0] (id 'x')", "unknown op kind 'allreduse'", "allreduce"}},
        BadCase{"missing_kind", one_op(R"({"id": "x"})"), {"missing required field 'kind'"}},
        BadCase{"missing_id",
                one_op(R"({"kind": "compute"})"),
                {"ops[0]", "missing required field 'id'"}},
        BadCase{"missing_dep",
                one_op(R"({"id": "x", "kind": "compute", "duration_us": 1, "deps": ["nope"]})"),
                {"(id 'x')", "depends on 'nope'"}},
        BadCase{"self_dep",
                one_op(R"({"id": "x", "kind": "compute", "duration_us": 1, "deps": ["x"]})"),
                {"(id 'x')", "depends on itself"}},
        BadCase{"cycle",
                one_op(R"({"id": "x", "kind": "compute", "duration_us": 1, "deps": ["y"]},
                          {"id": "y", "kind": "compute", "duration_us": 1})"),
                {"dependency cycle", "'x'", "'y'"}},
        BadCase{"negative_bytes",
                one_op(R"({"id": "x", "kind": "memcpy", "bytes": -5})"),
                {"(id 'x')", "'bytes' must be >= 0, got -5"}},
        BadCase{"string_bytes",
                one_op(R"({"id": "x", "kind": "memcpy", "bytes": "32M"})"),
                {"(id 'x')", "'bytes' must be a non-negative integer", "\"32M\""}},
        BadCase{"fractional_bytes",
                one_op(R"({"id": "x", "kind": "memcpy", "bytes": 1.5})"),
                {"'bytes' must be a non-negative integer"}},
        BadCase{"negative_duration",
                one_op(R"({"id": "x", "kind": "compute", "duration_us": -1})"),
                {"(id 'x')", "'duration_us' must be >= 0"}},
        BadCase{"string_duration",
                one_op(R"({"id": "x", "kind": "compute", "duration_us": "fast"})"),
                {"'duration_us' must be a number"}},
        BadCase{"huge_duration",
                one_op(R"({"id": "x", "kind": "compute", "duration_us": 1e300})"),
                {"implausibly large"}},
        BadCase{"unknown_group",
                one_op(R"({"id": "x", "kind": "allreduce", "bytes": 8, "group": "tp"})"),
                {"(id 'x')", "unknown group 'tp'"}},
        BadCase{"collective_without_group",
                one_op(R"({"id": "x", "kind": "allreduce", "bytes": 8})"),
                {"an allreduce needs 'group'"}},
        BadCase{"collective_without_bytes",
                one_op(R"({"id": "x", "kind": "allgather", "group": "g"})"),
                {"an allgather needs 'bytes'"}},
        BadCase{"rank_not_in_group",
                doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
                      {"id": "x", "kind": "allreduce", "bytes": 8, "group": "g"}]}]},
                       {"rank": 1, "streams": []}])",
                    R"({"g": [1]})"),
                {"'x'", "not a member of group 'g'"}},
        BadCase{"group_with_unknown_rank",
                doc(R"([{"rank": 0, "streams": []}])", R"({"g": [0, 4]})"),
                {"groups.g", "rank 4 does not exist"}},
        BadCase{
            "group_rank_twice",
            doc(R"([{"rank": 0, "streams": []}, {"rank": 1, "streams": []}])", R"({"g": [1, 1]})"),
            {"groups.g", "lists rank 1 twice"}},
        BadCase{
            "rank_on_two_gpus",
            doc(R"([{"rank": 0, "streams": []}, {"rank": 1, "streams": []}])",
                R"({"a": {"ranks": [0, 1], "gpus": [0, 8]}, "b": {"ranks": [1], "gpus": [1]}})"),
            {"rank 1 runs on GPU 8 in group 'a' but on GPU 1 in group 'b'"}},
        BadCase{"rank_on_two_gpus_without_gpus",
                doc(R"([{"rank": 0, "streams": []}, {"rank": 1, "streams": []}])",
                    R"({"a": {"ranks": [0, 1], "gpus": [0, 8]}, "b": [0, 1]})"),
                {"rank 1 runs on GPU 8 in group 'a'", "give 'b' its 'gpus' too"}},
        BadCase{"two_ranks_one_gpu",
                doc(R"([{"rank": 0, "streams": []}, {"rank": 1, "streams": []}])",
                    R"({"a": {"ranks": [1], "gpus": [0, 5]}})"),
                {"ranks 0 and 1 would all run on GPU 0"}},
        BadCase{"mirror_of_another_size",
                doc(R"([{"rank": 0, "streams": []}])",
                    R"({"a": {"ranks": [0], "gpus": [0, 8], "mirrors": [[1, 9], [2]]}})"),
                {"groups.a", "mirror 1 lists 1 GPUs, but the group spans 2"}},
        BadCase{"mirror_overlapping_the_group",
                doc(R"([{"rank": 0, "streams": []}])",
                    R"({"a": {"ranks": [0], "gpus": [0, 8], "mirrors": [[1, 8]]}})"),
                {"groups.a", "GPU 8 is in two of its instances"}},
        BadCase{"mirror_on_a_simulated_gpu",
                doc(R"([{"rank": 0, "streams": []}, {"rank": 1, "streams": []}])",
                    R"({"a": {"ranks": [0], "mirrors": [[1]]}, "b": [1]})"),
                {"group 'a' has a mirror on GPU 1, where rank 1 runs"}},
        BadCase{"mirrors_not_arrays",
                doc(R"([{"rank": 0, "streams": []}])", R"({"a": {"ranks": [0], "mirrors": [3]}})"),
                {"groups.a",
                 "'mirrors' must be an array of GPU arrays (one per instance), got the number 3"}},
        BadCase{"send_without_peer",
                one_op(R"({"id": "x", "kind": "send", "bytes": 8})"),
                {"a send needs 'peer'"}},
        BadCase{"send_to_self",
                doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
                      {"id": "x", "kind": "send", "bytes": 8, "peer": 0}]}]}])"),
                {"'x'", "to its own rank 0"}},
        BadCase{"peer_on_compute",
                one_op(R"({"id": "x", "kind": "compute", "peer": 0})"),
                {"a compute takes no 'peer'"}},
        BadCase{"broadcast_without_root",
                doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
                      {"id": "x", "kind": "broadcast", "bytes": 8, "group": "g"}]}]}])",
                    R"({"g": [0]})"),
                {"a broadcast needs 'root'"}},
        BadCase{"unknown_op_field",
                one_op(R"({"id": "x", "kind": "compute", "duration": 5})"),
                {"(id 'x')", "unknown field 'duration'", "duration_us"}},
        BadCase{
            "duplicate_stream",
            doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": []}, {"stream": "s", "ops": []}]}])"),
            {"rank 0 has two streams named 's'"}},
        BadCase{"send_without_recv",
                doc(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
                      {"id": "x", "kind": "send", "bytes": 8, "peer": 1}]}]},
                       {"rank": 1, "streams": []}])"),
                {"deadlock", "'x'", "no matching recv"}},
        BadCase{"collective_never_reached",
                doc(R"([{"rank": 0, "streams": [{"stream": "m", "ops": [
                      {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8}]}]},
                       {"rank": 1, "streams": []}])",
                    R"({"g": [0, 1]})"),
                {"deadlock", "'a0'", "never by rank(s) 1"}},
        BadCase{"different_collectives",
                doc(R"([{"rank": 0, "streams": [{"stream": "m", "ops": [
                      {"id": "a0", "kind": "allreduce", "group": "g", "bytes": 8}]}]},
                       {"rank": 1, "streams": [{"stream": "m", "ops": [
                      {"id": "a1", "kind": "reducescatter", "group": "g", "bytes": 8}]}]}])",
                    R"({"g": [0, 1]})"),
                {"differs in kind", "allreduce", "reducescatter"}}),
    [](const ::testing::TestParamInfo<BadCase>& p) { return std::string(p.param.name); });

TEST(WorkloadJson, MissingFileIsAnError) {
  const std::string msg = error_of([] { load_workload_file("/nonexistent/w.json"); });
  EXPECT_NE(msg.find("/nonexistent/w.json"), std::string::npos) << msg;
}

TEST(WorkloadBuilder, GeneratedNamesWhenNoIdsAreGiven) {
  WorkloadBuilder b(1);
  const StreamId s = b.add_stream(0, "compute");
  b.add_op(s, OpSpec{OpKind::kCompute, 0, kNoGroup, kNoPeer, 5});
  b.add_op(s, OpSpec{OpKind::kCompute, 0, kNoGroup, kNoPeer, 5});
  Workload w = std::move(b).build();
  EXPECT_EQ(w.name(1), "r0/compute/1");
  EXPECT_EQ(*w.find_op("r0/compute/1"), 1u);
}

TEST(WorkloadBuilder, RenumbersOpsSoStreamsAreContiguous) {
  // Ops added interleaved across two streams come out grouped by stream, with deps remapped.
  WorkloadBuilder b(1);
  const StreamId a = b.add_stream(0, "a");
  const StreamId c = b.add_stream(0, "c");
  const OpId a0 = b.add_op(a, OpSpec{OpKind::kCompute, 0, kNoGroup, kNoPeer, 1}, "a0");
  const OpId c0 = b.add_op(c, OpSpec{OpKind::kCompute, 0, kNoGroup, kNoPeer, 1}, "c0");
  b.add_op(a, OpSpec{OpKind::kCompute, 0, kNoGroup, kNoPeer, 1}, "a1");
  b.add_dep(c0, a0);
  Workload w = std::move(b).build();
  EXPECT_EQ(w.name(0), "a0");
  EXPECT_EQ(w.name(1), "a1");
  EXPECT_EQ(w.name(2), "c0");
  ASSERT_EQ(w.deps(2).size(), 1u);
  EXPECT_EQ(w.deps(2)[0], 0u);
}

// Numbered ops are named r<rank>.n<number> like an id, for 8 bytes an op: unique per rank
// whatever order they come in, beside unnumbered ops, and checked with explicit ids when some
// ops have those.
TEST(WorkloadBuilder, NumberedOpsAreNamedAndCheckedLikeIds) {
  auto two_ranks = [](auto&& add) {
    WorkloadBuilder b(2);
    const StreamId s0 = b.add_stream(0, "compute");
    const StreamId s1 = b.add_stream(1, "compute");
    const StreamId c0 = b.add_stream(0, "comm");
    add(b, s0, s1, c0);
    return std::move(b).build();
  };
  const OpSpec k{OpKind::kCompute, 0, kNoGroup, kNoPeer, 1};
  // Descending numbers, the same number on two ranks, an unnumbered op, streams interleaved.
  const Workload w = two_ranks([&](WorkloadBuilder& b, StreamId s0, StreamId s1, StreamId c0) {
    b.set_number(b.add_op(s0, k), 9);
    b.set_number(b.add_op(s1, k), 9);
    b.set_number(b.add_op(c0, k), 4);
    b.add_op(s0, k);
  });
  EXPECT_EQ(w.name(0), "r0.n9");
  EXPECT_EQ(w.name(1), "r0/compute/1");
  EXPECT_EQ(w.name(2), "r0.n4");
  EXPECT_EQ(w.name(3), "r1.n9");
  EXPECT_EQ(*w.find_op("r1.n9"), 3u);
  // The same number twice on one rank, in order or not.
  for (const bool ascending : {true, false}) {
    const std::string e = test::error_of([&] {
      two_ranks([&](WorkloadBuilder& b, StreamId s0, StreamId, StreamId c0) {
        b.set_number(b.add_op(s0, k), ascending ? 3 : 8);
        b.set_number(b.add_op(c0, k), 8);
        b.set_number(b.add_op(s0, k), ascending ? 8 : 3);
      });
    });
    EXPECT_TRUE(test::contains(e, "duplicate op id 'r0.n8'")) << e;
  }
  // Beside explicit ids: written out, and a clash is a duplicate.
  const Workload mixed = two_ranks([&](WorkloadBuilder& b, StreamId s0, StreamId s1, StreamId) {
    b.add_op(s0, k, "fwd");
    b.set_number(b.add_op(s1, k), 2);
  });
  EXPECT_EQ(mixed.name(0), "fwd");
  EXPECT_EQ(mixed.name(1), "r1.n2");
  const std::string e = test::error_of([&] {
    two_ranks([&](WorkloadBuilder& b, StreamId s0, StreamId s1, StreamId) {
      b.add_op(s0, k, "r1.n2");
      b.set_number(b.add_op(s1, k), 2);
    });
  });
  EXPECT_TRUE(test::contains(e, "duplicate op id 'r1.n2'")) << e;
  // 2^64 - 1 marks an op without a number, so it cannot be one.
  WorkloadBuilder b(1);
  const OpId op = b.add_op(b.add_stream(0, "compute"), k);
  const std::string reserved =
      test::error_of([&] { b.set_number(op, std::numeric_limits<std::uint64_t>::max()); });
  EXPECT_TRUE(test::contains(reserved, "is reserved")) << reserved;
}

}  // namespace
}  // namespace lagom::traces
