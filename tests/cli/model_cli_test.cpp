// `lagom simulate --model`: a generated step end to end, and the bad-input catalogue, each error
// naming the rule it breaks.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "strings.hpp"
#include "test_util.hpp"

namespace lagom::test {
namespace {

std::vector<std::string> simulate(std::vector<std::string> extra) {
  std::vector<std::string> args{"simulate"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(ModelCli, GeneratedStepReportsItsFigures) {
  // Phi-2 with FSDP over one node of cluster A, as in the paper's Table 2 (sequence shortened).
  CliRun r =
      run_lagom(simulate({"--model", "phi-2", "--parallel", "fsdp=8", "--cluster", "a40-nvlink",
                          "--mbs", "2", "--gbs", "16", "--seq", "512", "--json", "--no-op-times"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["step_time_us"].get<double>(), 0);
  EXPECT_GT(j["flops"].get<double>(), 0);
  EXPECT_GT(j["mfu"].get<double>(), 0);
  EXPECT_LT(j["mfu"].get<double>(), 1);
  EXPECT_GT(j["comm_bytes"]["allgather"].get<double>(), 0);
  EXPECT_GT(j["comm_bytes"]["reducescatter"].get<double>(), 0);
  EXPECT_EQ(j["comm_bytes"]["alltoall"].get<double>(), 0);
  const auto& mem = j["memory"];
  EXPECT_DOUBLE_EQ(j["memory_per_gpu_bytes"].get<double>(),
                   mem["weights_bytes"].get<double>() + mem["gradients_bytes"].get<double>() +
                       mem["optimizer_bytes"].get<double>() +
                       mem["activations_bytes"].get<double>() + mem["buffers_bytes"].get<double>());
  EXPECT_LT(j["memory_per_gpu_bytes"].get<double>(), 48e9);
  EXPECT_EQ(mem["activation_stage"], 0);
  EXPECT_EQ(mem["forward_passes_in_flight"], 1);  // no pipeline: one micro-batch at a time
  EXPECT_EQ(j["workload"]["ranks"], 8);

  // The summary says the same in words.
  CliRun text = run_lagom(simulate({"--model", "phi-2", "--parallel", "fsdp=8", "--cluster",
                                    "a40-nvlink", "--mbs", "2", "--gbs", "16", "--seq", "512"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "MFU")) << text.out;
  EXPECT_TRUE(contains(text.out, "GB per GPU")) << text.out;
}

TEST(ModelCli, APipelinedStepSaysWhereItsActivationsPeak) {
  // 8 micro-batches on pp=4: the first stage holds 4 forward passes (1F1B's warm-up and one).
  CliRun r = run_lagom(simulate({"--model", "phi-2", "--parallel", "pp=4,dp=2", "--cluster",
                                 "a40-nvlink", "--mbs", "1", "--gbs", "16", "--seq", "512"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, " for 4 forward passes in flight on stage 0, buffers 3.0)")) << r.out;
}

TEST(ModelCli, FoldingGivesTheSameStepTime) {
  // tp=8 x dp=2 on two nodes: folded, one replica of 8 ranks stands for both.
  const std::vector<std::string> base{"--model",   "phi-2",    "--parallel", "tp=8,dp=2",
                                      "--cluster", "a40-pcie", "--nodes",    "2",
                                      "--mbs",     "8",        "--gbs",      "32",
                                      "--seq",     "512",      "--json",     "--no-op-times"};
  CliRun full = run_lagom(simulate(base));
  std::vector<std::string> f = base;
  f.push_back("--fold");
  CliRun folded = run_lagom(simulate(f));
  ASSERT_EQ(full.exit_code, 0) << full.err;
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  const auto a = nlohmann::json::parse(full.out);
  const auto b = nlohmann::json::parse(folded.out);
  EXPECT_EQ(a["step_time_us"], b["step_time_us"]);
  EXPECT_EQ(b["workload"]["ranks"], 8);
  EXPECT_EQ(b["folded_replicas"], 2);
  EXPECT_DOUBLE_EQ(a["flops"].get<double>(), b["flops"].get<double>());
}

TEST(ModelCli, RecomputationIsNotCountedAsModelFlops) {
  // Full recomputation runs every layer's forward twice; the model FLOPs (and MFU's numerator)
  // stay those of one forward and one backward, so "flops" is unchanged and MFU drops with the
  // longer step.
  const std::vector<std::string> base{
      "--model", "phi-2", "--parallel", "tp=2,dp=4", "--cluster", "a40-nvlink", "--mbs",
      "1",       "--gbs", "8",          "--seq",     "512",       "--json",     "--no-op-times"};
  std::vector<std::string> rc = base;
  rc.push_back("--recompute");
  CliRun plain = run_lagom(simulate(base));
  CliRun recompute = run_lagom(simulate(rc));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(recompute.exit_code, 0) << recompute.err;
  const auto a = nlohmann::json::parse(plain.out);
  const auto b = nlohmann::json::parse(recompute.out);
  EXPECT_DOUBLE_EQ(a["flops"].get<double>(), b["flops"].get<double>());
  EXPECT_GT(b["step_time_us"].get<double>(), a["step_time_us"].get<double>());
  EXPECT_LT(b["mfu"].get<double>(), a["mfu"].get<double>());
}

TEST(ModelCli, Fp8ShortensAComputeBoundStepAndKeepsTheModelFlops) {
  // Llama 3 8B at tp=8 with SP on one H100 node: under --precision fp8 the linear GEMMs run
  // against the 1979 TFLOP/s FP8 peak, so the step is shorter and MFU (against the BF16 peak,
  // the convention) higher; the model FLOPs are the same. What a GPU without FP8 refuses is in
  // the bad-input catalogue.
  const std::vector<std::string> base{"--model",   "llama3-8b",    "--parallel", "tp=8,sp",
                                      "--cluster", "dgx-h100",     "--seq",      "2048",
                                      "--json",    "--no-op-times"};
  std::vector<std::string> f8 = base;
  f8.insert(f8.end(), {"--precision", "fp8"});
  CliRun a = run_lagom(simulate(base));
  CliRun b = run_lagom(simulate(f8));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out);
  const auto jb = nlohmann::json::parse(b.out);
  EXPECT_DOUBLE_EQ(ja["flops"].get<double>(), jb["flops"].get<double>());
  EXPECT_LT(jb["step_time_us"].get<double>(), ja["step_time_us"].get<double>());
  EXPECT_GT(jb["mfu"].get<double>(), ja["mfu"].get<double>());
  EXPECT_NE(jb.dump().find("fp8"), std::string::npos);
}

struct ModelCliBadCase {
  const char* what;
  std::vector<std::string> args;
  int exit_code;
  std::vector<std::string> says;
};

// The bad-input catalogue: each case exits 1 (2 for usage errors), prints nothing on stdout and
// names the rule on stderr.
const ModelCliBadCase kModelCliBadCases[] = {
    {"unknown model, listing the known ones",
     {"--model", "llama9-1t", "--parallel", "dp=8", "--cluster", "a40-nvlink"},
     1,
     {"llama9-1t", "llama3-8b", "phi-2"}},
    {"unknown parallel key",
     {"--model", "phi-2", "--parallel", "tp=8,xp=2", "--cluster", "a40-nvlink"},
     1,
     {"unknown key 'xp'"}},
    {"cp not splitting the sequence",
     {"--model", "phi-2", "--parallel", "tp=2,cp=4", "--seq", "1004", "--cluster", "a40-nvlink"},
     1,
     {"cp=4 needs the sequence (1004 tokens) to split into 2 x cp = 8 equal chunks"}},
    {"tp not dividing the heads (GPT-3 13B has 40)",
     {"--model", "gpt3-13b", "--parallel", "tp=16", "--cluster", "a40-nvlink", "--nodes", "2"},
     1,
     {"tp=16 does not divide the 40 attention heads"}},
    {"pp not dividing the layers (DeepSeek-MoE has 28)",
     {"--model", "deepseek-moe-16b", "--parallel", "pp=8", "--cluster", "a40-nvlink"},
     1,
     {"pp=8 x vpp=1 = 8 stages do not divide the 28 layers"}},
    {"ep on a dense model",
     {"--model", "llama3-8b", "--parallel", "ep=8", "--cluster", "a40-nvlink"},
     1,
     {"ep=8 needs a mixture-of-experts model; llama3-8b is dense"}},
    {"ep not dividing the experts (Mixtral has 8)",
     {"--model", "mixtral-8x7b", "--parallel", "ep=16", "--cluster", "a40-nvlink", "--nodes", "2"},
     1,
     {"ep=16 does not divide the 8 experts"}},
    {"gbs not a multiple of mbs x dp",
     {"--model", "phi-2", "--parallel", "fsdp=8", "--cluster", "a40-nvlink", "--mbs", "2", "--gbs",
      "12"},
     1,
     {"--gbs 12 is not a multiple of --mbs 2 x data-parallel degree 8 = 16"}},
    {"degrees for two nodes on one",
     {"--model", "phi-2", "--parallel", "tp=8,dp=2", "--cluster", "a40-nvlink"},
     1,
     {"uses 16 GPUs but the cluster has 8", "--nodes 2"}},
    {"degrees that are no number of nodes",
     {"--model", "phi-2", "--parallel", "tp=4,dp=3", "--cluster", "a40-nvlink"},
     1,
     {"uses 12 GPUs but the cluster has 8", "not a multiple of the 8 GPUs per node"}},
    {"a model that does not fit",
     {"--model", "llama3-70b", "--parallel", "dp=8", "--cluster", "a40-nvlink"},
     1,
     {"does not fit in GPU memory", "GB needed", "> 48.3 GB"}},
    {"--model without --cluster",
     {"--model", "phi-2", "--parallel", "fsdp=8"},
     2,
     {"--model needs --cluster"}},
    {"--workload with --model",
     {"--model", "phi-2", "--parallel", "fsdp=8", "--cluster", "a40-nvlink", "--workload",
      "builtin:fsdp-4gpu"},
     2,
     {"alternatives"}},
    {"--model without --parallel",
     {"--model", "phi-2", "--cluster", "a40-nvlink"},
     1,
     {"--model needs --parallel"}},
    {"--parallel without --model", {"--parallel", "tp=8"}, 2, {"--parallel", "--model"}},
    {"Domino without tp",
     {"--model", "phi-2", "--parallel", "fsdp=8", "--cluster", "a40-nvlink", "--mbs", "2", "--gbs",
      "16", "--overlap", "domino"},
     1,
     {"Domino overlap splits TP communication: it needs tp > 1"}},
    {"two-batch without ep",
     {"--model", "olmoe-1b-7b", "--parallel", "tp=8", "--cluster", "a40-nvlink", "--mbs", "2",
      "--overlap", "two-batch"},
     1,
     {"two-batch overlap hides expert all-to-alls: it needs a MoE model and ep > 1"}},
    {"odd micro-batch with overlap",
     {"--model", "phi-2", "--parallel", "tp=8", "--cluster", "a40-nvlink", "--mbs", "1",
      "--overlap", "domino"},
     1,
     {"Domino overlap splits each micro-batch in two: --mbs 1 is odd"}},
    {"unknown overlap",
     {"--model", "phi-2", "--parallel", "tp=8", "--cluster", "a40-nvlink", "--overlap", "both"},
     1,
     {"--overlap 'both'", "none, domino or two-batch"}},
    {"unknown precision",
     {"--model", "phi-2", "--parallel", "tp=8", "--cluster", "a40-nvlink", "--precision", "fp4"},
     1,
     {"--precision 'fp4'", "bf16, fp16, fp8 or fp32"}},
    {"unknown recomputation",
     {"--model", "phi-2", "--parallel", "tp=8", "--cluster", "a40-nvlink", "--recompute",
      "partial"},
     1,
     {"--recompute 'partial': expected full, selective or none"}},
    {"fp8 on a GPU without FP8 tensor cores",
     {"--model", "phi-2", "--parallel", "tp=8", "--cluster", "a40-nvlink", "--precision", "fp8"},
     1,
     {"L0.attn.qkv.fwd", "fp8 gemm kernel needs FP8 tensor cores", "'a40'", "gpu.fp8_TFLOPS is 0"}},
    {"fp8 parameter gathers without a model",
     {"--cluster", "a40-nvlink", "--fp8-param-gather"},
     2,
     {"--fp8-param-gather describe a generated step: they need --model"}},
    {"fp8 parameter gathers without fp8",
     {"--model", "phi-2", "--parallel", "fsdp=8", "--cluster", "a40-nvlink", "--fp8-param-gather"},
     1,
     {"--fp8-param-gather gathers FP8 weights: it needs --precision fp8"}},
    {"fp8 parameter gathers without a parameter gather",
     {"--model", "phi-2", "--parallel", "dp=8", "--cluster", "a40-nvlink", "--precision", "fp8",
      "--fp8-param-gather"},
     1,
     {"it needs ZeRO (zero=1, 2) or FSDP"}},
};

class ModelCliBadInput : public ::testing::TestWithParam<ModelCliBadCase> {};

TEST_P(ModelCliBadInput, ExitsNamingTheRule) {
  const ModelCliBadCase& c = GetParam();
  CliRun r = run_lagom(simulate(c.args));
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const std::string& s : c.says) {
    EXPECT_TRUE(contains(r.err, s)) << "expected '" << s << "' in: " << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, ModelCliBadInput, ::testing::ValuesIn(kModelCliBadCases),
                         case_name<ModelCliBadCase>);

TEST(ModelCli, ListModels) {
  CliRun r = run_lagom({"simulate", "--list-models"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "llama3-8b\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "olmoe-1b-7b\n")) << r.out;
}

}  // namespace
}  // namespace lagom::test
