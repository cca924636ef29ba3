// Comparing a step measured on GPUs (measured.hpp) with its simulation: per op, per overlap group
// and per step. `lagom validate` prints this (docs/calibration.md).
//
// An op's duration is end - start. A communication op starts when the last of its members
// arrives (the simulation's `start`): a measured member's record, which begins when its own rank
// reached it, is cut to that, so waiting for peers counts in neither. Ranks' clocks are each
// measured from their step's start, which lagom-validate aligns with a barrier. Measured ops are
// matched to the workload's by (rank, id); ops the measurement lacks are listed, not guessed.
// Overlap groups (sim/stats.hpp) are found in each timeline on its own, and compared through their
// sums: X (communication), Y (computation) and Z (makespan).
#pragma once

#include <string>
#include <vector>

#include "lagom/calibrate/measured.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/timeline.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::calibrate {

struct OpComparison {
  traces::OpId op = 0;
  double measured_us = 0;
  double simulated_us = 0;
  double rel_error() const {
    return measured_us > 0 ? (simulated_us - measured_us) / measured_us : 0;
  }
};

struct ErrorStats {
  int ops = 0;
  double median = 0;  // median |relative error|
  double worst = 0;
  traces::OpId worst_op = 0;
};

struct XyzTotals {
  double comm_us = 0;     // sum of X
  double compute_us = 0;  // sum of Y
  double span_us = 0;     // sum of Z
  int groups = 0;
};

struct ValidationReport {
  std::vector<OpComparison> ops;  // every matched op, in OpId order
  ErrorStats compute;             // ops of at least `min_us` measured
  ErrorStats comm;
  ErrorStats all;
  double measured_step_us = 0;
  double simulated_step_us = 0;
  XyzTotals measured_xyz;
  XyzTotals simulated_xyz;
  std::vector<std::string> missing;       // workload ops the measurement lacks ("r3/attn.fwd")
  std::vector<traces::OpTimes> measured;  // by OpId (zero for missing ops), for traces
  bool standins = false;
};

// `measured` may be one file per rank or one for all; an op measured twice, or an id the
// workload does not have, is a lagom::Error naming the file. `min_us` must be > 0.
ValidationReport compare(const traces::Workload& w, const traces::ExecutionGraph& graph,
                         const sim::SimResult& simulated, const std::vector<MeasuredStep>& measured,
                         double min_us = 1.0);

}  // namespace lagom::calibrate
