// The published-runs reader and the error arithmetic (see published.hpp).
#include "lagom/calibrate/published.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"

namespace lagom::calibrate {
namespace {

namespace fs = std::filesystem;
using json_reader::Ctx;
using nlohmann::json;

constexpr int kMaxGpus = 1 << 24;
constexpr int kMaxBatch = 1 << 30;

// A published figure: seconds per step or tokens per second per GPU, both far inside this.
double published_number(const Ctx& ctx, const json& v) {
  constexpr double kLo = 1e-9;
  constexpr double kHi = 1e12;
  if (!v.is_number() || !(v.get<double>() >= kLo && v.get<double>() <= kHi)) {
    ctx.fail(fmt::format("expected a number between {:g} and {:g}, got {}", kLo, kHi,
                         json_reader::type_of(v)));
  }
  return v.get<double>();
}

std::string optional_string(const Ctx& ctx, const json& obj, const char* key,
                            std::string fallback) {
  const json* v = json_reader::optional_field(obj, key);
  return v == nullptr ? fallback : json_reader::get_string(ctx.at(key), *v);
}

std::vector<std::string> string_list(const Ctx& ctx, const json& v) {
  if (!v.is_array()) {
    ctx.fail(fmt::format("expected an array of strings, got {}", json_reader::type_of(v)));
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(json_reader::get_string(ctx.at(i), v[i]));
  }
  return out;
}

// "set": {"PATH": VALUE, ...}, what-if overrides as `--set PATH=VALUE` (docs/whatif.md): a string
// as it is, a number, boolean or array as its JSON text (16, 0.3386, false, [1, 4]).
std::vector<std::string> overrides(const Ctx& ctx, const json& v) {
  if (!v.is_object()) {
    ctx.fail(fmt::format("expected an object {{\"PATH\": VALUE, ...}} of what-if settings, got {}",
                         json_reader::type_of(v)));
  }
  std::vector<std::string> out;
  for (const auto& [path, value] : v.items()) {
    if (path.empty() || path.find('=') != std::string::npos) {
      ctx.fail(fmt::format("'{}' is not a field path such as compute.classes.gemm.flops_efficiency",
                           path));
    }
    if (value.is_string()) {
      out.push_back(fmt::format("{}={}", path, value.get<std::string>()));
    } else if (value.is_number() || value.is_boolean() || value.is_array()) {
      out.push_back(fmt::format("{}={}", path, value.dump()));
    } else {
      ctx.at(path).fail(fmt::format("expected a number, a string, a boolean or an array, got {}",
                                    json_reader::type_of(value)));
    }
  }
  return out;
}

struct Setup {
  std::string cluster;
  std::string precision = "bf16";
  bool fold = false;
  std::vector<std::string> set;
};

PublishedRun read_run(const Ctx& ctx, const json& r, const Setup& setup,
                      const std::string& base_dir) {
  json_reader::expect_object(
      ctx, r,
      {"name", "model", "parallel", "gpus", "nodes", "mbs", "gbs", "seq", "recompute", "published",
       "cluster", "precision", "fold", "set", "note", "table"});
  PublishedRun run;
  run.name = json_reader::get_string(ctx.at("name"), json_reader::require(ctx, r, "name"));
  if (run.name.empty()) {
    ctx.at("name").fail("expected a name, got an empty string");
  }
  run.model = json_reader::get_string(ctx.at("model"), json_reader::require(ctx, r, "model"));
  if (json_reader::names_a_file(run.model) && fs::path(run.model).is_relative()) {
    run.model = (fs::path(base_dir) / run.model).lexically_normal().string();
  }
  run.parallel =
      json_reader::get_string(ctx.at("parallel"), json_reader::require(ctx, r, "parallel"));
  run.gpus = json_reader::int_field(ctx, r, "gpus", 1, kMaxGpus, "the GPUs the run used");
  run.nodes = json_reader::int_field(ctx, r, "nodes", 1, kMaxGpus, "the cluster's nodes");
  run.mbs = json_reader::int_field(ctx, r, "mbs", 1, kMaxBatch, "the micro-batch, in sequences");
  run.gbs = json_reader::int_field(ctx, r, "gbs", 1, kMaxBatch, "the global batch, in sequences");
  run.seq = json_reader::int_field(ctx, r, "seq", 1, kMaxBatch, "the sequence length, in tokens");
  run.recompute =
      json_reader::get_string(ctx.at("recompute"), json_reader::require(ctx, r, "recompute"));
  if (run.recompute != "none" && run.recompute != "full" && run.recompute != "selective") {
    ctx.at("recompute")
        .fail(fmt::format("expected none, full or selective, got \"{}\"", run.recompute));
  }
  run.published = published_number(ctx.at("published"), json_reader::require(ctx, r, "published"));
  run.cluster = optional_string(ctx, r, "cluster", setup.cluster);
  if (run.cluster.empty()) {
    ctx.at("cluster").fail("missing: give the run's cluster, or 'cluster' in the file's setup");
  }
  // A cluster file, like a model file, is relative to this file (a preset is a name).
  if (json_reader::names_a_file(run.cluster) && fs::path(run.cluster).is_relative()) {
    run.cluster = (fs::path(base_dir) / run.cluster).lexically_normal().string();
  }
  run.precision = optional_string(ctx, r, "precision", setup.precision);
  run.fold = setup.fold;
  if (const json* f = json_reader::optional_field(r, "fold")) {
    run.fold = json_reader::get_bool(ctx.at("fold"), *f);
  }
  run.set = setup.set;
  if (const json* o = json_reader::optional_field(r, "set")) {
    const std::vector<std::string> own = overrides(ctx.at("set"), *o);
    run.set.insert(run.set.end(), own.begin(), own.end());
  }
  run.note = optional_string(ctx, r, "note", "");
  if (const json* t = json_reader::optional_field(r, "table"); t != nullptr && !t->is_object()) {
    ctx.at("table").fail(fmt::format("expected an object (the source's row, as published), got {}",
                                     json_reader::type_of(*t)));
  }
  if (static_cast<long long>(run.gpus) > static_cast<long long>(run.nodes) * 1024) {
    ctx.at("gpus").fail(
        fmt::format("{} GPUs on {} nodes is more than 1024 a node", run.gpus, run.nodes));
  }
  return run;
}

}  // namespace

std::string_view to_string(PublishedMetric m) {
  switch (m) {
    case PublishedMetric::kStepTimeSeconds:
      return "step_time_s";
    case PublishedMetric::kTokensPerSecondGpu:
      return "tokens_per_s_per_gpu";
  }
  return "?";
}

PublishedSet parse_published_runs(std::string_view text, const std::string& origin,
                                  const std::string& base_dir) {
  const json doc = json_reader::parse_document(text, origin, "lagom.published-runs");
  const Ctx ctx{origin, ""};
  json_reader::expect_object(ctx, doc,
                             {"format", "version", "name", "description", "source", "metric",
                              "setup", "assumptions", "runs"});
  if (json_reader::get_string(ctx.at("format"), json_reader::require(ctx, doc, "format")) !=
      "lagom.published-runs") {
    ctx.at("format").fail("expected \"lagom.published-runs\"");
  }
  json_reader::int_field(ctx, doc, "version", 1, 1, "the format version");
  PublishedSet set;
  set.origin = origin;
  set.name = json_reader::get_string(ctx.at("name"), json_reader::require(ctx, doc, "name"));
  set.description =
      json_reader::get_string(ctx.at("description"), json_reader::require(ctx, doc, "description"));
  set.source = json_reader::get_string(
      ctx.at("source"), json_reader::require(ctx, doc, "source",
                                             "where the numbers come from: document, table, link"));
  const std::string metric =
      json_reader::get_string(ctx.at("metric"), json_reader::require(ctx, doc, "metric"));
  if (metric == "step_time_s") {
    set.metric = PublishedMetric::kStepTimeSeconds;
  } else if (metric == "tokens_per_s_per_gpu") {
    set.metric = PublishedMetric::kTokensPerSecondGpu;
  } else {
    ctx.at("metric").fail(
        fmt::format("expected step_time_s or tokens_per_s_per_gpu, got \"{}\"", metric));
  }
  Setup setup;
  if (const json* s = json_reader::optional_field(doc, "setup")) {
    const Ctx sc = ctx.at("setup");
    json_reader::expect_object(sc, *s, {"cluster", "precision", "fold", "set"});
    setup.cluster = optional_string(sc, *s, "cluster", "");
    setup.precision = optional_string(sc, *s, "precision", setup.precision);
    if (const json* o = json_reader::optional_field(*s, "set")) {
      setup.set = overrides(sc.at("set"), *o);
    }
    if (const json* f = json_reader::optional_field(*s, "fold")) {
      setup.fold = json_reader::get_bool(sc.at("fold"), *f);
    }
  }
  if (const json* a = json_reader::optional_field(doc, "assumptions")) {
    set.assumptions = string_list(ctx.at("assumptions"), *a);
  }
  const json& runs = json_reader::require(ctx, doc, "runs");
  if (!runs.is_array() || runs.empty()) {
    ctx.at("runs").fail(
        fmt::format("expected a non-empty array of runs, got {}", json_reader::type_of(runs)));
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    set.runs.push_back(read_run(ctx.at("runs").at(i), runs[i], setup, base_dir));
    for (std::size_t k = 0; k < i; ++k) {
      if (set.runs[k].name == set.runs[i].name) {
        ctx.at("runs").at(i).at("name").fail(fmt::format(
            "\"{}\" is also runs[{}]'s name; names pick runs (--run), so each must differ",
            set.runs[i].name, k));
      }
    }
  }
  return set;
}

PublishedSet load_published_runs(const std::string& path) {
  const std::string text = json_reader::read_text_file(path, "published-runs file");
  return parse_published_runs(text, path, fs::path(path).parent_path().string());
}

std::vector<std::string> published_run_files(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    return {path};
  }
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) {
    throw Error(fmt::format("'{}' holds no published-runs files (*.json)", path));
  }
  return out;
}

double predicted_value(PublishedMetric metric, const PublishedRun& run, double step_s) {
  switch (metric) {
    case PublishedMetric::kStepTimeSeconds:
      return step_s;
    case PublishedMetric::kTokensPerSecondGpu:
      return static_cast<double>(run.gbs) * run.seq / step_s / run.gpus;
  }
  return 0;
}

double throughput_error(PublishedMetric metric, const PublishedRun& run, double step_s) {
  const double predicted = predicted_value(metric, run, step_s);
  return metric == PublishedMetric::kStepTimeSeconds ? run.published / predicted - 1
                                                     : predicted / run.published - 1;
}

PublishedErrors summarize_errors(std::vector<double> errors) {
  PublishedErrors s;
  s.runs = static_cast<int>(errors.size());
  if (errors.empty()) {
    return s;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  s.median_signed = median(errors);
  for (double& e : errors) {
    e = std::abs(e);
    s.worst_abs = std::max(s.worst_abs, e);
    s.within_5 += e <= 0.05 ? 1 : 0;
    s.within_15 += e <= 0.15 ? 1 : 0;
  }
  s.median_abs = median(errors);
  return s;
}

}  // namespace lagom::calibrate
