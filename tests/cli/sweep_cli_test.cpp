// `lagom sweep`: rows in point order for any -j, shards that merge to the same bytes, resume
// after an interruption, failing points as rows, and errors that name the field or file.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// 12 points: 2 models x 2 layouts x 3 NIC speeds, one layout that does not fit a node count.
constexpr const char* kSweep = R"({
  "format": "lagom.sweep", "version": 1, "command": "simulate",
  "options": {"cluster": "a40-nvlink", "mbs": 1},
  "axes": {
    "model": ["phi-2", "olmoe-1b-7b"],
    "layout": [{"parallel": "fsdp=8", "nodes": 1}, {"parallel": "fsdp=16", "nodes": 1}],
    "overrides": [{}, {"cpu.interconnect_bandwidth_GBps": 32}, {"network.nic_speed_Gbps": 800}]
  }
})";

std::vector<std::string> complete_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    out.push_back(text.substr(start, nl - start));
  }
  return out;
}

TEST(SweepCli, RowsInPointOrderForAnyJobsAndFailuresAreRows) {
  TempDir dir;
  const std::string sweep = write(dir, "s.json", kSweep);
  const std::string a = (dir.path() / "a.csv").string();
  const std::string b = (dir.path() / "b.csv").string();
  CliRun r = run_lagom({"sweep", sweep, "-j", "1", "--out", a});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_lagom(
      {"sweep", sweep, "-j", "3", "--out", b, "--jsonl", (dir.path() / "b.jsonl").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = slurp(a);
  EXPECT_EQ(text, slurp(b));
  const std::vector<std::string> rows = complete_lines(text);
  ASSERT_EQ(rows.size(), 2u + 12u);
  EXPECT_TRUE(rows[0].starts_with("# lagom sweep fnv1a64:")) << rows[0];
  EXPECT_TRUE(contains(rows[0], " simulate points=12")) << rows[0];
  EXPECT_EQ(rows[1],
            "point,model,layout,overrides,step_time_us,mfu,exposed_comm_us,compute_us,"
            "memory_per_gpu_bytes,status,error");
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_TRUE(rows[2 + i].starts_with(std::to_string(i) + ",")) << rows[2 + i];
  }
  // The first axis varies slowest.
  EXPECT_TRUE(rows[2].starts_with("0,phi-2,parallel=fsdp=8;nodes=1,,")) << rows[2];
  EXPECT_TRUE(contains(rows[3], "cpu.interconnect_bandwidth_GBps=32")) << rows[3];
  // fsdp=16 on one node fails: its rows say why, the sweep goes on.
  EXPECT_TRUE(
      rows[5].ends_with(",error,fsdp=16 uses 16 GPUs but the cluster has 8 (pass --nodes 2)"))
      << rows[5];
  EXPECT_TRUE(rows[2].ends_with(",ok,")) << rows[2];
  EXPECT_TRUE(contains(r.err, "6 of 12 points failed")) << r.err;
  // A faster socket link is a faster step; a faster NIC does not touch a one-node step.
  auto step = [&](std::size_t row) {
    const std::string& l = rows[row];
    std::size_t col = 0;
    std::size_t at = 0;
    while (col < 4) {
      at = l.find(',', at) + 1;
      ++col;
    }
    return std::stod(l.substr(at, l.find(',', at) - at));
  };
  EXPECT_LT(step(3), step(2));
  EXPECT_DOUBLE_EQ(step(4), step(2));
  // The JSON lines hold the same rows.
  const std::vector<std::string> jl = complete_lines(slurp((dir.path() / "b.jsonl").string()));
  ASSERT_EQ(jl.size(), 12u);
  const auto j0 = nlohmann::json::parse(jl[0]);
  EXPECT_EQ(j0["point"], 0);
  EXPECT_EQ(j0["status"], "ok");
  EXPECT_DOUBLE_EQ(j0["step_time_us"].get<double>(), step(2));
}

TEST(SweepCli, ShardsMergeToTheUnshardedBytes) {
  TempDir dir;
  const std::string sweep = write(dir, "s.json", kSweep);
  const std::string whole = (dir.path() / "whole.csv").string();
  ASSERT_EQ(run_lagom({"sweep", sweep, "--out", whole}).exit_code, 0);
  std::vector<std::string> merge = {"sweep", "merge", (dir.path() / "merged.csv").string()};
  for (int i = 0; i < 4; ++i) {
    const std::string shard = (dir.path() / ("shard-" + std::to_string(i) + ".csv")).string();
    const CliRun r =
        run_lagom({"sweep", sweep, "--shard", std::to_string(i) + "/4", "--out", shard});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(complete_lines(slurp(shard)).size(), 2u + 3u);  // points i, i+4, i+8
    merge.push_back(shard);
  }
  // Out of order on the command line: the merge sorts by point.
  std::swap(merge[3], merge[5]);
  const CliRun m = run_lagom(merge);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(slurp((dir.path() / "merged.csv").string()), slurp(whole));
  // A missing shard is an error naming the missing points.
  merge.pop_back();
  const CliRun partial = run_lagom(merge);
  EXPECT_EQ(partial.exit_code, 1);
  EXPECT_TRUE(contains(partial.err, "hold 9 of the sweep's 12 points")) << partial.err;
  // A shard of another sweep is refused by its hash.
  std::string other = kSweep;
  other.replace(other.find("\"mbs\": 1"), 8, "\"mbs\": 2");
  const std::string other_sweep = write(dir, "other.json", other);
  const std::string foreign = (dir.path() / "foreign.csv").string();
  ASSERT_EQ(run_lagom({"sweep", other_sweep, "--shard", "3/4", "--out", foreign}).exit_code, 0);
  merge.push_back(foreign);
  const CliRun mixed = run_lagom(merge);
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_TRUE(contains(mixed.err, "foreign.csv is from another sweep")) << mixed.err;
}

TEST(SweepCli, SlurmArrayVariablesChooseTheShard) {
  TempDir dir;
  const std::string sweep = write(dir, "s.json", kSweep);
  const std::string cmd = "cd " + shell_quote(dir.path().string()) +
                          " && SLURM_ARRAY_TASK_ID=6 SLURM_ARRAY_TASK_MIN=5 "
                          "SLURM_ARRAY_TASK_COUNT=4 " +
                          shell_quote(LAGOM_CLI_PATH) + " sweep s.json --list > list.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::vector<std::string> listed = complete_lines(slurp(dir.path() / "list.txt"));
  ASSERT_EQ(listed.size(), 3u);  // shard 1/4: points 1, 5, 9
  EXPECT_TRUE(listed[0].starts_with("1\tmodel=phi-2 ")) << listed[0];
  EXPECT_TRUE(listed[1].starts_with("5\t")) << listed[1];
  EXPECT_TRUE(contains(listed[0], "lagom simulate --cluster a40-nvlink --mbs 1 --model phi-2"))
      << listed[0];
}

TEST(SweepCli, ResumeFinishesAnInterruptedOutput) {
  TempDir dir;
  const std::string sweep = write(dir, "s.json", kSweep);
  const std::string whole = (dir.path() / "whole.csv").string();
  ASSERT_EQ(run_lagom({"sweep", sweep, "--out", whole}).exit_code, 0);
  // What an interruption leaves: some rows, out of order, and a last line cut off.
  const std::vector<std::string> rows = complete_lines(slurp(whole));
  const std::string part = (dir.path() / "part.csv").string();
  std::ofstream(part, std::ios::binary) << rows[0] << "\n"
                                        << rows[1] << "\n"
                                        << rows[2 + 7] << "\n"
                                        << rows[2 + 0] << "\n"
                                        << rows[2 + 3].substr(0, 10);
  const CliRun r = run_lagom({"sweep", sweep, "--out", part, "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(part), slurp(whole));
  // A row that cannot be this sweep's (point 99 of 12) is dropped and the file still completes.
  std::ofstream(part, std::ios::app) << "99,phi-2,x,,1,2,3,4,5,ok,\n";
  const CliRun again = run_lagom({"sweep", sweep, "--out", part, "--resume"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(contains(again.err, "dropping the malformed row for point 99")) << again.err;
  EXPECT_EQ(slurp(part), slurp(whole));
  // A merge input whose first line is not a sweep's count is refused before any work.
  const std::string bad = (dir.path() / "bad.csv").string();
  std::string text = slurp(whole);
  text.replace(text.find("points=12"), 9, "points=-1");
  std::ofstream(bad, std::ios::binary) << text;
  const CliRun m = run_lagom({"sweep", "merge", (dir.path() / "m.csv").string(), bad, whole});
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_TRUE(contains(m.err, "points must be a count up to 1,000,000")) << m.err;
  // Outputs that would clobber the sweep file or each other, and a JSONL resume, are refused.
  EXPECT_EQ(run_lagom({"sweep", sweep, "--out", sweep}).exit_code, 2);
  EXPECT_EQ(run_lagom({"sweep", sweep, "--out", part, "--jsonl", part}).exit_code, 2);
  EXPECT_EQ(
      run_lagom({"sweep", sweep, "--out", part, "--jsonl", part + ".jl", "--resume"}).exit_code, 2);
  // Resuming another sweep's output is refused.
  std::string other = kSweep;
  other.replace(other.find("\"mbs\": 1"), 8, "\"mbs\": 2");
  const CliRun o = run_lagom({"sweep", write(dir, "o.json", other), "--out", part, "--resume"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_TRUE(contains(o.err, "was written by another sweep")) << o.err;
}

TEST(SweepCli, BadSweepsNameTheField) {
  TempDir dir;
  auto run = [&](const std::string& text, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"sweep", write(dir, "bad.json", text)};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_lagom(args);
  };
  const std::string head = R"({"format": "lagom.sweep", "version": 1, "command": "simulate", )";
  CliRun r = run(head + R"("axes": {"modle": ["phi-2"]}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "axes.modle: 'modle' is not an option of lagom simulate")) << r.err;
  r = run(head + R"("axes": {"model": []}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "axes.model: an axis is a non-empty array")) << r.err;
  r = run(head + R"("axes": {}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "axes: must be an object with at least one axis")) << r.err;
  r = run(head + R"("combine": "zip", "axes": {"model": ["a", "b"], "mbs": [1]}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "zipped axes have the same length")) << r.err;
  r = run(R"({"format": "lagom.sweep", "version": 1, "command": "train", "axes": {"x": [1]}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "unknown command 'train' (known: simulate, tune, compare)")) << r.err;
  r = run(head + R"("axes": {"json": [true]}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "'json' is not an option")) << r.err;
  r = run(head + R"("axes": {"model": ["phi-2"]}, "extra": 1})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "extra: unknown field")) << r.err;
  r = run("{");
  EXPECT_EQ(r.exit_code, 1);
  r = run(head + R"("axes": {"model": ["phi-2"]}})", {"--shard", "3/2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--shard '3/2': expected I/N with 0 <= I < N")) << r.err;
  r = run(head + R"("axes": {"model": ["phi-2"]}})", {"--resume"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--resume needs --out")) << r.err;
}

TEST(SweepCli, CompareAndTunePointsReportSpeedups) {
  TempDir dir;
  const std::string sweep = write(dir, "c.json", R"({
    "format": "lagom.sweep", "version": 1, "command": "compare",
    "options": {"cluster": "a40-nvlink", "parallel": "fsdp=8", "mbs": 2, "gbs": 16,
                "methods": "nccl,lagom,fixed-nc:1"},
    "axes": {"model": ["phi-2"], "nccl_env": [[], ["NCCL_MIN_CTAS=8"]]}
  })");
  const CliRun r = run_lagom({"sweep", sweep});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> rows = complete_lines(r.out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1],
            "point,model,nccl_env,nccl_step_time_us,lagom_step_time_us,lagom_speedup_vs_nccl,"
            "lagom_evaluations,fixed-nc:1_step_time_us,fixed-nc:1_speedup_vs_nccl,"
            "fixed-nc:1_evaluations,status,error");
  EXPECT_TRUE(contains(rows[3], ",NCCL_MIN_CTAS=8,")) << rows[3];
  EXPECT_TRUE(rows[3].ends_with(",ok,")) << rows[3];
}

// Slower: a real SIGINT in the middle of a sweep (excluded under the sanitizers).
TEST(SweepSlow, InterruptKeepsFinishedRowsAndResumeCompletes) {
  TempDir dir;
  // 8 points of 0.4-1.5 s each on the build machine.
  const std::string sweep = write(dir, "s.json", R"({
    "format": "lagom.sweep", "version": 1, "command": "simulate",
    "options": {"cluster": "a40-nvlink", "model": "phi-2", "parallel": "tp=8", "gbs": 256,
                "overlap": "domino"},
    "axes": {"mbs": [1, 2, 4, 8], "seq": [1024, 2048]}
  })");
  const std::string out = (dir.path() / "out.csv").string();
  const std::string cmd = "timeout --preserve-status -s INT 2 " + shell_quote(LAGOM_CLI_PATH) +
                          " sweep " + shell_quote(sweep) + " --out " + shell_quote(out) + " 2>" +
                          shell_quote((dir.path() / "err").string());
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  const std::string err = slurp(dir.path() / "err");
  if (WEXITSTATUS(status) == 0) {
    GTEST_SKIP() << "the sweep finished before the interrupt";
  }
  EXPECT_EQ(WEXITSTATUS(status), 130) << err;
  EXPECT_TRUE(contains(err, "run again with --resume")) << err;
  const std::string text = slurp(out);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');  // no half-written line
  const CliRun r = run_lagom({"sweep", sweep, "--out", out, "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string whole = (dir.path() / "whole.csv").string();
  ASSERT_EQ(run_lagom({"sweep", sweep, "--out", whole}).exit_code, 0);
  EXPECT_EQ(slurp(out), slurp(whole));
}

}  // namespace
}  // namespace lagom::test
