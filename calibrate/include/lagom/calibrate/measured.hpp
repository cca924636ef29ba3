// What lagom-validate measured when it replayed a workload on GPUs (docs/formats/measured.md):
// per op, when it started and ended after the step's start (the median over the timed steps),
// one file per rank or one for all. `lagom validate` compares it with the simulation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lagom::calibrate {

inline constexpr std::string_view kMeasuredFormat = "lagom.measured";
inline constexpr int kMeasuredVersion = 1;

struct MeasuredOp {
  std::string id;  // the workload's op id
  std::uint32_t rank = 0;
  double start_us = 0;  // from the step's start
  double end_us = 0;
};

struct MeasuredStep {
  std::string source;  // the file it was read from
  std::string workload;
  std::string gpu;  // cudaDeviceProp::name
  std::string date;
  std::string host;
  int steps = 0;  // timed steps the medians are over
  // Communication ops stood in for by the occupier (one GPU, no NCCL): their times are the
  // stand-in's, not NCCL's.
  bool standins = false;
  double step_time_us = 0;  // median over steps of the last end
  std::vector<MeasuredOp> ops;
};

// Strict: errors name the file and the JSON path (unknown fields, negative or reversed times).
MeasuredStep read_measured(const std::string& path);
std::string measured_to_json(const MeasuredStep& m);

}  // namespace lagom::calibrate
