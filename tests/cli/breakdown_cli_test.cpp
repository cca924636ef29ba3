// `lagom simulate`'s step breakdown and throughput: in --json a `breakdown` object whose `_us`
// fields sum to step_time_us (for the step and for every rank), tokens/s and TFLOP/s per GPU for
// generated steps, --tokens' training time and GPU-hours worked out from them, and readable
// durations in the summary.
#include <gtest/gtest.h>

#include <string>

#include "cli_json.hpp"
#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

double breakdown_sum(const nlohmann::json& b) {
  return b.at("compute_us").get<double>() + b.at("exposed_comm_us").get<double>() +
         b.at("pipeline_bubble_us").get<double>() + b.at("peer_wait_us").get<double>() +
         b.at("idle_us").get<double>();
}

void expect_breakdowns_sum(const nlohmann::json& j) {
  const double step = j.at("step_time_us").get<double>();
  EXPECT_NEAR(breakdown_sum(j.at("breakdown")), step, 1e-6);
  for (const auto& rank : j.at("ranks")) {
    EXPECT_NEAR(breakdown_sum(rank.at("breakdown")), step, 1e-6) << rank.at("rank");
    for (const char* key :
         {"compute_us", "exposed_comm_us", "pipeline_bubble_us", "peer_wait_us", "idle_us"}) {
      EXPECT_GE(rank.at("breakdown").at(key).get<double>(), 0.0) << key;
    }
  }
}

TEST(BreakdownCli, PartsSumToTheStepForWorkloadsAndGeneratedPipelines) {
  const CliRun pipeline = run_lagom({"simulate", "--workload", "builtin:pipeline-2stage",
                                     "--cluster", "dgx-h100", "--json", "--no-op-times"});
  ASSERT_EQ(pipeline.exit_code, 0) << pipeline.err;
  const nlohmann::json p = json_of(pipeline);
  expect_breakdowns_sum(p);
  EXPECT_GT(p.at("breakdown").at("pipeline_bubble_us").get<double>(), 0.0);

  const CliRun generated =
      run_lagom({"simulate", "--model", "llama3-8b", "--parallel", "tp=2,pp=4", "--cluster",
                 "dgx-h100", "--gbs", "8", "--seq", "1024", "--json", "--no-op-times"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const nlohmann::json g = json_of(generated);
  expect_breakdowns_sum(g);
  EXPECT_GT(g.at("breakdown").at("pipeline_bubble_us").get<double>(), 0.0);
  // compute_us is the breakdown's compute.
  EXPECT_EQ(g.at("compute_us"), g.at("breakdown").at("compute_us"));
}

TEST(BreakdownCli, ThroughputAndTrainingTimeFollowFromTheStep) {
  // 8 sequences of 1,024 tokens per step; 1e9 tokens take 1e9 / tokens_per_s seconds on 8 GPUs.
  const CliRun r = run_lagom({"simulate", "--model", "llama3-8b", "--parallel", "tp=2,pp=4",
                              "--cluster", "dgx-h100", "--gbs", "8", "--seq", "1024", "--json",
                              "--no-op-times", "--tokens", "1e9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = json_of(r);
  const double step_s = j.at("step_time_us").get<double>() * 1e-6;
  const nlohmann::json& t = j.at("throughput");
  EXPECT_DOUBLE_EQ(t.at("tokens_per_step").get<double>(), 8.0 * 1024);
  EXPECT_NEAR(t.at("tokens_per_s").get<double>(), 8.0 * 1024 / step_s, 1e-6);
  EXPECT_NEAR(t.at("tflops_per_gpu").get<double>(), j.at("flops").get<double>() / step_s / 8 / 1e12,
              1e-9);
  // MFU is TFLOP/s per GPU over the H100's 989 TFLOP/s (the profile's BF16 peak).
  EXPECT_NEAR(j.at("mfu").get<double>() * 989.0, t.at("tflops_per_gpu").get<double>(), 1.0);
  const nlohmann::json& train = j.at("training");
  EXPECT_NEAR(train.at("time_s").get<double>(), 1e9 / t.at("tokens_per_s").get<double>(), 1e-6);
  EXPECT_NEAR(train.at("gpu_hours").get<double>(), train.at("time_s").get<double>() / 3600 * 8,
              1e-9);

  const CliRun summary =
      run_lagom({"simulate", "--model", "llama3-8b", "--parallel", "tp=2,pp=4", "--cluster",
                 "dgx-h100", "--gbs", "8", "--seq", "1024", "--tokens", "1e9"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_TRUE(contains(summary.out,
                       "breakdown    per GPU (mean over ranks; sums to the step "
                       "time):"))
      << summary.out;
  EXPECT_TRUE(contains(summary.out, "  pipeline bubble")) << summary.out;
  EXPECT_TRUE(contains(summary.out, " ms\n")) << summary.out;  // step time in ms, not us
  EXPECT_TRUE(contains(summary.out, "tokens/s, ")) << summary.out;
  EXPECT_TRUE(contains(summary.out, "training     1e+09 tokens: ")) << summary.out;
  EXPECT_TRUE(contains(summary.out, "GPU-hours")) << summary.out;
}

TEST(BreakdownCli, TokensNeedAGeneratedStep) {
  const CliRun r = run_lagom({"simulate", "--cluster", "dgx-h100", "--tokens", "1e9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--tokens needs a generated step (--model)")) << r.err;
  const CliRun bad = run_lagom({"simulate", "--tokens", "lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "--tokens: expected a number from 1 to 1e+18 (tokens), got 'lots'"))
      << bad.err;
}

}  // namespace
}  // namespace lagom::test
