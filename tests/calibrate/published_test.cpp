// Published training runs (calibrate/published.hpp): the reader, the error arithmetic, `lagom
// validate --published`, and the project's set against its bounds (docs/VALIDATION.md §4).
#include "lagom/calibrate/published.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"
#include "lagom/common/error.hpp"

namespace lagom::test {
namespace published_test {

using calibrate::PublishedMetric;

std::string doc_with(const std::string& runs, const std::string& extra = "") {
  return R"({"format": "lagom.published-runs", "version": 1, "name": "t", "description": "d",
             "source": "s", "metric": "tokens_per_s_per_gpu", "setup": {"cluster": "dgx-a100"})" +
         extra + R"(, "runs": )" + runs + "}";
}

const std::string kRun =
    R"({"name": "r", "model": "models/mpt-125m.json", "parallel": "fsdp=8", "gpus": 8,
        "nodes": 1, "mbs": 4, "gbs": 32, "seq": 512, "recompute": "none", "published": 1000})";

std::string error_of(const std::string& text) {
  try {
    (void)calibrate::parse_published_runs(text, "t.json", "/base");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PublishedRuns, TheProjectsFilesRead) {
  const std::vector<std::string> files =
      calibrate::published_run_files(data_path("published-runs"));
  ASSERT_EQ(files.size(), 4u);
  std::size_t runs = 0;
  for (const std::string& f : files) {
    const calibrate::PublishedSet s = calibrate::load_published_runs(f);
    EXPECT_FALSE(s.source.empty()) << f;
    EXPECT_FALSE(s.assumptions.empty()) << f;
    for (const calibrate::PublishedRun& r : s.runs) {
      EXPECT_GT(r.published, 0) << r.name;
      EXPECT_EQ(r.gpus % 8, 0) << r.name;
      EXPECT_NE(r.model.find("published-runs/models/"), std::string::npos) << r.model;
    }
    runs += s.runs.size();
  }
  EXPECT_EQ(runs, 8u + 61u + 52u + 18u);
}

TEST(PublishedRuns, ARunTakesTheSetupAndResolvesItsModel) {
  const calibrate::PublishedSet s =
      calibrate::parse_published_runs(doc_with("[" + kRun + "]"), "t.json", "/base");
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].cluster, "dgx-a100");
  EXPECT_EQ(s.runs[0].precision, "bf16");
  EXPECT_EQ(s.runs[0].model, "/base/models/mpt-125m.json");
  std::string own = kRun;
  own.replace(own.find(R"("nodes": 1)"), 10, R"("nodes": 1, "cluster": "c/mine.json")");
  EXPECT_EQ(calibrate::parse_published_runs(doc_with("[" + own + "]"), "t", "/b").runs[0].cluster,
            "/b/c/mine.json");
  EXPECT_EQ(s.metric, PublishedMetric::kTokensPerSecondGpu);
  // A zoo name stays a name.
  std::string zoo = kRun;
  zoo.replace(zoo.find("models/mpt-125m.json"), 20, "mpt-7b");
  EXPECT_EQ(calibrate::parse_published_runs(doc_with("[" + zoo + "]"), "t", "/b").runs[0].model,
            "mpt-7b");
}

// What-if settings: the setup's apply to every run, then the run's own (each object's paths are
// distinct, so their order within it does not matter), as `--set` in that order.
TEST(PublishedRuns, SettingsComeFromTheSetupThenTheRun) {
  std::string text = doc_with("[" + kRun + "]");
  text.replace(
      text.find(R"({"cluster": "dgx-a100"})"), 23,
      R"({"cluster": "dgx-a100", "set": {"compute.classes.attention.flops_efficiency": 0.3386}})");
  std::string own = kRun;
  own.replace(own.find(R"("nodes": 1)"), 10,
              R"("nodes": 1, "set": {"gpu.hbm_GBps": 1500, "cluster.name": "x", "a.b": [1, 4], "c": false, "d": 0.3386, "e": 1e16})");
  std::string two = doc_with("[" + kRun + ", " + own + "]");
  two.replace(two.find(R"({"cluster": "dgx-a100"})"), 23,
              R"({"cluster": "dgx-a100", "set": {"gpu.sms": 100}})");
  two.replace(two.rfind(R"("name": "r")"), 11, R"("name": "s")");
  const calibrate::PublishedSet a = calibrate::parse_published_runs(text, "t.json", "/b");
  EXPECT_EQ(a.runs[0].set,
            std::vector<std::string>{"compute.classes.attention.flops_efficiency=0.3386"});
  const calibrate::PublishedSet b = calibrate::parse_published_runs(two, "t.json", "/b");
  EXPECT_EQ(b.runs[0].set, std::vector<std::string>{"gpu.sms=100"});
  EXPECT_EQ(b.runs[1].set,
            (std::vector<std::string>{"gpu.sms=100", "a.b=[1,4]", "c=false", "cluster.name=x",
                                      "d=0.3386", "e=1e+16", "gpu.hbm_GBps=1500"}));
}

TEST(PublishedRuns, BadInputNamesTheFileAndThePath) {
  struct Case {
    std::string text;
    std::string says;
  };
  const auto with_run = [](const std::string& from, const std::string& to) {
    std::string r = kRun;
    r.replace(r.find(from), from.size(), to);
    return doc_with("[" + r + "]");
  };
  const Case cases[] = {
      {"", "t.json"},
      {doc_with("[]"), "runs: expected a non-empty array"},
      {doc_with("[" + kRun + "]", R"(, "extra": 1)"), "extra"},
      {with_run(R"("published": 1000)", R"("published": -3)"), "runs[0].published"},
      {with_run(R"("published": 1000)", R"("published": "fast")"), "runs[0].published"},
      {with_run(R"("published": 1000)", R"("published": 1e-300)"), "runs[0].published"},
      {with_run(R"("name": "r")", R"("name": "")"), "runs[0].name"},
      {doc_with("[" + kRun + ", " + kRun + "]"), "runs[1].name: \"r\" is also runs[0]'s name"},
      {with_run(R"(, "published": 1000)", ""), "published"},
      {with_run(R"("recompute": "none")", R"("recompute": "some")"), "runs[0].recompute"},
      {with_run(R"("gpus": 8)", R"("gpus": 0)"), "runs[0].gpus"},
      {with_run(R"("gpus": 8)", R"("gpus": 4096)"), "more than 1024 a node"},
      {with_run(R"("mbs": 4)", R"("mbs": 4.5)"), "runs[0].mbs"},
      {with_run(R"("nodes": 1)", R"("nodes": 1, "speed": 2)"), "speed"},
      {with_run(R"("nodes": 1)", R"("nodes": 1, "table": [1])"), "runs[0].table"},
      {with_run(R"("nodes": 1)", R"("nodes": 1, "set": [1])"), "runs[0].set: expected an object"},
      {with_run(R"("nodes": 1)", R"("nodes": 1, "set": {"gpu.sms": null})"),
       "runs[0].set.gpu.sms: expected a number, a string, a boolean or an array"},
      {with_run(R"("nodes": 1)", R"("nodes": 1, "set": {"a=b": 1})"), "'a=b' is not a field path"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find("t.json"), std::string::npos) << c.text << "\n-> " << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << c.text << "\n-> " << e;
  }
  std::string no_cluster = doc_with("[" + kRun + "]");
  no_cluster.replace(no_cluster.find(R"({"cluster": "dgx-a100"})"), 23, "{}");
  EXPECT_NE(error_of(no_cluster).find("runs[0].cluster"), std::string::npos);
  std::string format = doc_with("[" + kRun + "]");
  format.replace(format.find("lagom.published-runs"), 20, "lagom.model");
  EXPECT_NE(error_of(format).find("format: expected \"lagom.published-runs\""), std::string::npos)
      << error_of(format);
  std::string metric = doc_with("[" + kRun + "]");
  metric.replace(metric.find("tokens_per_s_per_gpu"), 20, "mfu");
  EXPECT_NE(error_of(metric).find("metric: expected step_time_s or tokens_per_s_per_gpu"),
            std::string::npos);
}

TEST(PublishedRuns, PositiveErrorMeansLagomSaysFaster) {
  calibrate::PublishedRun r;
  r.gbs = 64;
  r.seq = 2048;
  r.gpus = 8;
  // Tokens: 64 x 2048 tokens in 2 s on 8 GPUs is 8192 tokens/s/GPU; published 8000.
  r.published = 8000;
  EXPECT_DOUBLE_EQ(calibrate::predicted_value(PublishedMetric::kTokensPerSecondGpu, r, 2.0), 8192);
  EXPECT_NEAR(calibrate::throughput_error(PublishedMetric::kTokensPerSecondGpu, r, 2.0), 0.024,
              1e-12);
  // Step time: published 1.5 s, simulated 1.2 s: 25% faster.
  r.published = 1.5;
  EXPECT_DOUBLE_EQ(calibrate::predicted_value(PublishedMetric::kStepTimeSeconds, r, 1.2), 1.2);
  EXPECT_NEAR(calibrate::throughput_error(PublishedMetric::kStepTimeSeconds, r, 1.2), 0.25, 1e-12);
}

TEST(PublishedRuns, SummaryMediansAndCounts) {
  const calibrate::PublishedErrors s = calibrate::summarize_errors({0.02, -0.2, 0.1, -0.04});
  EXPECT_EQ(s.runs, 4);
  EXPECT_NEAR(s.median_signed, (-0.04 + 0.02) / 2, 1e-12);
  EXPECT_NEAR(s.median_abs, (0.04 + 0.1) / 2, 1e-12);
  EXPECT_NEAR(s.worst_abs, 0.2, 1e-12);
  EXPECT_EQ(s.within_5, 2);
  EXPECT_EQ(s.within_15, 3);
  EXPECT_EQ(calibrate::summarize_errors({}).runs, 0);
}

TEST(PublishedRunsCli, RowsAreTheSameBytesForAnyThreadCount) {
  const std::string file = data_path("published-runs/mosaicml-mpt-a100-80gb.json");
  const CliRun one =
      run_lagom({"validate", "--published", file, "--run", "mpt-125m seq 1", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const CliRun two =
      run_lagom({"validate", "--published", file, "--run", "mpt-125m seq 1", "--json", "-j", "2"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(one.out, two.out);
  const nlohmann::json j = nlohmann::json::parse(one.out);
  ASSERT_EQ(j["files"].size(), 1u);
  const nlohmann::json& runs = j["files"][0]["runs"];
  ASSERT_EQ(runs.size(), 2u);  // seq 16384 and seq 1024
  for (const auto& r : runs) {
    const double pred = r["predicted"].get<double>();
    EXPECT_NEAR(r["error"].get<double>(), pred / r["published"].get<double>() - 1, 1e-12);
  }
  EXPECT_EQ(j["failed"], 0);
}

// A setting changes the prediction as `--set` does, and one lagom does not know fails the run.
TEST(PublishedRunsCli, ASettingChangesThePrediction) {
  TempDir dir;
  std::string run = kRun;
  run.replace(run.find("models/mpt-125m.json"), 20,
              data_path("published-runs/models/mpt-125m.json"));
  run.replace(run.find(R"("seq": 512)"), 10, R"("seq": 8192)");
  const std::string path = (dir.path() / "set.json").string();
  auto predicted = [&](const std::string& set) {
    std::string r = run;
    r.replace(r.find(R"("nodes": 1)"), 10, R"("nodes": 1)" + set);
    { std::ofstream(path) << doc_with("[" + r + "]"); }
    const CliRun c = run_lagom({"validate", "--published", path, "--json"});
    EXPECT_EQ(c.exit_code, set.find("no.such") == std::string::npos ? 0 : 1) << c.out << c.err;
    const nlohmann::json j = nlohmann::json::parse(c.out);
    return j["files"][0]["runs"][0].value("predicted", 0.0);
  };
  const double plain = predicted("");
  const double slow = predicted(R"(, "set": {"compute.classes.attention.flops_efficiency": 0.1})");
  EXPECT_GT(plain, 0);
  EXPECT_LT(slow, plain * 0.9);  // long sequences: attention is a large share of the step
  EXPECT_EQ(predicted(R"(, "set": {"no.such.field": 1})"), 0.0);
}

TEST(PublishedRunsCli, ARunThatCannotBeSimulatedFailsTheCommand) {
  TempDir dir;
  std::string run = kRun;
  run.replace(run.find("fsdp=8"), 6, "tp=3");
  const std::string path = (dir.path() / "bad.json").string();
  { std::ofstream(path) << doc_with("[" + run + "]"); }
  const CliRun r = run_lagom({"validate", "--published", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("failed:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no run could be simulated"), std::string::npos) << r.out;
  // GPUs that are not the simulated ranks would divide the throughput wrongly.
  std::string wrong = kRun;
  wrong.replace(wrong.find(R"("gpus": 8)"), 9, R"("gpus": 16)");
  wrong.replace(wrong.find("models/mpt-125m.json"), 20,
                data_path("published-runs/models/mpt-125m.json"));
  { std::ofstream(path) << doc_with("[" + wrong + "]"); }
  const CliRun g = run_lagom({"validate", "--published", path});
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_NE(g.out.find("the run says 16 GPUs but 'fsdp=8' on 1 node(s) simulates 8 ranks"),
            std::string::npos)
      << g.out;
  const CliRun none = run_lagom({"validate", "--published", dir.path().string() + "/nothing"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("nothing"), std::string::npos) << none.err;
}

// The whole set (about 90 s on 2 cores): every run simulates, and each file's median and worst
// error stay under the bounds docs/VALIDATION.md §4 reports (a regression in the compute,
// collective or schedule models moves them; an improvement should tighten them).
TEST(PublishedRunsSlow, EveryFileStaysUnderItsBounds) {
  const CliRun r =
      run_lagom({"validate", "--published", data_path("published-runs"), "--json", "-j", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["failed"], 0);
  // name -> {median |error|, worst |error|} bounds.
  const std::map<std::string, std::pair<double, double>> bounds = {
      {"korthikanti-2022-table5", {0.10, 0.14}},
      {"mosaicml-mpt-a100-80gb", {0.05, 0.28}},
      {"mosaicml-mpt-h100-80gb", {0.32, 0.57}},
      {"mosaicml-mpt-h100-80gb-large", {0.21, 0.43}},
  };
  ASSERT_EQ(j["files"].size(), bounds.size());
  for (const auto& f : j["files"]) {
    const auto& [median, worst] = bounds.at(f["name"].get<std::string>());
    EXPECT_LE(f["summary"]["median_abs_error"].get<double>(), median) << f["name"];
    EXPECT_LE(f["summary"]["worst_abs_error"].get<double>(), worst) << f["name"];
  }
  EXPECT_LE(j["summary"]["median_abs_error"].get<double>(), 0.155);
}

}  // namespace published_test
}  // namespace lagom::test
