// End-to-end tests of the `lagom` command: help, reports, traces, determinism, bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

TEST(Cli, HelpListsCommands) {
  CliRun r = run_lagom({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "simulate"));
  CliRun s = run_lagom({"simulate", "--help"});
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_TRUE(contains(s.out, "--workload"));
  EXPECT_TRUE(contains(s.out, "--trace"));
  EXPECT_TRUE(contains(s.out, "--json"));
}

TEST(Cli, NoArgumentsIsAUsageError) {
  EXPECT_EQ(run_lagom({}).exit_code, 2);
}

TEST(Cli, UnknownCommandAndOptionAreUsageErrors) {
  CliRun a = run_lagom({"simulat"});
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_TRUE(contains(a.err, "unknown command 'simulat'"));
  CliRun b = run_lagom({"simulate", "--wrkload", "x"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_TRUE(contains(b.err, "--help")) << b.err;
}

TEST(Cli, DefaultRunPrintsASummary) {
  CliRun r = run_lagom({"simulate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "builtin:fsdp-4gpu"));
  EXPECT_TRUE(contains(r.out, "step time"));
  EXPECT_TRUE(contains(r.out, "fingerprint"));
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(Cli, ListsBuiltinWorkloads) {
  CliRun r = run_lagom({"simulate", "--list-workloads"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "builtin:fsdp-4gpu"));
  EXPECT_TRUE(contains(r.out, "builtin:pipeline-2stage"));
}

TEST(Cli, JsonReportHasTheDocumentedFields) {
  CliRun r = run_lagom({"simulate", "--workload", data_path("workloads/two-rank.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"context", "step_time_us", "events", "fingerprint", "ranks", "ops"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"lagom_version", "git_sha", "input_hash", "workload"}) {
    EXPECT_TRUE(j["context"].contains(key)) << key;
  }
  // two-rank.json: rank 1 computes 30 us, rank 0 10 us, then a 20 us all-reduce: step 50 us.
  EXPECT_DOUBLE_EQ(j["step_time_us"].get<double>(), 50.0);
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ops"].size(), 4u);
  EXPECT_EQ(j["fingerprint"].get<std::string>().size(), 16u);
  CliRun brief = run_lagom(
      {"simulate", "--workload", data_path("workloads/two-rank.json"), "--json", "--no-op-times"});
  EXPECT_FALSE(nlohmann::json::parse(brief.out).contains("ops"));
}

TEST(Cli, SameInputGivesByteIdenticalJsonAndTrace) {
  TempDir tmp;
  const std::string t1 = (tmp.path() / "t1.json").string();
  const std::string t2 = (tmp.path() / "t2.json").string();
  CliRun a =
      run_lagom({"simulate", "--workload", "builtin:pipeline-2stage", "--json", "--trace", t1});
  CliRun b =
      run_lagom({"simulate", "--workload", "builtin:pipeline-2stage", "--json", "--trace", t2});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const std::string ta = slurp(t1);
  EXPECT_FALSE(ta.empty());
  EXPECT_EQ(ta, slurp(t2));
  EXPECT_TRUE(nlohmann::json::accept(ta));
}

struct BadFile {
  const char* file;
  const char* expect;
};

class CliBadInput : public ::testing::TestWithParam<BadFile> {};

TEST_P(CliBadInput, ExitsOneWithTheFileAndReason) {
  const std::string path = data_path(GetParam().file);
  CliRun r = run_lagom({"simulate", "--workload", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "lagom simulate: error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, path)) << r.err;
  EXPECT_TRUE(contains(r.err, GetParam().expect)) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Files, CliBadInput,
                         ::testing::Values(BadFile{"bad/empty.json", "empty"},
                                           BadFile{"bad/truncated.json", "truncated"},
                                           BadFile{"bad/not-json.json", "not valid JSON"},
                                           BadFile{"bad/pipeline-deadlock.json", "deadlock"},
                                           BadFile{"bad/cycle.json", "dependency cycle"},
                                           BadFile{"bad/untimed.json", "no 'duration_us'"},
                                           BadFile{"bad/does-not-exist.json",
                                                   "cannot open workload file"}));

TEST(Cli, UnknownBuiltinListsTheKnownOnes) {
  CliRun r = run_lagom({"simulate", "--workload", "builtin:nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "unknown built-in workload 'nope'"));
  EXPECT_TRUE(contains(r.err, "fsdp-4gpu"));
}

TEST(Cli, UnwritableTraceIsAnError) {
  CliRun r = run_lagom({"simulate", "--trace", "/nonexistent-dir/t.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "cannot write trace file"));
}

}  // namespace
}  // namespace lagom::test
