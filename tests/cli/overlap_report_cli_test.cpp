// End-to-end tests of the overlap report of `lagom simulate`: per-op slowdowns and overlap groups
// in --json, the summary's overlap section, the trace's slice args.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_json.hpp"
#include "cli_runner.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

// overlap-2gpu.json: on each of 2 ranks, a GEMM (1056 blocks, 1 per SM) on stream "compute"
// and a 256 MiB all-reduce on stream "comm", both launched at 0. Rank r's ops overlap, so each
// rank has one group {rR.gemm, rR.ar}. With contention the all-reduce's channels take SMs from
// the GEMM (more waves) and both draw HBM, so the GEMM runs longer than alone.
const std::string kOverlap = "workloads/overlap-2gpu.json";

std::map<std::string, nlohmann::json> ops_by_id(const nlohmann::json& j) {
  std::map<std::string, nlohmann::json> m;
  for (const auto& op : j["ops"]) {
    m[op["id"].get<std::string>()] = op;
  }
  return m;
}

TEST(OverlapReportCli, OpsCarryAloneTimeAndSlowdown) {
  const auto j = json_of(run_lagom(
      {"simulate", "--workload", data_path(kOverlap), "--cluster", "dgx-h100", "--json"}));
  ASSERT_EQ(j["ops"].size(), 4u);
  for (const auto& op : j["ops"]) {
    for (const char* key :
         {"id", "launch_us", "start_us", "end_us", "standalone_us", "alone_us", "slowdown"}) {
      EXPECT_TRUE(op.contains(key)) << key;
    }
    // slowdown = (end - start) / alone; nothing runs faster than alone.
    const double run = op["end_us"].get<double>() - op["start_us"].get<double>();
    const double alone = op["alone_us"].get<double>();
    ASSERT_GT(alone, 0) << op["id"];
    EXPECT_NEAR(op["slowdown"].get<double>(), run / alone, 1e-9 * run / alone) << op["id"];
    EXPECT_GE(op["slowdown"].get<double>(), 1.0) << op["id"];
    EXPECT_EQ(op["alone_us"], op["standalone_us"]);
  }
  const auto ops = ops_by_id(j);
  EXPECT_GT(ops.at("r0.gemm")["slowdown"].get<double>(), 1.0);
  EXPECT_GT(ops.at("r1.gemm")["slowdown"].get<double>(), 1.0);
  // Both members of the all-reduce record the call's times.
  EXPECT_EQ(ops.at("r0.ar")["slowdown"], ops.at("r1.ar")["slowdown"]);
}

TEST(OverlapReportCli, WithoutContentionEverySlowdownIsOne) {
  const auto j = json_of(run_lagom({"simulate", "--workload", data_path(kOverlap), "--cluster",
                                    "dgx-h100", "--no-contention", "--json"}));
  for (const auto& op : j["ops"]) {
    EXPECT_EQ(op["slowdown"].get<double>(), 1.0) << op["id"];
  }
  // The ops still overlap (groups are geometric), without slowing each other.
  EXPECT_EQ(j["overlap"]["groups"], 2);
  EXPECT_EQ(j["overlap"]["compute_slowdown_mean"].get<double>(), 1.0);
  EXPECT_EQ(j["overlap"]["compute_slowdown_max"].get<double>(), 1.0);
  EXPECT_EQ(j["overlap"]["comm_slowdown_mean"].get<double>(), 1.0);
}

TEST(OverlapReportCli, OverlapObjectHasOneGroupPerRankWithXYZFromTheOps) {
  const auto j = json_of(run_lagom(
      {"simulate", "--workload", data_path(kOverlap), "--cluster", "dgx-h100", "--json"}));
  ASSERT_TRUE(j.contains("overlap"));
  const auto& o = j["overlap"];
  for (const char* key : {"groups", "X_us", "Y_us", "Z_us", "compute_slowdown_mean",
                          "compute_slowdown_max", "comm_slowdown_mean", "group_list"}) {
    EXPECT_TRUE(o.contains(key)) << key;
  }
  EXPECT_FALSE(o.contains("group_list_omitted"));
  ASSERT_EQ(o["groups"], 2);
  ASSERT_EQ(o["group_list"].size(), 2u);
  const auto ops = ops_by_id(j);
  double sum_x = 0;
  double sum_y = 0;
  double sum_z = 0;
  double max_compute = 0;
  for (int r = 0; r < 2; ++r) {
    const auto& g = o["group_list"][r];
    EXPECT_EQ(g["rank"], r);
    const std::string gemm = "r" + std::to_string(r) + ".gemm";
    const std::string ar = "r" + std::to_string(r) + ".ar";
    // Both start at 0 (the all-reduce's peers arrive at once); ties go by op order, and the
    // compute stream is listed first.
    EXPECT_EQ(g["ops"], nlohmann::json::array({gemm, ar}));
    // X: the all-reduce's running time; Y: the GEMM's; Z: first start to last end.
    const auto& c = ops.at(gemm);
    const auto& a = ops.at(ar);
    const double x = a["end_us"].get<double>() - a["start_us"].get<double>();
    const double y = c["end_us"].get<double>() - c["start_us"].get<double>();
    const double start = std::min(a["start_us"].get<double>(), c["start_us"].get<double>());
    const double end = std::max(a["end_us"].get<double>(), c["end_us"].get<double>());
    EXPECT_NEAR(g["X_us"].get<double>(), x, 1e-6);
    EXPECT_NEAR(g["Y_us"].get<double>(), y, 1e-6);
    EXPECT_NEAR(g["start_us"].get<double>(), start, 1e-6);
    EXPECT_NEAR(g["end_us"].get<double>(), end, 1e-6);
    EXPECT_NEAR(g["Z_us"].get<double>(), end - start, 1e-6);
    // One serial stream each: Z >= max(X, Y).
    EXPECT_GE(g["Z_us"].get<double>() + 1e-9,
              std::max(g["X_us"].get<double>(), g["Y_us"].get<double>()));
    sum_x += x;
    sum_y += y;
    sum_z += end - start;
    max_compute = std::max(max_compute, c["slowdown"].get<double>());
  }
  EXPECT_NEAR(o["X_us"].get<double>(), sum_x, 1e-6);
  EXPECT_NEAR(o["Y_us"].get<double>(), sum_y, 1e-6);
  EXPECT_NEAR(o["Z_us"].get<double>(), sum_z, 1e-6);
  EXPECT_GT(o["compute_slowdown_mean"].get<double>(), 1.0);
  EXPECT_EQ(o["compute_slowdown_max"].get<double>(), max_compute);
  EXPECT_GE(o["comm_slowdown_mean"].get<double>(), 1.0);
}

TEST(OverlapReportCli, NoOverlapGivesAnEmptyObjectAndNoSummarySection) {
  // two-rank.json: each rank's all-reduce depends on its compute op: nothing overlaps.
  const auto j = json_of(
      run_lagom({"simulate", "--workload", data_path("workloads/two-rank.json"), "--json"}));
  EXPECT_EQ(j["overlap"]["groups"], 0);
  EXPECT_EQ(j["overlap"]["X_us"].get<double>(), 0.0);
  EXPECT_EQ(j["overlap"]["group_list"], nlohmann::json::array());
  EXPECT_EQ(j["overlap"]["compute_slowdown_mean"].get<double>(), 1.0);
  CliRun summary = run_lagom({"simulate", "--workload", data_path("workloads/two-rank.json")});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_FALSE(contains(summary.out, "overlap")) << summary.out;
}

TEST(OverlapReportCli, SummaryHasAnOverlapSection) {
  CliRun r = run_lagom({"simulate", "--workload", data_path(kOverlap), "--cluster", "dgx-h100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "overlap      2 groups")) << r.out;
  EXPECT_TRUE(contains(r.out, "X (comm)")) << r.out;
  EXPECT_TRUE(contains(r.out, "Y (compute)")) << r.out;
  EXPECT_TRUE(contains(r.out, "Z (span)")) << r.out;
  EXPECT_TRUE(contains(r.out, "compute slowdown mean")) << r.out;
}

TEST(OverlapReportCli, GroupListIsOmittedAboveSixteenRanks) {
  // 17 ranks, each a compute op (10 us) beside an all-reduce (5 us) on the world group: 17
  // groups, too many to list.
  TempDir tmp;
  nlohmann::json ranks = nlohmann::json::array();
  nlohmann::json world = nlohmann::json::array();
  for (int r = 0; r < 17; ++r) {
    const std::string p = "r" + std::to_string(r);
    world.push_back(r);
    nlohmann::json k = {{"id", p + ".k"}, {"kind", "compute"}, {"duration_us", 10}};
    nlohmann::json ar = {{"id", p + ".ar"},
                         {"kind", "allreduce"},
                         {"group", "world"},
                         {"bytes", 1024},
                         {"duration_us", 5}};
    nlohmann::json compute = {{"stream", "compute"}, {"ops", nlohmann::json::array({k})}};
    nlohmann::json comm = {{"stream", "comm"}, {"ops", nlohmann::json::array({ar})}};
    ranks.push_back({{"rank", r}, {"streams", nlohmann::json::array({compute, comm})}});
  }
  const nlohmann::json doc = {{"format", "lagom.workload"},
                              {"version", 1},
                              {"groups", {{"world", world}}},
                              {"ranks", ranks}};
  const std::string path = (tmp.path() / "wide.json").string();
  std::ofstream(path) << doc.dump();
  const auto j = json_of(run_lagom({"simulate", "--workload", path, "--json"}));
  EXPECT_EQ(j["overlap"]["groups"], 17);
  EXPECT_EQ(j["overlap"]["group_list_omitted"], true);
  EXPECT_FALSE(j["overlap"].contains("group_list"));
  // Each group: X = 5, Y = 10, Z = 10.
  EXPECT_DOUBLE_EQ(j["overlap"]["X_us"].get<double>(), 17 * 5.0);
  EXPECT_DOUBLE_EQ(j["overlap"]["Y_us"].get<double>(), 17 * 10.0);
  EXPECT_DOUBLE_EQ(j["overlap"]["Z_us"].get<double>(), 17 * 10.0);
}

TEST(OverlapReportCli, TraceSlicesCarryAloneTimeAndSlowdown) {
  TempDir tmp;
  const std::string trace = (tmp.path() / "t.json").string();
  const auto j = json_of(run_lagom({"simulate", "--workload", data_path(kOverlap), "--cluster",
                                    "dgx-h100", "--json", "--trace", trace}));
  const auto ops = ops_by_id(j);
  const auto doc = nlohmann::json::parse(slurp(trace));
  int slices = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] == "wait") {
      continue;
    }
    ++slices;
    const auto& op = ops.at(e["name"].get<std::string>());
    ASSERT_TRUE(e["args"].contains("alone_us")) << e.dump();
    ASSERT_TRUE(e["args"].contains("slowdown")) << e.dump();
    EXPECT_DOUBLE_EQ(e["args"]["alone_us"].get<double>(), op["alone_us"].get<double>());
    EXPECT_DOUBLE_EQ(e["args"]["slowdown"].get<double>(), op["slowdown"].get<double>());
  }
  EXPECT_EQ(slices, 4);
}

TEST(OverlapReportCli, SameInputGivesByteIdenticalJson) {
  const std::vector<std::string> args = {"simulate",  "--workload", data_path(kOverlap),
                                         "--cluster", "dgx-h100",   "--json"};
  CliRun a = run_lagom(args);
  CliRun b = run_lagom(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

}  // namespace
}  // namespace lagom::test
