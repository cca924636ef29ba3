// End-to-end tests of `lagom comm`, `lagom calibrate` and `lagom simulate --cluster`.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_json.hpp"
#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

TEST(CommCli, HelpNamesTheKnobs) {
  CliRun r = run_lagom({"comm", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt : {"--coll", "--cluster", "--nodes", "--algo", "--proto", "--nchannels",
                          "--nthreads", "--chunk", "--profile", "--json"}) {
    EXPECT_TRUE(contains(r.out, opt)) << opt;
  }
}

TEST(CommCli, TableLooksLikeNcclTests) {
  // -b 32K -e 1M -f 2: 32K, 64K, 128K, 256K, 512K, 1M = 6 rows.
  CliRun r = run_lagom(
      {"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "-b", "32K", "-e", "1M", "-f", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "busbw"));
  EXPECT_TRUE(contains(r.out, "algbw"));
  int rows = 0;
  for (std::size_t pos = 0; (pos = r.out.find("\n ", pos)) != std::string::npos; ++pos) {
    ++rows;
  }
  EXPECT_EQ(rows, 6) << r.out;
  EXPECT_TRUE(contains(r.out, "     32768          8192"));  // count = size / 4 (float)
}

TEST(CommCli, JsonRowsHaveTheDocumentedFieldsAndBusbwFactor) {
  const auto j = json_of(run_lagom({"comm", "--coll", "allgather", "--cluster", "dgx-h100",
                                    "--nodes", "2", "-b", "1M", "-e", "64M", "-f", "4", "--json"}));
  ASSERT_TRUE(j.contains("context"));
  EXPECT_EQ(j["context"]["ranks"], 16);
  EXPECT_EQ(j["context"]["nodes"], 2);
  ASSERT_EQ(j["rows"].size(), 4u);  // 1M, 4M, 16M, 64M
  for (const auto& row : j["rows"]) {
    for (const char* key : {"size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algo", "proto",
                            "nchannels", "nthreads", "chunk_bytes"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    // algbw = size / time; AllGather busbw = algbw * (n-1)/n with n = 16.
    const double algbw = row["size_bytes"].get<double>() / (row["time_us"].get<double>() * 1e3);
    EXPECT_NEAR(row["algbw_GBps"].get<double>(), algbw, 1e-9 * algbw);
    EXPECT_NEAR(row["busbw_GBps"].get<double>(), algbw * 15.0 / 16.0, 1e-9 * algbw);
  }
}

// --nccl-env sets what a job's NCCL environment would: NCCL_MAX_CTAS=1 caps NCCL's channels
// (24 on a DGX H100 by default) at one, and the step's simulate context records it.
TEST(CommCli, NcclEnvironmentIsAWhatIf) {
  const auto base = json_of(run_lagom({"comm", "--coll", "allgather", "--cluster", "dgx-h100", "-b",
                                       "64M", "-e", "64M", "--json"}));
  const auto capped =
      json_of(run_lagom({"comm", "--coll", "allgather", "--cluster", "dgx-h100", "-b", "64M", "-e",
                         "64M", "--nccl-env", "NCCL_MAX_CTAS=1", "--json"}));
  EXPECT_GT(base["rows"][0]["nchannels"].get<int>(), 1);
  EXPECT_EQ(capped["rows"][0]["nchannels"], 1);
  EXPECT_GT(capped["rows"][0]["time_us"].get<double>(), base["rows"][0]["time_us"].get<double>());
  const CliRun bad = run_lagom(
      {"comm", "--coll", "allgather", "--cluster", "dgx-h100", "--nccl-env", "NCCL_MAX_CTA=1"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(contains(bad.err, "unknown NCCL environment variable 'NCCL_MAX_CTA'")) << bad.err;
  const CliRun no_eq =
      run_lagom({"comm", "--coll", "allgather", "--cluster", "dgx-h100", "--nccl-env", "X"});
  EXPECT_NE(no_eq.exit_code, 0);
  EXPECT_TRUE(contains(no_eq.err, "--nccl-env 'X': expected NAME=VALUE")) << no_eq.err;
}

// --nccl-version 2.18 runs NCCL 2.18.3's choice: on one node of cluster A, 8 channels and 2 MiB
// chunks for a large all-reduce (the paper's baseline), where 2.28 runs 2. The same option in a
// cluster file ("nccl_version") gives the same rows; an unknown version is refused by name.
TEST(CommCli, NcclVersionIsAWhatIf) {
  const std::vector<std::string> args = {"comm", "--coll", "allreduce", "--cluster", "a40-nvlink",
                                         "-b",   "64M",    "-e",        "64M",       "--json"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = args;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const auto v228 = json_of(run_lagom(args));
  const auto v218 = json_of(run_lagom(with({"--nccl-version", "2.18"})));
  EXPECT_EQ(v228["rows"][0]["nchannels"], 2);
  EXPECT_EQ(v218["rows"][0]["nchannels"], 8);
  EXPECT_EQ(v218["rows"][0]["chunk_bytes"], 2 << 20);
  const TempDir dir;
  const std::string file = (dir.path() / "a40-nccl218.json").string();
  const CliRun exported =
      run_lagom({"cluster", "a40-nvlink", "--nccl-version", "2.18.3", "--export", file});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::vector<std::string> from_file = args;
  from_file[4] = file;
  const auto f = json_of(run_lagom(from_file));
  EXPECT_EQ(f["rows"][0]["nchannels"], 8);
  EXPECT_EQ(f["rows"][0]["time_us"], v218["rows"][0]["time_us"]);
  const CliRun bad = run_lagom(with({"--nccl-version", "2.19"}));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(contains(bad.err, "--nccl-version: unknown NCCL version '2.19'")) << bad.err;
  const CliRun pat = run_lagom(with({"--nccl-version", "2.18", "--nccl-env", "NCCL_PAT_ENABLE=1"}));
  EXPECT_NE(pat.exit_code, 0);
  EXPECT_TRUE(contains(pat.err, "NCCL_PAT_ENABLE does not exist in NCCL 2.18")) << pat.err;
  const CliRun wide = run_lagom(with({"--nccl-version", "2.18", "--nchannels", "40"}));
  EXPECT_NE(wide.exit_code, 0);
  EXPECT_TRUE(contains(wide.err, "MAXCHANNELS of NCCL 2.18")) << wide.err;
}

TEST(CommCli, PinnedKnobsAreUsed) {
  const auto j = json_of(run_lagom(
      {"comm", "--coll",     "allreduce", "--cluster", "dgx-h100", "-b",     "64M",
       "-e",   "64M",        "--algo",    "Ring",      "--proto",  "Simple", "--nchannels",
       "4",    "--nthreads", "256",       "--chunk",   "512K",     "--json"}));
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["algo"], "Ring");
  EXPECT_EQ(row["proto"], "Simple");
  EXPECT_EQ(row["nchannels"], 4);
  EXPECT_EQ(row["nthreads"], 256);
  EXPECT_EQ(row["chunk_bytes"], 512 * 1024);
}

struct Impossible {
  std::vector<std::string> args;
  const char* expect;
};

class CommImpossible : public ::testing::TestWithParam<Impossible> {};

TEST_P(CommImpossible, IsAClearErrorNamingTheRule) {
  std::vector<std::string> args = {"comm"};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  CliRun r = run_lagom(args);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "lagom comm: error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, GetParam().expect)) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Requests, CommImpossible,
    ::testing::Values(
        Impossible{{"--coll", "allreduce", "--cluster", "a40-pcie", "--algo", "NVLS"}, "NVLS"},
        Impossible{
            {"--coll", "allreduce", "--cluster", "dgx-h100", "--algo", "NVLS", "--proto", "LL"},
            "Simple protocol only"},
        Impossible{
            {"--coll", "allreduce", "--cluster", "dgx-h100", "--proto", "LL128", "--chunk", "100"},
            "below the LL128 grain"},
        Impossible{{"--coll", "allreduce", "--cluster", "dgx-h100", "--ranks", "9"},
                   "does not fit cluster 'dgx-h100'"},
        Impossible{{"--coll", "allreduse", "--cluster", "dgx-h100"}, "unknown collective"},
        Impossible{{"--coll", "allreduce", "--cluster", "dgx-h1000"}, "dgx-h100"},
        Impossible{{"--coll", "allreduce", "--cluster", "dgx-h100", "-b", "1M", "-e", "1K"},
                   "larger than -e"},
        Impossible{{"--coll", "allreduce", "--cluster", "dgx-h100", "-b", "12Q"}, "-b"},
        Impossible{{"--coll", "allreduce", "--cluster", "dgx-h100", "--profile", "a100-sxm"},
                   "describes A100-SXM-80GB GPUs"}));

TEST(CommCli, MissingCollIsAUsageError) {
  CliRun r = run_lagom({"comm", "--cluster", "dgx-h100"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--coll"));
}

TEST(CalibrateCli, ListsAndChecksTheEmbeddedLogs) {
  CliRun logs = run_lagom({"calibrate", "logs"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_TRUE(contains(logs.out, "builtin:12-a100x8-nvswitch-allreduce-1proc.txt"));
  const auto j =
      json_of(run_lagom({"calibrate", "check", "--nccl-tests",
                         "builtin:12-a100x8-nvswitch-allreduce-1proc.txt@dgx-a100", "--json"}));
  EXPECT_EQ(j["rows"].size(), 30u);  // the log's 30 sizes, 8 B .. 4 GiB
}

// The cluster a log is checked against carries the job's NCCL: --nccl-env and --nccl-version
// change NCCL's own choices there as in every other command (they used to be ignored), and a
// log that ran another NCCL than the one emulated, where an emulation of it exists, is a warning.
TEST(CalibrateCli, CheckUsesTheJobsNccl) {
  const std::vector<std::string> base = {
      "calibrate", "check",    "--nccl-tests", "builtin:01-h100x8-nvswitch-allreduce-nccl2.29.txt",
      "--cluster", "dgx-h100", "--json"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const CliRun plain = run_lagom(base);
  const CliRun capped = run_lagom(with({"--nccl-env", "NCCL_MAX_CTAS=1"}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_NE(plain.out, capped.out);
  const CliRun v218 = run_lagom(with({"--nccl-version", "2.18"}));
  ASSERT_EQ(v218.exit_code, 0) << v218.err;
  EXPECT_TRUE(contains(v218.err, "the log ran NCCL 2.29.2, and the emulation follows NCCL 2.18"))
      << v218.err;
  EXPECT_FALSE(contains(plain.err, "the emulation follows")) << plain.err;
}

TEST(CalibrateCli, FitWritesAProfileThatOtherCommandsLoad) {
  TempDir tmp;
  const std::string out = (tmp.path() / "fitted.json").string();
  CliRun fit = run_lagom({"calibrate", "fit", "--nccl-tests",
                          "builtin:02-h100x8-nvswitch-allgather-nccl2.29.txt", "--cluster",
                          "dgx-h100", "-o", out});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_TRUE(contains(fit.out, "parameters moved"));
  EXPECT_TRUE(contains(slurp(out), "calibrate fit"));
  CliRun use = run_lagom({"comm", "--coll", "allgather", "--cluster", "dgx-h100", "--profile", out,
                          "-b", "1G", "-e", "1G"});
  EXPECT_EQ(use.exit_code, 0) << use.err;
}

TEST(CalibrateCli, BadInputs) {
  EXPECT_EQ(
      run_lagom({"calibrate", "fit", "--nccl-tests",
                 "builtin:02-h100x8-nvswitch-allgather-nccl2.29.txt", "--cluster", "dgx-h100"})
          .exit_code,
      2);  // no -o
  CliRun missing = run_lagom(
      {"calibrate", "check", "--nccl-tests", "/nonexistent.log", "--cluster", "dgx-h100"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "/nonexistent.log")) << missing.err;
  CliRun wrong_gpu = run_lagom({"calibrate", "check", "--nccl-tests",
                                "builtin:12-a100x8-nvswitch-allreduce-1proc.txt@dgx-a100",
                                "--profile", "h100-sxm"});
  EXPECT_EQ(wrong_gpu.exit_code, 1);
  EXPECT_TRUE(contains(wrong_gpu.err, "A100")) << wrong_gpu.err;
  EXPECT_EQ(run_lagom({"calibrate", "frobnicate"}).exit_code, 2);
}

TEST(SimulateCli, ClusterTimesCommunicationWithTheCollectiveModel) {
  // The workload runs a 256 MiB all-reduce then a 64 MiB all-gather pinned to Ring/Simple on 4
  // channels, one after the other on every rank: the step is the sum of what `lagom comm` says
  // for each (same model, same configuration), to the nanosecond.
  const auto ar = json_of(run_lagom({"comm", "--coll", "allreduce", "--cluster", "dgx-h100", "-b",
                                     "256M", "-e", "256M", "--json"}));
  const auto ag = json_of(
      run_lagom({"comm", "--coll", "allgather", "--cluster", "dgx-h100", "-b", "64M", "-e", "64M",
                 "--algo", "Ring", "--proto", "Simple", "--nchannels", "4", "--json"}));
  const auto sim =
      json_of(run_lagom({"simulate", "--workload", data_path("workloads/comm-8gpu.json"),
                         "--cluster", "dgx-h100", "--json"}));
  const double expect_us = std::round(ar["rows"][0]["time_us"].get<double>() * 1e3) / 1e3 +
                           std::round(ag["rows"][0]["time_us"].get<double>() * 1e3) / 1e3;
  EXPECT_NEAR(sim["step_time_us"].get<double>(), expect_us, 1e-6);
  EXPECT_TRUE(contains(sim["context"]["cost_model"].get<std::string>(), "collective model"));
}

TEST(SimulateCli, ModelErrorsNameTheOp) {
  CliRun illegal = run_lagom(
      {"simulate", "--workload", data_path("bad/pinned-illegal.json"), "--cluster", "dgx-h100"});
  EXPECT_EQ(illegal.exit_code, 1);
  EXPECT_TRUE(contains(illegal.err, "'ag0'")) << illegal.err;
  EXPECT_TRUE(contains(illegal.err, "Simple")) << illegal.err;
  CliRun too_big = run_lagom({"simulate", "--workload", data_path("workloads/comm-8gpu.json"),
                              "--cluster", "a40-pcie", "--nodes", "1", "--profile", "a40"});
  EXPECT_EQ(too_big.exit_code, 0) << too_big.err;  // 8 ranks fit one 8-GPU node
  CliRun no_cluster = run_lagom({"simulate", "--workload", data_path("workloads/comm-8gpu.json")});
  EXPECT_EQ(no_cluster.exit_code, 1);
  EXPECT_TRUE(contains(no_cluster.err, "no 'duration_us'")) << no_cluster.err;
  CliRun nodes_alone = run_lagom({"simulate", "--nodes", "2"});
  EXPECT_EQ(nodes_alone.exit_code, 2);
}

}  // namespace
}  // namespace lagom::test
