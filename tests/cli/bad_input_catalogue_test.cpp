// The bad-input catalogue (docs/RELIABILITY.md): every case a review found silently accepted or
// answered with an unclear error, one table per command. Each row runs `lagom` and states the
// exit status and what stderr must say; a warning row is also run with --strict, where it must
// become an error (exit 1) and leave no output file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

namespace fs = std::filesystem;

struct CatalogueCase {
  CatalogueCase(std::string w, std::vector<std::string> a, int code, std::vector<std::string> e,
                bool warns = false, std::string out = {})
      : what(std::move(w)),
        args(std::move(a)),
        exit_code(code),
        err(std::move(e)),
        warning(warns),
        output(std::move(out)) {}
  std::string what;
  std::vector<std::string> args;  // "{dir}" is replaced by the case's scratch directory
  int exit_code = 1;
  std::vector<std::string> err;  // substrings of stderr
  bool warning = false;          // exit 0 with a warning; --strict makes it exit 1
  std::string output;            // a file the command writes ("{dir}/..."): absent under --strict
};

std::string filled_in(std::string s, const std::string& dir) {
  for (std::size_t at; (at = s.find("{dir}")) != std::string::npos;) {
    s.replace(at, 5, dir);
  }
  return s;
}

void write_input(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Scratch inputs every table may use: a directory, logs, a plan made elsewhere.
void make_catalogue_inputs(const fs::path& dir) {
  fs::create_directories(dir / "a-directory");
  const std::string header =
      "# nThread 1 nGpus 8 minBytes 33554432 maxBytes 134217728 step: "
      "2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 "
      "graph: 0\n#\n";
  const std::string rows =
      "    33554432       4194304    double     sum      -1   182.87  183.49  321.10       0   "
      "182.88  183.48  321.08       0\n"
      "    67108864       8388608    double     sum      -1   313.66  213.95  374.42       0   "
      "313.52  214.05  374.58       0\n"
      "   134217728      16777216    double     sum      -1   564.78  237.64  415.88       0   "
      "564.84  237.62  415.83       0\n";
  // An older nccl-tests' output: no "# Collective test starting:" line, no program name.
  write_input(dir / "raw.txt", header + rows);
  fs::copy_file(data_path("workloads/two-rank.json"), dir / "two-rank.json");
  // The same with one metadata line on top and no '---'.
  write_input(dir / "annotated.txt", "collective: all_reduce\n" + header + rows);
  // A row timed nan; one whose results nccl-tests found wrong; a size timed twice; a row whose
  // algbw is not size / time.
  const std::string row_1g =
      "   268435456      33554432    double     sum      -1   {}  {}  415.88       {}   "
      "1129.7  237.62  415.83       0\n";
  write_input(dir / "nan-time.txt", "collective: all_reduce\n" + header + rows +
                                        fmt::format(fmt::runtime(row_1g), "nan", "237.64", 0));
  write_input(dir / "wrong.txt", "collective: all_reduce\n" + header + rows +
                                     fmt::format(fmt::runtime(row_1g), "1129.6", "237.64", 12));
  write_input(dir / "repeated.txt", "collective: all_reduce\n" + header + rows +
                                        fmt::format(fmt::runtime(row_1g), "1129.6", "237.64", 0) +
                                        fmt::format(fmt::runtime(row_1g), "1.0", "268435.46", 0));
  write_input(dir / "algbw.txt", "collective: all_reduce\n" + header + rows +
                                     fmt::format(fmt::runtime(row_1g), "1129.6", "999.99", 0));
  write_input(dir / "no-ops.json",
              R"({"format": "lagom.workload", "version": 1, "ranks": [{"rank": 0, "streams": )"
              R"([{"stream": "s", "ops": []}]}]})");
  // A folded communicator whose mirror names a GPU beyond a 2-node cluster.
  const std::string allreduce =
      R"({{"rank": {0}, "streams": [{{"stream": "c", "ops": [{{"id": "ar{0}", "kind": )"
      R"("allreduce", "group": "a", "bytes": 1048576}}]}}]}})";
  write_input(dir / "mirror-outside.json",
              R"({"format": "lagom.workload", "version": 1, "groups": {"a": {"ranks": [0, 1], )"
              R"("gpus": [0, 8], "mirrors": [[1, 99]]}}, "ranks": [)" +
                  fmt::format(fmt::runtime(allreduce), 0) + ", " +
                  fmt::format(fmt::runtime(allreduce), 1) + "]}");
  // A row timed 0 us.
  write_input(dir / "zero-time.txt",
              "collective: all_reduce\n" + header + rows +
                  "   268435456      33554432    double     sum      -1     0.00    0.00    0.00  "
                  "     0     0.00    0.00    0.00       0\n");
}

void run_catalogue(const std::vector<CatalogueCase>& cases) {
  for (const CatalogueCase& c : cases) {
    TempDir tmp;
    make_catalogue_inputs(tmp.path());
    const std::string dir = tmp.path().string();
    std::vector<std::string> args;
    for (const std::string& a : c.args) {
      args.push_back(filled_in(a, dir));
    }
    SCOPED_TRACE(c.what);
    const CliRun r = run_lagom(args);
    EXPECT_EQ(r.exit_code, c.warning ? 0 : c.exit_code) << r.err;
    for (const std::string& e : c.err) {
      EXPECT_TRUE(contains(r.err, filled_in(e, dir)))
          << "expected '" << filled_in(e, dir) << "' in:\n"
          << r.err;
    }
    if (c.warning) {
      EXPECT_TRUE(contains(r.err, ": warning: ")) << r.err;
      if (!c.output.empty()) {
        fs::remove(filled_in(c.output, dir));
      }
      args.push_back("--strict");
      const CliRun strict = run_lagom(args);
      EXPECT_EQ(strict.exit_code, 1) << strict.err;
      EXPECT_TRUE(contains(strict.err, "(--strict)")) << strict.err;
      if (!c.output.empty()) {
        EXPECT_FALSE(fs::exists(filled_in(c.output, dir))) << "--strict still wrote " << c.output;
      }
    }
  }
}

const std::vector<std::string> kCatalogueLlama = {"--model", "llama3-8b", "--cluster", "dgx-h100",
                                                  "--gbs",   "8",         "--seq",     "1024"};

std::vector<std::string> args_with(std::vector<std::string> head,
                                   const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST(BadInputCatalogue, Simulate) {
  run_catalogue({
      {"--nodes 0 is not 1 node",
       args_with({"simulate", "--parallel", "fsdp=8", "--nodes", "0"}, kCatalogueLlama),
       2,
       {"--nodes: expected an integer from 1 to 65536 (nodes), got '0'"}},
      {"--nodes 2x is not 2",
       args_with({"simulate", "--parallel", "fsdp=8", "--nodes", "2x"}, kCatalogueLlama),
       2,
       {"got '2x'"}},
      {"--seq 0 is not the model's default",
       {"simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--parallel", "fsdp=8",
        "--gbs", "8", "--seq", "0"},
       2,
       {"--seq: expected an integer from 1 to 16777216 (tokens), got '0'"}},
      {"--mbs 1.5",
       args_with({"simulate", "--parallel", "fsdp=8", "--mbs", "1.5"}, kCatalogueLlama),
       2,
       {"--mbs: expected an integer from 1 to 2147483647 (sequences), got '1.5'"}},
      {"a key given twice in --parallel",
       args_with({"simulate", "--parallel", "tp=8,tp=4"}, kCatalogueLlama),
       1,
       {"--parallel 'tp=8,tp=4': tp is set twice"}},
      {"tp beyond the key/value heads",
       args_with({"simulate", "--parallel", "tp=16", "--nodes", "2"}, kCatalogueLlama),
       1,
       {"tp=16 does not divide the 8 key/value heads"}},
      {"a directory as the workload",
       {"simulate", "--workload", "{dir}/a-directory"},
       1,
       {"'{dir}/a-directory': it is a directory, not a file"}},
      {"a mirror on a GPU beyond the cluster",
       {"simulate", "--workload", "{dir}/mirror-outside.json", "--cluster", "a40-nvlink", "--nodes",
        "2"},
       1,
       {"group 'a' stands for an instance on GPU 99 but cluster 'a40-nvlink' has 16 GPUs"}},
      {"a directory as the profile",
       args_with({"simulate", "--parallel", "fsdp=8", "--profile", "{dir}/a-directory"},
                 kCatalogueLlama),
       1,
       {"it is a directory, not a file"}},
      {"sequence parallelism over a sequence tp does not divide",
       {"simulate", "--model", "phi-2", "--cluster", "dgx-h100", "--parallel", "tp=8,sp", "--seq",
        "12"},
       1,
       {"sp with tp=8 needs the sequence (12 tokens) to divide by tp"}},
      {"a search budget of 0 evaluations",
       args_with({"tune", "--parallel", "fsdp=8", "--budget", "0"}, kCatalogueLlama),
       2,
       {"--budget: expected an integer from 1 to 1000000000 (evaluations), got '0'"}},
      {"fewer micro-batches than pipeline stages",
       {"simulate", "--model", "phi-2", "--parallel", "pp=8", "--gbs", "2", "--cluster",
        "dgx-h100"},
       0,
       {"2 micro-batches per step on pp=8 stages: the pipeline never fills"},
       true},
      {"a workload of no ops",
       {"simulate", "--workload", "{dir}/no-ops.json"},
       0,
       {"no-ops.json has no ops: its step time is 0"},
       true},
      {"an empty output file name",
       {"simulate", "--workload", "builtin:fsdp-4gpu", "--trace", ""},
       2,
       {"--trace: an empty file name"}},
      {"a sensitivity filter that matches no prior",
       args_with({"sensitivity", "--parallel", "fsdp=8", "--only", "zzzz"}, kCatalogueLlama),
       1,
       {"--only 'zzzz' matches no prior of profile"}},
      {"two outputs in one file",
       args_with({"tune", "--parallel", "fsdp=8", "--method", "nccl", "--out", "{dir}/p.json",
                  "--csv", "{dir}/p.json"},
                 kCatalogueLlama),
       2,
       {"--out and --csv name the same file '{dir}/p.json'"}},
  });
}

// Absurd sizes are refused before anything is allocated for them (cli/memory_budget.hpp), with
// the estimate and the limit; --max-memory moves the limit (a tiny one here, so that the rows do
// not depend on the machine's memory).
TEST(BadInputCatalogue, AbsurdSizes) {
  const std::vector<std::string> llama = {"--model",  "llama3-8b",  "--cluster",
                                          "dgx-h100", "--parallel", "fsdp=8"};
  run_catalogue({
      {"10^8 sequences: more ops than a workload holds",
       args_with({"simulate", "--gbs", "100000000"}, llama),
       1,
       {"gbs 100000000: the step would hold 8.07e+10 ops, more than a workload can", "--fold"}},
      {"a step over the memory limit",
       args_with({"simulate", "--gbs", "1024", "--max-memory", "20M"}, llama),
       1,
       {"llama3-8b with fsdp=8, gbs 1024 (8.26e+05 ops on 8 ranks) would need about 126 MiB",
        "that --max-memory allows", "or raise the limit with --max-memory SIZE"}},
      {"tune refuses the same step (folded: one rank per replica)",
       args_with({"tune", "--gbs", "1024", "--max-memory", "20M"}, llama),
       1,
       {"(1.03e+05 ops on 1 rank) would need about 15.8 MiB"}},
      {"a workload file over the limit",
       {"simulate", "--workload", "{dir}/two-rank.json", "--max-memory=1M"},
       1,
       {"reading workload file '{dir}/two-rank.json'", "that --max-memory allows"}},
      {"--max-memory 0", {"simulate", "--max-memory", "0"}, 2, {"--max-memory: must be at least"}},
      {"--max-memory lots",
       {"simulate", "--max-memory", "lots"},
       2,
       {"--max-memory: cannot read 'lots' as a byte count"}},
      {"--max-memory without a size", {"simulate", "--max-memory"}, 2, {"--max-memory"}},
      {"--max-memory twice",
       {"simulate", "--max-memory", "1G", "--max-memory=2G"},
       2,
       {"--max-memory is given twice"}},
      {"a cluster over the limit",
       {"simulate", "--cluster", "dgx-a100", "--nodes", "65536", "--workload",
        "builtin:pipeline-2stage", "--max-memory", "100M"},
       1,
       {"cluster 'dgx-a100' (524288 GPUs, 524288 NICs) would need about 1.5 GiB",
        "use fewer nodes (--nodes)"}},
      {"--max-memory in decimal, over the limit",
       args_with({"simulate", "--gbs", "1024", "--max-memory", "0.0625G"}, llama),
       1,
       {"would need about 126 MiB", "more than the 64 MiB that --max-memory allows"}},
      // Products of sizes that each pass their own range, computed in 64 bits and refused.
      {"parallel degrees whose product overflows an int",
       {"simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--parallel",
        "tp=8,pp=1048576,dp=1048576"},
       1,
       {"tp x cp x pp x dp x ep = 8.796e+12 GPUs; lagom models 1 to 16777216 GPUs"}},
      {"pp x vpp beyond an int",
       {"simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--parallel",
        "tp=8,pp=1048576,vpp=1048576"},
       1,
       {"tp=8,pp=1048576,vpp=1048576 uses 8388608 GPUs but the cluster has 8"}},
      {"a default global batch beyond an int",
       {"simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--parallel", "fsdp=8",
        "--mbs", "2147483647"},
       1,
       {"--mbs 2147483647 x data-parallel degree 8 x pp 1 = 17179869176 sequences per step"}},
      {"mbs x seq beyond an int (was silently 0 FLOPs per head op)",
       {"simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--parallel", "tp=8", "--mbs",
        "65536", "--seq", "65536"},
       1,
       {"does not fit in GPU memory", "activations 6612462.9"}},
  });
}

TEST(BadInputCatalogue, AChakraSetOverTheLimit) {
  TempDir tmp;
  const std::string prefix = (tmp.path() / "set").string();
  ASSERT_EQ(run_lagom({"export", "--format", "chakra", "--out", prefix}).exit_code, 0);
  const CliRun r = run_lagom({"simulate", "--chakra", prefix, "--max-memory", "1M"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "reading 4 Chakra ET files")) << r.err;
  EXPECT_TRUE(contains(r.err, "that --max-memory allows")) << r.err;
}

// A plan made for one workload and cluster, applied to another.
TEST(BadInputCatalogue, SimulateWithAPlanMadeElsewhere) {
  TempDir tmp;
  const std::string plan = (tmp.path() / "plan.json").string();
  const CliRun made = run_lagom({"tune", "--model", "phi-2", "--parallel", "fsdp=8", "--cluster",
                                 "a40-nvlink", "--seq", "512", "--gbs", "8", "--out", plan});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  run_catalogue({
      {"another cluster, and no op matches",
       args_with({"simulate", "--parallel", "fsdp=8", "--plan", plan}, kCatalogueLlama),
       0,
       {"the plan '" + plan +
            "' was made for cluster a40-nvlink x1, and this run is on dgx-h100 x1",
        "the plan '" + plan + "' matched no communication op of this workload",
        "(it was made for phi-2, fsdp=8"},
       true},
  });
}

// The same plan replayed where it was made (with the job's NCCL variables): no warning.
TEST(BadInputCatalogue, APlanReplayedWhereItWasMadeIsQuiet) {
  TempDir tmp;
  const std::string plan = (tmp.path() / "plan.json").string();
  const std::vector<std::string> step = {
      "--model", "phi-2", "--parallel", "fsdp=8", "--cluster",  "a40-nvlink",
      "--seq",   "512",   "--gbs",      "8",      "--nccl-env", "NCCL_MIN_CTAS=2"};
  const CliRun made = run_lagom(args_with(args_with({"tune"}, step), {"--out", plan}));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const CliRun replay =
      run_lagom(args_with(args_with({"simulate"}, step), {"--plan", plan, "--strict"}));
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_FALSE(contains(replay.err, "warning")) << replay.err;
}

TEST(BadInputCatalogue, Comm) {
  run_catalogue({
      {"more channels than the GPU has SMs",
       {"comm", "--coll", "allreduce", "-b", "1M", "-e", "1M", "--cluster", "dgx-h100", "--set",
        "gpu.sms=8", "--nchannels", "32", "--algo", "Ring"},
       0,
       {"32 channels at 1048576 bytes: more NCCL CTAs than the GPU's 8 SMs"},
       true},
      {"--ranks 0 is not every GPU",
       {"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "--ranks", "0"},
       2,
       {"--ranks: expected an integer from 1 to 1073741824 (ranks), got '0'"}},
      {"--nchannels 0",
       {"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "--nchannels", "0"},
       2,
       {"--nchannels: expected an integer from 1 to 64 (channels), got '0'"}},
      {"--nchannels 65, beyond NCCL's MAXCHANNELS",
       {"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "--nchannels", "65"},
       2,
       {"got '65'"}},
      {"--nthreads 256x",
       {"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "--nthreads", "256x"},
       2,
       {"--nthreads: expected an integer from 1 to 1024 (threads), got '256x'"}},
      {"a link of 1e-300 GB/s",
       {"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "--set",
        "pcie.link_bandwidth_GBps=1e-300"},
       1,
       {"pcie.link_bandwidth_GBps: must be >= 0.001 and at most 100000 GB/s"}},
      {"a directory as the cluster",
       {"comm", "--coll", "allreduce", "--cluster", "{dir}/a-directory/"},
       1,
       {"it is a directory, not a file"}},
  });
}

TEST(BadInputCatalogue, Calibrate) {
  const std::string a100 = "builtin:12-a100x8-nvswitch-allreduce-1proc";
  run_catalogue({
      {"a GPU other than the cluster's",
       {"calibrate", "check", "--nccl-tests", a100 + "@a40-pcie"},
       0,
       {"the log ran on A100 GPUs (NVIDIA A100-SXM4-80GB), and cluster a40-pcie has"},
       true},
      {"a fit that matches nothing",
       {"calibrate", "fit", "--nccl-tests", a100 + "@a40-pcie", "-o", "{dir}/fit.json"},
       0,
       {"the fit's median residual over rows >= 1 MiB is"},
       true,
       "{dir}/fit.json"},
      {"a node count the log contradicts",
       {"calibrate", "check", "--nccl-tests", a100 + "@dgx-a100:2"},
       0,
       {"the log ran on 1 node (8 ranks), and 2 were declared"},
       true},
      {"CLUSTER:2x is not 2 nodes",
       {"calibrate", "check", "--nccl-tests", a100 + "@dgx-a100:2x"},
       1,
       {"the node count: expected an integer from 1 to 65536 (nodes), got '2x'"}},
      {"rows timed 0 us",
       {"calibrate", "check", "--nccl-tests", "{dir}/zero-time.txt@dgx-h100"},
       0,
       {"1 row with a zero or negative time left out (line "},
       true},
      {"a row timed nan",
       {"calibrate", "check", "--nccl-tests", "{dir}/nan-time.txt@dgx-h100"},
       1,
       {"nan-time.txt:7: malformed nccl-tests row: time 'nan' is not a finite number"}},
      {"a row nccl-tests found wrong",
       {"calibrate", "check", "--nccl-tests", "{dir}/wrong.txt@dgx-h100"},
       0,
       {"1 row failed nccl-tests' own check (#wrong >= 1; line 7)"},
       true},
      {"a size timed twice",
       {"calibrate", "check", "--nccl-tests", "{dir}/repeated.txt@dgx-h100"},
       0,
       {"the same size, type and operation is timed more than once (268435456 B on lines 7 "
        "and 8)"},
       true},
      {"an algbw that is not size / time",
       {"calibrate", "check", "--nccl-tests", "{dir}/algbw.txt@dgx-h100"},
       0,
       {"1 row prints an algbw that is not size / time (line 7)"},
       true},
      {"a directory as the log",
       {"calibrate", "check", "--nccl-tests", "{dir}/a-directory@dgx-h100"},
       1,
       {"it is a directory, not a file"}},
      {"an older log that does not name its collective",
       {"calibrate", "check", "--nccl-tests", "{dir}/raw.txt@dgx-h100"},
       1,
       {"the log does not say which collective it measured", "pass --coll NAME"}},
      {"... named args_with --coll",
       {"calibrate", "check", "--nccl-tests", "{dir}/raw.txt@dgx-h100", "--coll", "all_reduce"},
       0,
       {}},
      {"... or args_with one metadata line and no '---'",
       {"calibrate", "check", "--nccl-tests", "{dir}/annotated.txt@dgx-h100"},
       0,
       {}},
      {"--coll that contradicts the log",
       {"calibrate", "check", "--nccl-tests", "{dir}/annotated.txt@dgx-h100", "--coll",
        "all_gather"},
       1,
       {"--coll all_gather but the log says it measured all_reduce"}},
  });
}

// A report written to a full device is lost: exit 1 with the reason, for the iostream reports
// and for fmt's (comm), which reported an internal error.
TEST(BadInputCatalogue, AReportThatCannotBeWrittenIsAnError) {
  if (!fs::exists("/dev/full")) {
    GTEST_SKIP() << "no /dev/full here";
  }
  for (const std::string args : {"simulate --workload builtin:fsdp-4gpu --json",
                                 "comm --coll allreduce --cluster dgx-h100 -b 1M -e 1M"}) {
    SCOPED_TRACE(args);
    TempDir tmp;
    const std::string err = (tmp.path() / "err").string();
    const int status =
        std::system((std::string(LAGOM_CLI_PATH) + " " + args + " > /dev/full 2> " + err).c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    std::ifstream in(err);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(contains(text, "No space left on device")) << text;
    EXPECT_FALSE(contains(text, "internal error")) << text;
  }
}

TEST(BadInputCatalogue, Overlap) {
  run_catalogue({
      {"GEMM dimensions past any GPU",
       {"overlap", "--cluster", "dgx-h100", "--compute", "gemm:m=1e12,n=1e12,k=1e12"},
       1,
       {"--compute 'gemm:m=1e12,n=1e12,k=1e12': m: expected a number from 1 to 16777216"}},
      {"--bytes 0",
       {"overlap", "--cluster", "dgx-h100", "--bytes", "0", "--compute", "gemm:m=64,n=64,k=64"},
       1,
       {"'0' is not a size of at least 1 byte"}},
  });
}

}  // namespace
}  // namespace lagom::test
