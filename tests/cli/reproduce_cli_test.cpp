// `lagom reproduce`: each target runs the paper's setup and reports claims whose verdicts follow
// from the numbers beside them; bad targets and filters are clear errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

nlohmann::json target_json(const std::vector<std::string>& args) {
  std::vector<std::string> a = {"reproduce"};
  a.insert(a.end(), args.begin(), args.end());
  a.push_back("--json");
  const CliRun r = run_lagom(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["targets"].size(), 1u);
  return j["targets"][0];
}

void expect_valid_claims(const nlohmann::json& t) {
  const std::set<std::string> verdicts = {"reproduced", "direction only", "not reproduced"};
  ASSERT_FALSE(t["claims"].empty());
  for (const auto& c : t["claims"]) {
    EXPECT_TRUE(verdicts.count(c["verdict"].get<std::string>())) << c.dump();
    EXPECT_FALSE(c["paper"].get<std::string>().empty()) << c.dump();
    EXPECT_FALSE(c["ours_text"].get<std::string>().empty()) << c.dump();
    // A gap always names its mechanism.
    if (c["verdict"] != "reproduced") {
      EXPECT_FALSE(c["mechanism"].get<std::string>().empty()) << c.dump();
    }
  }
}

const nlohmann::json& claim(const nlohmann::json& t, std::string_view metric) {
  for (const auto& c : t["claims"]) {
    if (c["metric"].get<std::string>() == metric) {
      return c;
    }
  }
  ADD_FAILURE() << "no claim '" << metric << "'";
  static const nlohmann::json none;
  return none;
}

TEST(ReproduceCli, Figure3MatchesTheOverlapCommandAndJudgesFromItsNumbers) {
  const auto t = target_json({"fig3"});
  expect_valid_claims(t);
  ASSERT_EQ(t["details"].size(), 30u);  // 6 channel counts x 5 chunks
  double c16 = 0, c32 = 0, m16 = 0, m32 = 0;
  for (const auto& d : t["details"]) {
    if (d["chunk_bytes"] == 16 << 10 && d["nchannels"] == 16) {
      c16 = d["compute_us"];
      m16 = d["comm_us"];
    }
    if (d["chunk_bytes"] == 16 << 10 && d["nchannels"] == 32) {
      c32 = d["compute_us"];
      m32 = d["comm_us"];
    }
  }
  // The claims report exactly these cells.
  EXPECT_NEAR(claim(t, "computation time, NC 32 against NC 16")["ours"].get<double>(),
              c32 / c16 - 1, 1e-12);
  EXPECT_NEAR(claim(t, "communication time, NC 32 against NC 16")["ours"].get<double>(),
              m32 / m16 - 1, 1e-12);
  // The same setup through `lagom overlap` gives the same cells.
  const CliRun o =
      run_lagom({"overlap", "--cluster", "a40-pcie", "--coll", "allreduce", "--bytes", "32M",
                 "--compute", "ffn:tokens=4096,hidden=2560,ffn=10240", "--nthreads", "128",
                 "--nchannels", "32", "--chunk", "16K", "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(o.out)["rows"][0]["compute_us"].get<double>(), c32);
  // Verdicts: a 30.2% paper gap with ours between 10% and 24% is the paper's direction only.
  const double gap = 100 * (c32 / c16 - 1);
  const std::string v = claim(t, "computation time, NC 32 against NC 16")["verdict"];
  if (gap >= 24.16 && gap <= 36.24) {
    EXPECT_EQ(v, "reproduced");
  } else if (gap >= 3.02) {
    EXPECT_EQ(v, "direction only");
  } else {
    EXPECT_EQ(v, "not reproduced");
  }
}

TEST(ReproduceCli, Figure5SweepsEachCollectiveAndWritesCsv) {
  TempDir dir;
  const std::string csv = (dir.path() / "fig5.csv").string();
  const CliRun r = run_lagom({"reproduce", "fig5", "--csv", csv});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "## lagom reproduce fig5")) << r.out;
  const std::string text = slurp(csv);
  EXPECT_EQ(text.rfind("target,experiment,metric,paper,ours,ours_text,verdict,mechanism\n", 0), 0u)
      << text;
  EXPECT_TRUE(contains(text, "\nfig5,")) << text;
  const auto t = target_json({"fig5"});
  expect_valid_claims(t);
  ASSERT_EQ(t["details"].size(), 10u);  // A and B, 5 channel counts each
  // One collective's sweep leaves the other's time alone only where it does not share a link
  // with it; at least each collective's own time must fall from 1 to 2 channels.
  EXPECT_LT(t["details"][1]["comm_us"].get<double>(), t["details"][0]["comm_us"].get<double>());
  EXPECT_LT(t["details"][6]["comm_us"].get<double>(), t["details"][5]["comm_us"].get<double>());
}

TEST(ReproduceCli, Figure8ConfigurationsAndIterations) {
  const auto t = target_json({"fig8"});
  expect_valid_claims(t);
  // The paper's baseline: NCCL 2.18 runs 8 channels with 2 MiB chunks on one node of cluster A.
  for (const auto& d : t["details"]) {
    if (d.contains("method") && d["method"] == "NCCL") {
      EXPECT_EQ(d["config"]["nchannels"], 8);
      EXPECT_EQ(d["config"]["chunk_bytes"], 2 << 20);
    }
  }
  // 8b: which pattern Lagom's walk steps first, from the order of its accepted steps.
  const auto& b = claim(t, "the pattern Lagom tunes first");
  for (const auto& d : t["details"]) {
    if (d.contains("reducescatter_first_step")) {
      const auto rs = d["reducescatter_first_step"].get<std::int64_t>();
      const auto ag = d["allgather_first_step"].get<std::int64_t>();
      EXPECT_EQ(b["verdict"], rs > 0 && (ag == 0 || rs < ag) ? "reproduced" : "not reproduced");
      EXPECT_EQ(static_cast<std::int64_t>(d["order"].size()), d["steps"].get<std::int64_t>());
    }
  }
  const double ac = claim(t, "AutoCCL's channels")["ours"];
  const double lg = claim(t, "Lagom's channels")["ours"];
  // AutoCCL within NCCL 2.18's MAXCHANNELS; Lagom at or below NCCL's 8 (the paper's direction).
  EXPECT_GE(ac, 1);
  EXPECT_LE(ac, 32);
  EXPECT_LE(lg, 8);
  for (const auto& d : t["details"]) {
    if (d.contains("step_speedup")) {
      if (d["method"] == "Lagom") {
        EXPECT_GE(d["step_speedup"].get<double>(), 1.0);  // never worse than NCCL
      }
    } else if (d.contains("autoccl_evaluations")) {
      EXPECT_GT(d["autoccl_evaluations"].get<int>(), 0);
      EXPECT_GT(d["lagom_evaluations"].get<int>(), 0);
    }
  }
}

TEST(ReproduceCli, BadTargetsAndFiltersAreErrorsThatListWhatExists) {
  CliRun r = run_lagom({"reproduce"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "fig3, fig5, fig7, fig8, table2")) << r.err;
  r = run_lagom({"reproduce", "fig9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown target 'fig9'")) << r.err;
  EXPECT_TRUE(contains(r.err, "fig3, fig5, fig7, fig8, table2")) << r.err;
  r = run_lagom({"reproduce", "fig7", "--only", "dp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown family 'dp' (fsdp, tp, ep)")) << r.err;
  r = run_lagom({"reproduce", "fig7", "--workload", "gpt-3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "no Table 2 workload matches")) << r.err;
  r = run_lagom({"reproduce", "fig7", "--baseline", "2.18"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "paper or emulated")) << r.err;
  r = run_lagom({"reproduce", "fig3", "--csv", "/nonexistent-dir/x.csv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "/nonexistent-dir/x.csv")) << r.err;
}

// Slower (a few seconds; a minute under the sanitizers, which leave these out).
TEST(ReproduceSlow, Figure7RowsAreDeterministicAndNeverBelowNccl) {
  const std::vector<std::string> args = {"reproduce",  "fig7",  "--only", "ep",
                                         "--workload", "olmoe", "--json"};
  const CliRun a = run_lagom(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto j = nlohmann::json::parse(a.out);
  const auto& t = j["targets"][0];
  expect_valid_claims(t);
  ASSERT_EQ(t["details"].size(), 2u);  // one workload on clusters A and B
  for (const auto& d : t["details"]) {
    EXPECT_GE(d["lagom_speedup"].get<double>(), 1.0) << d.dump();
    EXPECT_GT(d["compute_share"].get<double>(), 0.0);
    EXPECT_LE(d["compute_share"].get<double>(), 1.0 + 1e-9);
  }
  EXPECT_EQ(t["details"][0]["nccl_version"], "2.18");  // the paper's NCCL on A and B
  EXPECT_EQ(t["details"][1]["nccl_version"], "2.18");
  const CliRun b = run_lagom(args);
  EXPECT_EQ(a.out, b.out);
}

TEST(ReproduceSlow, Table2EveryWorkloadFitsAtItsMicroBatch) {
  const auto t = target_json({"table2"});
  expect_valid_claims(t);
  ASSERT_EQ(t["details"].size(), 14u);
  for (const auto& d : t["details"]) {
    EXPECT_LE(d["memory_per_gpu_bytes"].get<double>(), 48e9) << d["workload"];
    EXPECT_GT(d["memory_at_2x_mbs_bytes"].get<double>(), d["memory_per_gpu_bytes"].get<double>());
    EXPECT_GT(d["cluster_a_mfu"].get<double>(), 0.0);
    EXPECT_LT(d["cluster_a_mfu"].get<double>(), 1.0);
  }
}

}  // namespace
}  // namespace lagom::test
