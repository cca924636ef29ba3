// Per-rank and per-stream statistics of a finished simulation.
#pragma once

#include <cstdint>
#include <vector>

#include "lagom/common/time.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

struct StreamStats {
  Time busy;       // sum over its ops of end - launch (a communication op occupies its stream
                   // while it waits for peers, as an NCCL kernel does)
  Time idle;       // step_time - busy
  Time comm_wait;  // part of busy spent by communication ops waiting for peers
  std::uint32_t ops = 0;
};

struct RankStats {
  Time busy;  // time during which at least one of the rank's streams was busy
  Time idle;  // step_time - busy
};

struct StepStats {
  Time step_time;
  std::vector<RankStats> ranks;      // by rank
  std::vector<StreamStats> streams;  // by StreamId
};

StepStats summarize(const traces::Workload& w, const SimResult& r);

}  // namespace lagom::sim
