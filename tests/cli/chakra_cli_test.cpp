// End-to-end tests of Chakra ET on the command line: `lagom export` and `lagom simulate --chakra`.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

TEST(ChakraCli, ExportThenSimulateGivesTheSameStep) {
  TempDir tmp;
  for (const std::string name : {"fsdp-4gpu", "pipeline-2stage"}) {
    SCOPED_TRACE(name);
    const std::string prefix = (tmp.path() / name).string();
    CliRun ex = run_lagom(
        {"export", "--format", "chakra", "--out", prefix, "--workload", "builtin:" + name});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    EXPECT_TRUE(contains(ex.out, prefix + ".0.et")) << ex.out;
    EXPECT_TRUE(contains(ex.out, prefix + ".comm_groups.json")) << ex.out;
    EXPECT_TRUE(std::filesystem::exists(prefix + ".1.et"));
    EXPECT_TRUE(ex.err.empty()) << ex.err;

    CliRun orig = run_lagom({"simulate", "--workload", "builtin:" + name, "--json"});
    CliRun back = run_lagom({"simulate", "--chakra", prefix, "--json"});
    ASSERT_EQ(orig.exit_code, 0) << orig.err;
    ASSERT_EQ(back.exit_code, 0) << back.err;
    const auto a = nlohmann::json::parse(orig.out);
    const auto b = nlohmann::json::parse(back.out);
    EXPECT_EQ(a["step_time_us"], b["step_time_us"]);
    EXPECT_EQ(a["fingerprint"], b["fingerprint"]);
    EXPECT_EQ(a["ops"], b["ops"]);
    EXPECT_EQ(b["context"]["workload"], prefix);
    EXPECT_TRUE(b["context"]["input_hash"].get<std::string>().starts_with("fnv1a64:"));

    // The sidecar is found by default; naming it gives the same result.
    CliRun named = run_lagom(
        {"simulate", "--chakra", prefix, "--comm-groups", prefix + ".comm_groups.json", "--json"});
    ASSERT_EQ(named.exit_code, 0) << named.err;
    EXPECT_EQ(nlohmann::json::parse(named.out)["fingerprint"], a["fingerprint"]);
  }
}

TEST(ChakraCli, ExportJsonConvertsChakraBack) {
  TempDir tmp;
  const std::string prefix = (tmp.path() / "p").string();
  ASSERT_EQ(run_lagom({"export", "--format", "chakra", "--out", prefix, "--workload",
                       data_path("workloads/two-rank.json")})
                .exit_code,
            0);
  CliRun direct = run_lagom({"export", "--format", "json", "--out", "-", "--workload",
                             data_path("workloads/two-rank.json")});
  CliRun converted = run_lagom({"export", "--format", "json", "--out", "-", "--chakra", prefix});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  EXPECT_EQ(direct.out, converted.out);
  EXPECT_TRUE(nlohmann::json::accept(converted.out));
  const std::string file = (tmp.path() / "w.json").string();
  CliRun to_file = run_lagom({"export", "--format", "json", "--out", file, "--chakra", prefix});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(slurp(file), direct.out);
  CliRun sim = run_lagom({"simulate", "--workload", file});
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
}

TEST(ChakraCli, ExportDefaultsToTheBuiltinExample) {
  CliRun r = run_lagom({"export", "--format", "json", "--out", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "r0.fwd0"));
}

TEST(ChakraCli, HelpDescribesTheOptions) {
  CliRun top = run_lagom({"--help"});
  EXPECT_TRUE(contains(top.out, "export"));
  CliRun ex = run_lagom({"export", "--help"});
  EXPECT_EQ(ex.exit_code, 0);
  for (const char* opt : {"--format", "--out", "--workload", "--chakra", "--comm-groups"}) {
    EXPECT_TRUE(contains(ex.out, opt)) << opt;
  }
  CliRun sim = run_lagom({"simulate", "--help"});
  EXPECT_TRUE(contains(sim.out, "--chakra"));
  EXPECT_TRUE(contains(sim.out, "--comm-groups"));
}

TEST(ChakraCli, CommandLineErrors) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {{"simulate", "--workload", "builtin:fsdp-4gpu", "--chakra", "x"}, "alternatives"},
      {{"simulate", "--comm-groups", "g.json"}, "--comm-groups applies to --chakra"},
      {{"export", "--out", "x"}, "--format is required"},
      {{"export", "--format", "proto", "--out", "x"}, "chakra or json"},
      {{"export", "--format", "chakra"}, "--out PREFIX is required"},
      {{"export", "--format", "chakra", "--out", "-"}, "path prefix"},
  };
  for (const Case& c : cases) {
    CliRun r = run_lagom(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, c.expect)) << r.err;
  }
}

TEST(ChakraCli, BadTracesExitOneNamingTheFile) {
  TempDir tmp;
  const std::string prefix = (tmp.path() / "t").string();
  CliRun none = run_lagom({"simulate", "--chakra", prefix});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_TRUE(contains(none.err, "lagom simulate: error: no Chakra trace files")) << none.err;
  {
    std::ofstream f(prefix + ".0.et", std::ios::binary);
    f << "not a trace";
  }
  CliRun bad = run_lagom({"simulate", "--chakra", prefix});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, prefix + ".0.et")) << bad.err;
  EXPECT_TRUE(bad.out.empty());
  // A trace whose pg_name the given comm-groups file lacks.
  const std::string good = (tmp.path() / "g").string();
  ASSERT_EQ(run_lagom({"export", "--format", "chakra", "--out", good}).exit_code, 0);
  const std::string groups = (tmp.path() / "groups.json").string();
  {
    std::ofstream f(groups);
    f << R"({"tp": [0, 1]})";
  }
  CliRun missing = run_lagom({"simulate", "--chakra", good, "--comm-groups", groups});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "pg_name 'world' is not a group in the comm-groups file"))
      << missing.err;
  // Exporting to a directory that does not exist.
  CliRun unwritable =
      run_lagom({"export", "--format", "chakra", "--out", (tmp.path() / "no" / "x").string()});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_TRUE(contains(unwritable.err, "cannot write")) << unwritable.err;
}

}  // namespace
}  // namespace lagom::test
