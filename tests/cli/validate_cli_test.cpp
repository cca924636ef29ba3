// `lagom validate`: measurements written as lagom-validate writes them (here made from the
// simulation itself, so that every difference is one the test put there) against the simulation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_runner.hpp"

namespace lagom::test {
namespace {

using nlohmann::json;

// The simulated ops of a workload (the built-in pipeline example) on a DGX H100, as
// lagom-validate's output: each op from when its rank reached it (a collective's wait for its
// peers included, as events record it), with `scale` applied to op `slow`'s duration (and
// everything after it on its rank left alone).
json measured_from_simulation(const std::string& slow = "", double scale = 1.0,
                              const std::string& workload = "builtin:pipeline-2stage") {
  const CliRun sim =
      run_lagom({"simulate", "--workload", workload, "--cluster", "dgx-h100", "--json"});
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  const json report = json::parse(sim.out);
  json m = {{"format", "lagom.measured"},
            {"version", 1},
            {"workload", "builtin:pipeline-2stage"},
            {"gpu", "NVIDIA H100 80GB HBM3"},
            {"steps", 10},
            {"standins", false},
            {"step_time_us", report["step_time_us"]},
            {"ops", json::array()}};
  for (const json& op : report["ops"]) {
    double end = op["end_us"].get<double>();
    if (op["id"] == slow) {
      end = op["start_us"].get<double>() + scale * (end - op["start_us"].get<double>());
    }
    m["ops"].push_back(
        {{"id", op["id"]}, {"rank", op["rank"]}, {"start_us", op["launch_us"]}, {"end_us", end}});
  }
  return m;
}

std::string write(const TempDir& dir, const std::string& name, const json& doc) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << doc.dump(1);
  return path;
}

std::vector<std::string> args(const std::string& measured) {
  return {"validate",  "--measured", measured, "--workload", "builtin:pipeline-2stage",
          "--cluster", "dgx-h100",   "--json"};
}

TEST(ValidateCli, AMeasurementEqualToTheSimulationHasNoError) {
  TempDir dir;
  const CliRun r = run_lagom(args(write(dir, "m.json", measured_from_simulation())));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["context"]["command"], "validate");
  EXPECT_NEAR(j["step"]["error"].get<double>(), 0.0, 1e-9);
  EXPECT_EQ(j["ops"]["all"]["ops"].get<int>(), 32);
  EXPECT_NEAR(j["ops"]["all"]["worst_abs_error"].get<double>(), 0.0, 1e-6);
  EXPECT_NEAR(j["overlap"]["measured"]["span_us"].get<double>(),
              j["overlap"]["simulated"]["span_us"].get<double>(), 1e-3);
  EXPECT_TRUE(j["missing"].empty());
}

// Rank 1 reaches the all-reduce 990 us after rank 0; rank 0's events record the wait. The
// collective's duration counts from the last arrival in both timelines, so a measurement equal to
// the simulation has no error (rank 0's used to read -96%).
TEST(ValidateCli, ACollectiveCountsFromItsLastMembersArrival) {
  TempDir dir;
  const json workload = json::parse(R"({"format": "lagom.workload", "version": 1,
    "groups": {"g": [0, 1]}, "ranks": [
    {"rank": 0, "streams": [{"stream": "c", "ops": [
      {"id": "r0.k", "kind": "compute", "duration_us": 10},
      {"id": "r0.ar", "kind": "allreduce", "group": "g", "bytes": 1048576}]}]},
    {"rank": 1, "streams": [{"stream": "c", "ops": [
      {"id": "r1.k", "kind": "compute", "duration_us": 1000},
      {"id": "r1.ar", "kind": "allreduce", "group": "g", "bytes": 1048576}]}]}]})");
  const std::string w = write(dir, "w.json", workload);
  json m = measured_from_simulation("", 1.0, w);
  ASSERT_LT(m["ops"][1]["start_us"].get<double>(), 20.0);  // rank 0 waits from t = 10 us
  const CliRun r = run_lagom({"validate", "--measured", write(dir, "m.json", m), "--workload", w,
                              "--cluster", "dgx-h100", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["ops"]["comm"]["ops"].get<int>(), 2);
  EXPECT_NEAR(j["ops"]["comm"]["worst_abs_error"].get<double>(), 0.0, 1e-6);
}

TEST(ValidateCli, NamesTheOpThatWasOff) {
  // s0.F1 took twice as long on the GPU: measured 2x, so the simulation is -50% off for it,
  // and it is the worst op.
  TempDir dir;
  const CliRun r = run_lagom(args(write(dir, "m.json", measured_from_simulation("s0.F1", 2.0))));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_NEAR(j["ops"]["compute"]["worst_abs_error"].get<double>(), 0.5, 1e-4);
  EXPECT_NE(j["ops"]["compute"]["worst_op"].get<std::string>().find("s0.F1"), std::string::npos);
  EXPECT_NEAR(j["worst"][0]["error"].get<double>(), -0.5, 1e-4);
  EXPECT_NEAR(j["ops"]["comm"]["worst_abs_error"].get<double>(), 0.0, 1e-6);
}

TEST(ValidateCli, WritesBothTimelinesAndSaysWhatIsMissing) {
  TempDir dir;
  json m = measured_from_simulation();
  m["ops"].erase(m["ops"].begin() + 3);
  const std::string trace = (dir.path() / "both.json").string();
  std::vector<std::string> a = args(write(dir, "m.json", m));
  a.pop_back();  // human output
  a.insert(a.end(), {"--trace", trace});
  const CliRun r = run_lagom(a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 op(s) not measured"), std::string::npos) << r.out;
  const json t = json::parse(slurp(trace));
  std::set<std::string> processes;
  for (const json& e : t["traceEvents"]) {
    if (e["name"] == "process_name") {
      processes.insert(e["args"]["name"].get<std::string>());
    }
  }
  EXPECT_TRUE(processes.count("measured rank 0"));
  EXPECT_TRUE(processes.count("simulated rank 1"));
}

struct BadMeasured {
  std::string what;
  std::function<void(json&)> edit;
  std::string expect;
};

class BadMeasurements : public ::testing::TestWithParam<BadMeasured> {};

TEST_P(BadMeasurements, AreErrorsNamingTheFile) {
  TempDir dir;
  json m = measured_from_simulation();
  GetParam().edit(m);
  const std::string path = write(dir, "bad.json", m);
  const CliRun r = run_lagom(args(path));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(GetParam().expect), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadMeasurements,
    ::testing::Values(
        BadMeasured{"unknown_op", [](json& m) { m["ops"][0]["id"] = "nope"; },
                    "op 'nope' on rank 0 is not in the workload"},
        BadMeasured{"wrong_rank", [](json& m) { m["ops"][0]["rank"] = 1; }, "on rank 1 is not"},
        BadMeasured{"twice", [](json& m) { m["ops"].push_back(m["ops"][0]); },
                    "was measured twice"},
        BadMeasured{"reversed", [](json& m) { m["ops"][0]["end_us"] = -1; },
                    "ops[0].end_us: expected a time in microseconds >= 0"},
        BadMeasured{
            "ends_before_start",
            [](json& m) { m["ops"][1]["end_us"] = m["ops"][1]["start_us"].get<double>() - 1; },
            "ops[1]: ends"},
        BadMeasured{"wrong_format", [](json& m) { m["format"] = "lagom.bundle"; },
                    "expected \"lagom.measured\""},
        BadMeasured{"unknown_field", [](json& m) { m["speed"] = 1; }, "unknown field 'speed'"},
        BadMeasured{"no_step_time", [](json& m) { m["step_time_us"] = 0; },
                    "step_time_us: must be > 0"},
        BadMeasured{"no_ops", [](json& m) { m["ops"] = json::array(); }, "ops: is empty"}),
    [](const ::testing::TestParamInfo<BadMeasured>& p) { return p.param.what; });

TEST(ValidateCli, NeedsItsInputs) {
  EXPECT_EQ(
      run_lagom({"validate", "--workload", "builtin:fsdp-4gpu", "--cluster", "dgx-h100"}).exit_code,
      2);
  TempDir dir;
  const CliRun r = run_lagom({"validate", "--measured", (dir.path() / "none.json").string(),
                              "--workload", "builtin:fsdp-4gpu", "--cluster", "dgx-h100"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open measurements"), std::string::npos) << r.err;
  // A relative error needs a measured duration: ops of 0 us cannot be compared.
  const CliRun zero = run_lagom({"validate", "--measured", "m.json", "--workload",
                                 "builtin:fsdp-4gpu", "--cluster", "dgx-h100", "--min-us", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--min-us: expected a number from 1e-06 to 1000000000000 (us), got '0'"),
            std::string::npos)
      << zero.err;
}

}  // namespace
}  // namespace lagom::test
