// Fitting a hardware::HardwareProfile's collective parameters to nccl-tests measurements.
//
// For every row of every log, NCCL's default configuration for that size is what ran (nccl-tests
// sets no NCCL_ALGO/PROTO unless the log's env says so), and Lagom's collective model predicts
// its time from the profile. The model's time is a sum of terms each proportional to one
// parameter (launch, per-channel cost, hop latencies, chunk-step overheads, inverse link
// efficiencies and inverse channel bandwidths), so around the current parameters it is linear in
// them; the fit solves the linearised problem by least squares (Eigen, QR) and repeats until the
// binding resources stop changing:
//
//   minimise  sum over rows ((T_model(row) - T_measured(row)) / T_measured(row))^2
//           + lambda * sum over parameters ((theta - theta_prior) / theta_prior)^2
//
// Relative residuals weight small and large messages alike; the small ridge term keeps the
// parameters a log says nothing about (e.g. PCIe numbers from an NVSwitch log) at their priors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lagom/calibrate/nccl_tests_log.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/topologies/cluster.hpp"

namespace lagom::calibrate {

// One log and where it ran: the cluster (with its node count) hosts ranks 0..nranks-1.
struct FitInput {
  std::string name;  // for reports: the log's file name
  NcclTestsLog log;
  topologies::Cluster cluster;
};

struct FitRow {
  std::string log;
  std::int64_t size_bytes = 0;
  nccl::CollKind kind = nccl::CollKind::kAllReduce;
  int nranks = 0;
  nccl::CommConfig config;  // NCCL's default for this size (what ran)
  double measured_us = 0;
  double prior_us = 0;       // the model with the prior profile
  double predicted_us = 0;   // the model with the fitted profile
  double nccl_model_us = 0;  // NCCL's own cost-model estimate for its choice (for comparison)
  double rel_error() const { return (predicted_us - measured_us) / measured_us; }
  double measured_busbw_GBps() const;
  double predicted_busbw_GBps() const;
};

struct FitOptions {
  double ridge = 1e-3;  // lambda above
  int max_iterations = 30;
  std::string source_note;  // recorded in the fitted parameters' "source"
};

struct FitResult {
  hardware::HardwareProfile profile;
  std::vector<FitRow> rows;
  int iterations = 0;
  std::vector<std::string> changed;  // "collective.links.nvlink.efficiency: 0.800 -> 0.846"
};

FitResult fit_profile(const hardware::HardwareProfile& prior, const std::vector<FitInput>& inputs,
                      const FitOptions& options = {});

// Predictions of `profile` for every row (no fitting): the validation tables.
std::vector<FitRow> evaluate_profile(const hardware::HardwareProfile& profile,
                                     const std::vector<FitInput>& inputs);

// Median and max |relative error| over rows with size >= min_bytes and < max_bytes.
struct ErrorSummary {
  int rows = 0;
  double median = 0;
  double max = 0;
};
ErrorSummary summarize_errors(const std::vector<FitRow>& rows, std::int64_t min_bytes,
                              std::int64_t max_bytes);

// NCCL environment settings recorded in a log's metadata "env:" line (e.g. NCCL_BUFFSIZE=8388608)
// that change NCCL's choices; others are ignored.
nccl::Env nccl_env_from_log(const NcclTestsLog& log);

}  // namespace lagom::calibrate
