// Published training runs (docs/formats/published-runs.md): each a model, a parallel layout, a
// batch and a cluster as a paper or a vendor ran them, and the step time or throughput they
// reported. `lagom validate --published` simulates every run and reports the error; the test
// suite asserts that the median stays under a bound (docs/VALIDATION.md §4).
//
// The sign convention is the and the planners': the throughput error is predicted /
// published - 1 in tokens per second, so +20% means lagom says the run is 20% faster than it was.
// For a published step time that is published / predicted - 1.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lagom::calibrate {

enum class PublishedMetric {
  kStepTimeSeconds,     // "step_time_s": one iteration (optimizer step), seconds
  kTokensPerSecondGpu,  // "tokens_per_s_per_gpu": global batch tokens / step time / GPUs
};

std::string_view to_string(PublishedMetric m);

struct PublishedRun {
  std::string name;
  std::string model;     // a zoo name, or a model file's path (already resolved against the file)
  std::string parallel;  // `--parallel` spec
  std::string cluster;   // preset or cluster file (the run's, else the file's setup)
  std::string precision;
  std::string recompute;  // none, full or selective
  bool fold = false;
  // What-if settings, `--set PATH=VALUE` each (the file's setup's, then the run's): what the
  // source's software did that the built-in profile does not assume, with the reason in the
  // file's assumptions.
  std::vector<std::string> set;
  int gpus = 0;
  int nodes = 0;
  int mbs = 0;
  int gbs = 0;
  int seq = 0;
  double published = 0;  // in the file's metric
  std::string note;
};

struct PublishedSet {
  std::string name;
  std::string description;
  std::string source;
  PublishedMetric metric = PublishedMetric::kStepTimeSeconds;
  std::vector<std::string> assumptions;
  std::vector<PublishedRun> runs;
  std::string origin;
};

// Strict reader: unknown fields, missing fields, wrong types and out-of-range numbers are
// lagom::Error naming `origin` and the JSON path. Relative model paths (containing '/' or ending
// in .json) resolve against `base_dir`.
PublishedSet parse_published_runs(std::string_view text, const std::string& origin,
                                  const std::string& base_dir);
PublishedSet load_published_runs(const std::string& path);
// Every `*.json` file directly in `dir` (sorted by name), or `path` itself when it is a file.
std::vector<std::string> published_run_files(const std::string& path);

// The run's throughput error (see above) for a simulated step of `step_s` seconds.
double throughput_error(PublishedMetric metric, const PublishedRun& run, double step_s);
// The prediction in the file's metric.
double predicted_value(PublishedMetric metric, const PublishedRun& run, double step_s);

struct PublishedErrors {
  int runs = 0;
  double median_abs = 0;
  double median_signed = 0;
  double worst_abs = 0;
  int within_5 = 0;   // |error| <= 5%
  int within_15 = 0;  // |error| <= 15%
};
PublishedErrors summarize_errors(std::vector<double> errors);

}  // namespace lagom::calibrate
