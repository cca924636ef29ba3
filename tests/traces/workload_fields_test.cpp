// The workload format's optional model fields: pinned NCCL "config" on communication ops and the
// compute shape ("flops", "blocks", "blocks_per_sm", "class") on compute ops.
#include <gtest/gtest.h>

#include <sstream>

#include "lagom/traces/workload_json.hpp"
#include "test_util.hpp"

namespace lagom::traces {
namespace {

using test::error_of;

std::string one_rank(std::string_view ops) {
  return std::string(R"({"format": "lagom.workload", "version": 1, "groups": {"g": [0]},
    "ranks": [{"rank": 0, "streams": [{"stream": "s", "ops": [)") +
         std::string(ops) + "]}]}]}";
}

TEST(WorkloadFields, ReadsAndWritesConfigAndShape) {
  const std::string text = one_rank(
      R"({"id": "k", "kind": "compute", "flops": 1.5e12, "bytes": 4096, "blocks": 2560,
          "blocks_per_sm": 2, "class": "gemm"},
         {"id": "a", "kind": "allreduce", "group": "g", "bytes": 64,
          "config": {"algo": "Ring", "proto": "LL128", "nchannels": 4, "nthreads": 256,
                     "chunk_bytes": 131072}})");
  const Workload w = parse_workload_json(text, "f.json");
  const ComputeShape* s = w.compute_shape(*w.find_op("k"));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(*s, (ComputeShape{1.5e12, 2560, 2, ComputeClass::kGemm}));
  const nccl::ConfigOverride* c = w.pinned_config(*w.find_op("a"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(*c,
            (nccl::ConfigOverride{nccl::Algorithm::kRing, nccl::Protocol::kLL128, 4, 256, 131072}));
  EXPECT_EQ(w.compute_shape(*w.find_op("a")), nullptr);
  EXPECT_EQ(w.pinned_config(*w.find_op("k")), nullptr);
  // Written back and read again: the same fields.
  std::ostringstream out;
  write_workload_json(w, out);
  const Workload again = parse_workload_json(out.str(), "g.json");
  EXPECT_EQ(*again.compute_shape(*again.find_op("k")), *s);
  EXPECT_EQ(*again.pinned_config(*again.find_op("a")), *c);
}

TEST(WorkloadFields, EqualShapesAreStoredOnce) {
  // A generated step repeats a few shapes over every layer and micro-batch: one table entry each
  // (the simulation reads a shape per op it starts, and a small table stays in cache).
  const Workload w = parse_workload_json(
      one_rank(R"({"id": "a", "kind": "compute", "flops": 1e12, "blocks": 64, "class": "gemm"},
                 {"id": "b", "kind": "compute", "flops": 1e12, "blocks": 64, "class": "gemm"},
                 {"id": "c", "kind": "compute", "flops": 1e12, "blocks": 64, "class": "attention"},
                 {"id": "d", "kind": "compute", "flops": 1e12, "blocks": 64, "class": "gemm",
                  "precision": "fp8"})"),
      "f.json");
  const ComputeShape* a = w.compute_shape(*w.find_op("a"));
  const ComputeShape* b = w.compute_shape(*w.find_op("b"));
  const ComputeShape* c = w.compute_shape(*w.find_op("c"));
  const ComputeShape* d = w.compute_shape(*w.find_op("d"));
  ASSERT_TRUE(a && b && c && d);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  EXPECT_EQ(c->cls, ComputeClass::kAttention);
  EXPECT_EQ(d->precision, Precision::kFp8);
  EXPECT_EQ(*a, (ComputeShape{1e12, 64, 0, ComputeClass::kGemm}));
}

struct Bad {
  const char* name;
  std::string ops;
  const char* expect;
};

class BadFields : public ::testing::TestWithParam<Bad> {};

TEST_P(BadFields, AreClearErrors) {
  const std::string msg =
      error_of([&] { parse_workload_json(one_rank(GetParam().ops), "bad.json"); });
  EXPECT_EQ(msg.rfind("bad.json", 0), 0u) << msg;
  EXPECT_NE(msg.find(GetParam().expect), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadFields,
    ::testing::Values(
        Bad{"config_on_compute", R"({"id": "k", "kind": "compute", "config": {"algo": "Ring"}})",
            "takes no NCCL 'config'"},
        Bad{"config_unknown_key",
            R"({"id": "a", "kind": "allreduce", "group": "g", "bytes": 8,
                "config": {"algorithm": "Ring"}})",
            "unknown field 'algorithm'"},
        Bad{"config_zero_channels",
            R"({"id": "a", "kind": "allreduce", "group": "g", "bytes": 8,
                "config": {"nchannels": 0}})",
            "'nchannels' must be in 1.."},
        Bad{"config_unknown_algo",
            R"({"id": "a", "kind": "allreduce", "group": "g", "bytes": 8,
                "config": {"algo": "Rign"}})",
            ".config.algo: unknown algorithm 'Rign' (NCCL's: Tree, Ring,"},
        Bad{"config_unknown_proto",
            R"({"id": "a", "kind": "allreduce", "group": "g", "bytes": 8,
                "config": {"proto": "LL64"}})",
            ".config.proto: unknown protocol 'LL64' (NCCL's: LL, LL128, Simple)"},
        Bad{"config_not_object",
            R"({"id": "a", "kind": "allreduce", "group": "g", "bytes": 8, "config": "Ring"})",
            "'config' must be an object"},
        Bad{"flops_on_comm",
            R"({"id": "a", "kind": "allreduce", "group": "g", "bytes": 8, "flops": 10})",
            "takes no 'flops'"},
        Bad{"negative_flops", R"({"id": "k", "kind": "compute", "flops": -1})",
            "'flops' must be a non-negative number"},
        Bad{"zero_blocks", R"({"id": "k", "kind": "compute", "blocks": 0})",
            "'blocks' must be in 1.."},
        Bad{"too_many_blocks_per_sm", R"({"id": "k", "kind": "compute", "blocks_per_sm": 65})",
            "at most 64"},
        Bad{"unknown_class", R"({"id": "k", "kind": "compute", "class": "conv"})",
            "unknown compute class 'conv'"}),
    [](const ::testing::TestParamInfo<Bad>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace lagom::traces
