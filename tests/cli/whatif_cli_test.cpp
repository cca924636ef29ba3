// What-if overrides (--set, --scale) and `lagom cluster --export`: they change the answer, are
// recorded in the report, read back, and every mistake is an error naming the path.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

double comm_time_us(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"comm",     "--coll", "allreduce", "--cluster",
                                   "dgx-h100", "-b",     "1G",        "-e",
                                   "1G",       "--algo", "Ring",      "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliRun r = run_lagom(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out)["rows"][0]["time_us"].get<double>();
}

TEST(WhatIfCli, ClusterAndProfileOverridesChangeTheAnswer) {
  const double base = comm_time_us({});
  // Twice the NVLink bandwidth: the 1 GiB ring all-reduce is link-bound, so it gets faster.
  EXPECT_LT(comm_time_us({"--scale", "intra_node.nvlink.link_bandwidth_GBps=2"}), 0.8 * base);
  // The same through --set.
  EXPECT_DOUBLE_EQ(comm_time_us({"--set", "intra_node.nvlink.link_bandwidth_GBps=50"}),
                   comm_time_us({"--scale", "intra_node.nvlink.link_bandwidth_GBps=2"}));
  // A profile field is recorded in the context as written.
  const CliRun r =
      run_lagom({"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "-b", "1G", "-e", "1G",
                 "--algo", "Ring", "--json", "--scale", "gpu.hbm_GBps=0.01"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["context"]["overrides"][0], "--scale gpu.hbm_GBps=0.01");
}

TEST(WhatIfCli, SimulateRecordsOverridesAndASlowerGpuIsSlower) {
  const std::vector<std::string> base = {"simulate",   "--model", "phi-2",
                                         "--parallel", "fsdp=8",  "--cluster",
                                         "a40-nvlink", "--json",  "--no-op-times"};
  const CliRun a = run_lagom(base);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::vector<std::string> slower = base;
  slower.insert(slower.end(),
                {"--scale", "gpu.bf16_TFLOPS=0.5", "--set", "cpu.interconnect_bandwidth_GBps=8"});
  const CliRun b = run_lagom(slower);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out);
  const auto jb = nlohmann::json::parse(b.out);
  EXPECT_GT(jb["step_time_us"].get<double>(), 1.2 * ja["step_time_us"].get<double>());
  EXPECT_FALSE(ja["context"].contains("overrides"));
  // --set first, then --scale, each as written.
  EXPECT_EQ(jb["context"]["overrides"],
            nlohmann::json::array(
                {"--set cpu.interconnect_bandwidth_GBps=8", "--scale gpu.bf16_TFLOPS=0.5"}));
}

TEST(WhatIfCli, ExportedClusterReadsBackToTheSameStep) {
  TempDir dir;
  const std::string file = (dir.path() / "a40-800g.json").string();
  CliRun r = run_lagom({"cluster", "a40-nvlink", "--nodes", "2", "--set",
                        "network.nic_speed_Gbps=800", "--export", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "2x 800 Gb/s")) << r.out;
  const std::vector<std::string> step = {"simulate",   "--model", "llama3-8b",
                                         "--parallel", "fsdp=16", "--seq",
                                         "4096",       "--json",  "--no-op-times"};
  std::vector<std::string> from_file = step;
  from_file.insert(from_file.end(), {"--cluster", file});
  std::vector<std::string> from_flags = step;
  from_flags.insert(from_flags.end(), {"--cluster", "a40-nvlink", "--nodes", "2", "--set",
                                       "network.nic_speed_Gbps=800"});
  const CliRun a = run_lagom(from_file);
  const CliRun b = run_lagom(from_flags);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["step_time_us"],
            nlohmann::json::parse(b.out)["step_time_us"]);
  EXPECT_EQ(nlohmann::json::parse(a.out)["fingerprint"],
            nlohmann::json::parse(b.out)["fingerprint"]);
}

TEST(WhatIfCli, MistakesNameThePath) {
  const std::vector<std::string> base = {"simulate", "--model",   "phi-2",     "--parallel",
                                         "fsdp=8",   "--cluster", "a40-nvlink"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_lagom(args);
  };
  CliRun r = run({"--set", "network.nic_speed_gbps=800"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "no field 'network.nic_speed_gbps'")) << r.err;
  EXPECT_TRUE(contains(r.err, "nearest: network.nic_speed_Gbps")) << r.err;
  r = run({"--set", "gpu.type=3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "'gpu.type' is a string, not a number")) << r.err;
  r = run({"--scale", "network.nic_speed_Gbps=fast"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "the factor must be a positive number")) << r.err;
  r = run({"--set", "network.nic_speed_Gbps"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "expected PATH=VALUE")) << r.err;
  // Validation runs after the override: an impossible value is the reader's error.
  r = run({"--set", "network.nic_speed_Gbps=-5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "network.nic_speed_Gbps: must be >= 0.008 and at most 800000 Gb/s"))
      << r.err;
  // Both documents have a description: the prefix decides.
  r = run({"--set", "description=x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "write cluster.description or profile.description")) << r.err;
  r = run({"--set", "cluster.description=x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The node count has one source, and a measured value's source follows its value.
  r = run({"--nodes", "1", "--set", "nodes.count=2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "both set the node count")) << r.err;
  r = run({"--set", "contention.l2_pollution.source=measured"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "a measured value's source records where it came from")) << r.err;
  r = run({"--scale", "network.nic_speed_Gbps=1e308"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "is not a finite number")) << r.err;
  r = run({"--seq", "-5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--seq: expected an integer from 1 to 16777216 (tokens), got '-5'"))
      << r.err;
  // lagom cluster takes cluster fields only.
  r = run_lagom({"cluster", "a40-nvlink", "--set", "gpu.sms=10"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "is a field of the profile")) << r.err;
}

// Stragglers and failures (--slow-gpu, --slow-link, --down-node) on a generated step: each
// changes the answer the way it must, is recorded in the context, and refuses what it cannot do.
TEST(WhatIfCli, StragglersAndADownNode) {
  const std::vector<std::string> base = {
      "simulate",  "--model",  "llama3-8b", "--parallel", "tp=8,dp=2", "--gbs",        "4",
      "--cluster", "dgx-h100", "--nodes",   "2",          "--json",    "--no-op-times"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_lagom(args);
  };
  auto step_us = [](const CliRun& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["step_time_us"].get<double>();
  };
  const CliRun plain = run({});
  const double t0 = step_us(plain);
  // One GPU of sixteen at 1/1.5 speed: the synchronous step waits for it. Compute is most of this
  // step, so the step takes well over 1.3x, and it can never take more than 1.5x.
  const CliRun slow_gpu = run({"--slow-gpu", "11=1.5"});
  const double t1 = step_us(slow_gpu);
  EXPECT_GT(t1, 1.3 * t0);
  EXPECT_LE(t1, 1.5 * t0);
  EXPECT_EQ(nlohmann::json::parse(slow_gpu.out)["context"]["overrides"][0], "--slow-gpu 11=1.5");
  // A NIC of node 1 at a tenth of its bandwidth: the data-parallel all-reduce crosses it.
  const double t2 = step_us(run({"--slow-link", "node1/nic3-leaf3=10"}));
  EXPECT_GT(t2, t0);
  // Node 1 down: replica 1 is dropped; replica 0 runs alone (no data-parallel all-reduce), with
  // half the global batch: the step is no slower, the tokens per step halve.
  const CliRun down = run({"--down-node", "1"});
  const double t3 = step_us(down);
  EXPECT_LE(t3, t0);
  const auto jd = nlohmann::json::parse(down.out);
  const auto jp = nlohmann::json::parse(plain.out);
  EXPECT_DOUBLE_EQ(jd["throughput"]["tokens_per_step"].get<double>(),
                   jp["throughput"]["tokens_per_step"].get<double>() / 2);
  EXPECT_TRUE(contains(jd["context"]["generated"].get<std::string>(),
                       "node 1 down: 1 of the 2 data-parallel replicas of tp=8,dp=2 dropped "
                       "(replica 1, 8 GPUs idle), gbs 4 -> 2"))
      << jd["context"].dump();
  // Refusals: folding a step whose replicas differ, a down node without a generated step, a
  // malformed value.
  CliRun r = run({"--slow-gpu", "3=2", "--fold"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "leave out --fold")) << r.err;
  r = run_lagom({"simulate", "--cluster", "dgx-h100", "--down-node", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "it needs a generated step (--model)")) << r.err;
  r = run({"--slow-gpu", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "--slow-gpu '3': expected GPU=FACTOR")) << r.err;
  r = run({"--slow-link", "node1/nic3=2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "expected A-B=FACTOR")) << r.err;
  r = run({"--down-node", "0", "--down-node", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "no data-parallel replica is left")) << r.err;
  // Commands that would accept a what-if and ignore it refuse it instead.
  r = run_lagom({"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "--down-node", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--down-node does not apply here")) << r.err;
  r = run_lagom({"overlap", "--cluster", "dgx-h100", "--compute", "gemm:m=4096,n=4096,k=4096",
                 "--slow-gpu", "3=2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--slow-gpu does not apply here")) << r.err;
  r = run({"--slow-gpu", "12=2", "--down-node", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "GPU 12 is on node 1, which --down-node takes out")) << r.err;
  r = run_lagom({"tune", "--model", "llama3-8b", "--parallel", "tp=8,dp=2", "--gbs", "4",
                 "--cluster", "dgx-h100", "--nodes", "2", "--fold", "--slow-gpu", "3=2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "leave out --fold")) << r.err;
  // A slow GPU that runs nothing: the built-in 4-rank step on an 8-GPU node leaves GPU 6 idle.
  r = run_lagom({"simulate", "--cluster", "dgx-h100", "--slow-gpu", "6=2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "--slow-gpu 6=2: GPU 6 runs no rank of this step")) << r.err;
  // export honours --down-node: the exported step is the one simulate runs.
  TempDir dir;
  const std::string file = (dir.path() / "down.json").string();
  r = run_lagom({"export", "--format", "json", "--out", file, "--model", "llama3-8b", "--parallel",
                 "tp=8,dp=2", "--gbs", "4", "--cluster", "dgx-h100", "--nodes", "2", "--down-node",
                 "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(8 ranks,")) << r.out;
  // A workload with measured communication: a slower link cannot slow it, and says so.
  r = run_lagom(
      {"simulate", "--cluster", "dgx-h100", "--slow-link", "node0/gpu1-node0/nvswitch0=2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "carry a measured duration_us, which a slower link does not change"))
      << r.err;
}

TEST(WhatIfCli, PlacementAndSpineOversubscription) {
  // Llama 3 8B, tp=8 dp=4 on four nodes of the SuperPOD's node, one leaf per two nodes (16 NIC
  // ports, no rails) at 2:1: packed, the data-parallel rings cross between leaves twice (1 -> 2,
  // 3 -> 0), and each leaf's 8 uplinks carry its 8 rings' one crossing each way. Placed as nodes
  // 0, 2, 1, 3 every hop crosses: 16 flows on 8 uplinks, and the step slows.
  TempDir tmp;
  const std::string placement = (tmp.path() / "place.json").string();
  std::ofstream(placement)
      << R"({"format": "lagom.placement", "version": 1, "nodes": [0, 2, 1, 3]})";
  const std::vector<std::string> base = {"simulate",
                                         "--model",
                                         "llama3-8b",
                                         "--parallel",
                                         "tp=8,dp=4",
                                         "--cluster",
                                         "superpod-h100",
                                         "--nodes",
                                         "4",
                                         "--set",
                                         "network.fabric.rails=false",
                                         "--set",
                                         "network.fabric.nodes_per_leaf=2",
                                         "--json",
                                         "--no-op-times"};
  auto step_us = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = run_lagom(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["step_time_us"].get<double>();
  };
  const double packed = step_us({});
  const double packed_2to1 = step_us({"--set", "network.fabric.oversubscription=[2]"});
  const double placed_2to1 =
      step_us({"--set", "network.fabric.oversubscription=[2]", "--placement", placement});
  const double placed_1to1 = step_us({"--placement", placement});
  EXPECT_DOUBLE_EQ(packed_2to1, packed);  // one crossing per uplink: 2:1 still keeps up
  EXPECT_DOUBLE_EQ(placed_1to1, packed);  // non-blocking: where the ranks sit does not matter
  EXPECT_GT(placed_2to1, 1.2 * packed);

  // --fold assumes alike replicas; a placement may break that.
  const CliRun fold =
      run_lagom({"simulate", "--model", "llama3-8b", "--parallel", "tp=8,dp=4", "--cluster",
                 "superpod-h100", "--nodes", "4", "--fold", "--placement", placement});
  EXPECT_EQ(fold.exit_code, 2) << fold.err;
  EXPECT_NE(fold.err.find("--placement can make data-parallel replicas differ"), std::string::npos)
      << fold.err;
  // A placement for another cluster size.
  const CliRun wrong =
      run_lagom({"simulate", "--model", "llama3-8b", "--parallel", "tp=8,dp=8", "--cluster",
                 "superpod-h100", "--nodes", "8", "--placement", placement});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("nodes: expected an array of 8 node numbers"), std::string::npos)
      << wrong.err;
}

TEST(WhatIfCli, FoldingStopsAtAnOversubscribedFabric) {
  // Folding simulates one data-parallel replica: on an oversubscribed fabric the others' traffic
  // through the shared tier would be missing. --fold is refused there, and a search (which folds
  // on its own) runs unfolded, so it reports the unfolded step.
  const std::vector<std::string> base = {"--model",    "llama3-8b",
                                         "--parallel", "tp=8,pp=2,dp=4",
                                         "--cluster",  "superpod-h100",
                                         "--nodes",    "8",
                                         "--set",      "network.fabric.nodes_per_leaf=4"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), base.begin(), base.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return run_lagom(head);
  };
  const std::vector<std::string> four = {"--set", "network.fabric.oversubscription=[4]"};
  const CliRun fold = with({"simulate", "--fold"}, four);
  EXPECT_EQ(fold.exit_code, 2);
  EXPECT_NE(fold.err.find("but the fabric is oversubscribed (leaf uplinks at 4:1"),
            std::string::npos)
      << fold.err;
  const CliRun sim = with({"simulate", "--json", "--no-op-times"}, four);
  const CliRun tune = with({"tune", "--method", "nccl", "--json"}, four);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const auto t = nlohmann::json::parse(tune.out);
  EXPECT_FALSE(t["context"].contains("folded_replicas"));
  EXPECT_EQ(t["step_time_us"], nlohmann::json::parse(sim.out)["step_time_us"]);
  // Exporting such a folded step is refused too (it would be refused when simulated).
  TempDir tmp;
  const CliRun exported = with(
      {"export", "--format", "json", "--out", (tmp.path() / "f.json").string(), "--fold"}, four);
  EXPECT_EQ(exported.exit_code, 2) << exported.err;
  // Where GPUs see the node differently (a40-pcie: one NIC behind GPUs 0 and 1) the replicas'
  // mirrored communicators would not run as replica 0's: close, not exact, and a warning.
  const CliRun shared =
      run_lagom({"simulate", "--model", "phi-2", "--parallel", "tp=2,pp=2,dp=4", "--gbs", "16",
                 "--cluster", "a40-pcie", "--nodes", "2", "--fold"});
  EXPECT_EQ(shared.exit_code, 0) << shared.err;
  EXPECT_NE(shared.err.find("warning: folding on 'a40-pcie', where local GPUs 0 and 2 see the "
                            "node differently"),
            std::string::npos)
      << shared.err;
  // A step of tensor parallelism alone across those two nodes folds exactly (one rank for the
  // 16; docs/models.md §8): no replica shares a NIC, so no warning, and --strict passes.
  const CliRun tp_only = run_lagom({"compare", "--model", "phi-2", "--parallel", "tp=16", "--mbs",
                                    "2", "--gbs", "4", "--seq", "256", "--cluster", "a40-pcie",
                                    "--nodes", "2", "--methods", "nccl", "--json", "--strict"});
  EXPECT_EQ(tp_only.exit_code, 0) << tp_only.err;
  EXPECT_EQ(tp_only.err.find("warning"), std::string::npos) << tp_only.err;
  EXPECT_EQ(nlohmann::json::parse(tp_only.out)["context"]["folded_replicas"], 16);
  // Non-blocking, the search folds the 4 replicas and the 8 tensor-parallel ranks (a DGX H100
  // node's GPUs are alike: a NIC each; their data-parallel and pipeline communicators mirror
  // tensor-parallel rank 0's) and gets the same step as unfolded.
  const CliRun tune11 = with({"tune", "--method", "nccl", "--json"}, {});
  ASSERT_EQ(tune11.exit_code, 0) << tune11.err;
  EXPECT_EQ(nlohmann::json::parse(tune11.out)["context"]["folded_replicas"], 32);
  // Its classes count the whole step's calls, folded or not.
  const CliRun unfolded = with({"tune", "--method", "nccl", "--json", "--no-fold"}, {});
  ASSERT_EQ(unfolded.exit_code, 0) << unfolded.err;
  const auto calls = [](const CliRun& r) {
    std::vector<std::int64_t> out;
    const auto j = nlohmann::json::parse(r.out);  // alive through the loop
    for (const auto& c : j["classes"]) {
      out.push_back(c["calls"].get<std::int64_t>());
    }
    return out;
  };
  EXPECT_EQ(calls(tune11), calls(unfolded));
  EXPECT_EQ(nlohmann::json::parse(tune11.out)["step_time_us"],
            nlohmann::json::parse(unfolded.out)["step_time_us"]);
}

TEST(WhatIfCli, ReplicasThatShareNodesFoldOnlyWhenAsked) {
  // Phi-2 tp=2,dp=8 on two DGX A100 nodes: 4 replicas of 2 GPUs a node, whose tensor-parallel
  // pairs sit at different places of the data-parallel tree's chain. A search does not fold
  // them (same step as --no-fold); --fold is the user's choice, with a warning.
  const std::vector<std::string> step = {"--model", "phi-2",     "--parallel", "tp=2,dp=8", "--seq",
                                         "512",     "--cluster", "dgx-a100",   "--nodes",   "2"};
  auto run = [&](std::vector<std::string> head) {
    head.insert(head.end(), step.begin(), step.end());
    return run_lagom(head);
  };
  const CliRun tune = run({"tune", "--method", "nccl", "--json"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  EXPECT_FALSE(nlohmann::json::parse(tune.out)["context"].contains("folded_replicas"));
  EXPECT_EQ(tune.err.find("warning"), std::string::npos) << tune.err;
  const CliRun folded = run({"simulate", "--fold"});
  EXPECT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_NE(folded.err.find("communicator 'tp0' shares nodes with the instances it stands for"),
            std::string::npos)
      << folded.err;
  // Replicas whose size is a multiple of a node's GPUs can still interleave on nodes: pipeline
  // stages are the layout's outermost axis, so tp=2,pp=4,dp=8 puts 4 replicas' stage-0 pairs on
  // each node (a review found a search folding it, AutoCCL's step 3.6% off). Not folded either.
  const CliRun staged = run_lagom({"tune", "--method", "nccl", "--json", "--model", "phi-2",
                                   "--parallel", "tp=2,pp=4,dp=8", "--seq", "256", "--gbs", "32",
                                   "--cluster", "dgx-a100", "--nodes", "8"});
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  EXPECT_FALSE(nlohmann::json::parse(staged.out)["context"].contains("folded_replicas"));
  // Replicas that fill whole nodes fold without a warning, on cluster B too: their mirrors are
  // on other nodes, which share nothing with the instance.
  const CliRun whole = run_lagom({"tune", "--method", "nccl", "--json", "--model", "phi-2",
                                  "--parallel", "tp=8,dp=2", "--seq", "256", "--gbs", "16",
                                  "--cluster", "a40-pcie", "--nodes", "2", "--strict"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(nlohmann::json::parse(whole.out)["context"]["folded_replicas"], 2);
  // A replica across two leaf groups of a SuperPOD (its pipeline sends cross the spine, replica
  // 0's do not) differs too: a search runs it unfolded, --fold warns (a review found 0.055%).
  const std::vector<std::string> straddle = {
      "--model", "phi-2", "--parallel", "tp=8,pp=2,dp=20", "--seq",   "512",
      "--gbs",   "40",    "--cluster",  "superpod-h100",   "--nodes", "40"};
  std::vector<std::string> tune_args = {"tune", "--method", "nccl", "--json"};
  tune_args.insert(tune_args.end(), straddle.begin(), straddle.end());
  const CliRun spine = run_lagom(tune_args);
  ASSERT_EQ(spine.exit_code, 0) << spine.err;
  EXPECT_FALSE(nlohmann::json::parse(spine.out)["context"].contains("folded_replicas"));
  std::vector<std::string> fold_args = {"simulate", "--fold"};
  fold_args.insert(fold_args.end(), straddle.begin(), straddle.end());
  const CliRun spine_fold = run_lagom(fold_args);
  EXPECT_EQ(spine_fold.exit_code, 0) << spine_fold.err;
  EXPECT_NE(spine_fold.err.find("are joined by other links than its own GPUs"), std::string::npos)
      << spine_fold.err;
  // A folded workload file warns when replayed where its mirrors would differ (cluster B).
  TempDir tmp;
  const std::string file = (tmp.path() / "f.json").string();
  const CliRun exported = run_lagom({"export", "--format", "json", "--out", file, "--fold",
                                     "--model", "phi-2", "--parallel", "tp=2,pp=2,dp=4", "--gbs",
                                     "16", "--cluster", "a40-pcie", "--nodes", "2"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const CliRun replay =
      run_lagom({"simulate", "--workload", file, "--cluster", "a40-pcie", "--nodes", "2"});
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.err.find("warning: folding on 'a40-pcie', where local GPUs 0 and 2"),
            std::string::npos)
      << replay.err;
}

TEST(WhatIfCli, APlacementMayUsePartOfTheClusterButNotChakra) {
  // Two nodes of the 127-node SuperPOD, in different scalable units (leaf groups).
  TempDir tmp;
  const std::string placement = (tmp.path() / "two.json").string();
  std::ofstream(placement) << R"({"format": "lagom.placement", "version": 1, "nodes": [0, 64]})";
  const CliRun run = run_lagom({"simulate", "--model", "llama3-8b", "--parallel", "tp=8,dp=2",
                                "--cluster", "superpod-h100", "--placement", placement});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  // Without a placement the step must fill the cluster.
  const CliRun packed = run_lagom({"simulate", "--model", "llama3-8b", "--parallel", "tp=8,dp=2",
                                   "--cluster", "superpod-h100"});
  EXPECT_NE(packed.err.find("uses 16 GPUs but the cluster has 1016"), std::string::npos);
  // Chakra traces have no placement: the export is refused rather than read back packed.
  const CliRun chakra = run_lagom(
      {"export", "--format", "chakra", "--out", (tmp.path() / "x").string(), "--model", "llama3-8b",
       "--parallel", "tp=8,dp=2", "--cluster", "superpod-h100", "--placement", placement});
  EXPECT_NE(chakra.exit_code, 0);
  EXPECT_NE(chakra.err.find("rank 8 runs on GPU 512"), std::string::npos) << chakra.err;
}

}  // namespace
}  // namespace lagom::test
