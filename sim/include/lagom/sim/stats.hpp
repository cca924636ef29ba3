// Per-rank, per-stream and per-overlap-group statistics of a finished simulation.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "lagom/common/time.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/traces/timeline.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

struct StreamStats {
  Time busy;       // sum over its ops of end - launch (a communication op occupies its stream
                   // while it waits for peers, as an NCCL kernel does)
  Time idle;       // step_time - busy
  Time comm_wait;  // part of busy spent by communication ops waiting for peers
  std::uint32_t ops = 0;
};

// Where a rank's step time went, each instant counted once, in this order of precedence:
//   compute:         a compute kernel or memory copy ran;
//   exposed_comm:    communication made progress (all its peers had arrived) and no compute ran;
//   pipeline_bubble: the rank waited on a receive whose sender had not arrived, or, in a
//                    pipeline (a rank with sends or receives), had finished its work before the
//                    step's last rank;
//   peer_wait:       a collective launched and waited for the other members to arrive (arrival
//                    skew);
//   (pipeline_bubble, again: a send waited for its receiver, at an instant nothing above
//                    claims; a send on its own stream rarely holds the rank back);
//   idle:            none of these (dependency gaps, or done early without a pipeline).
// The five sum to the step time exactly.
struct Breakdown {
  Time compute;
  Time exposed_comm;
  Time pipeline_bubble;
  Time peer_wait;
  Time idle;
  Time total() const { return compute + exposed_comm + pipeline_bubble + peer_wait + idle; }
};

struct RankStats {
  Time busy;  // time during which at least one of the rank's streams was busy
  Time idle;  // step_time - busy
  Breakdown breakdown;
};

// How many times longer an op ran than it takes alone: (end - start) / alone, 1 when alone is 0.
// For a communication op `alone` is its communication instance's, so every member of an
// instance has the same slowdown. Without a contention model it is exactly 1.
double slowdown(const traces::OpTimes& t);

// An overlap group (reference/lagom-paper.md §3.2, eq. 1): on one rank, a maximal set of ops
// whose running intervals [start, end) overlap transitively (across the rank's streams) and
// that holds at least one communication op and one compute op. Intervals that only touch
// ([0, 10) and [10, 20)) do not overlap; ops that never ran (start == end) belong to no group.
// A memcpy overlapping the others joins their group (it links ops and can extend the span) but
// counts in neither X nor Y.
struct OverlapGroup {
  traces::Rank rank = 0;
  Time start;               // earliest start of its ops
  Time end;                 // latest end of its ops
  Time comm;                // X: sum over its communication ops of end - start
  Time compute;             // Y: sum over its compute ops of end - start
  std::uint32_t first = 0;  // its ops are OverlapStats::ops[first, first + count)
  std::uint32_t count = 0;

  // Z. With one serial stream of compute and one of communication, Z >= max(X, Y).
  Time makespan() const { return end - start; }
};

struct OverlapStats {
  std::vector<OverlapGroup> groups;  // by rank, then by start
  std::vector<traces::OpId> ops;     // each group's ops, by (start, OpId)

  // Over all groups:
  Time comm;                         // sum of X
  Time compute;                      // sum of Y
  Time makespan;                     // sum of Z
  double compute_slowdown_mean = 1;  // over the compute ops in groups (1 when there are none)
  double compute_slowdown_max = 1;
  double comm_slowdown_mean = 1;  // over the communication ops in groups (1 when none)

  std::span<const traces::OpId> ops_of(const OverlapGroup& g) const {
    return std::span<const traces::OpId>(ops).subspan(g.first, g.count);
  }
};

// One sort and one sweep per rank: O(n log n) in the rank's op count, memory linear in the ops.
OverlapStats find_overlap_groups(const traces::Workload& w, const SimResult& r);

// What the step did, summed from its ops (any workload): model FLOPs (GEMM and attention
// kernels with a compute shape), bytes per communication kind, and per rank the time some
// compute op ran and the time some communication ran while no compute did (exposed).
struct WorkFigures {
  double flops = 0;
  std::array<double, traces::kOpKindCount> comm_bytes{};
  Time compute_mean;       // mean over ranks of the union of compute (and memcpy) ops' intervals
  Time exposed_comm_mean;  // mean over ranks of communication time not hidden under compute
  Time exposed_comm_max;
};

struct StepStats {
  Time step_time;
  std::vector<RankStats> ranks;      // by rank
  std::vector<StreamStats> streams;  // by StreamId
  OverlapStats overlap;
  WorkFigures work;
  // The mean over ranks of their breakdowns, each part its exact mean rounded to a whole
  // nanosecond by largest remainder, so that the parts sum to step_time exactly.
  Breakdown breakdown;
};

StepStats summarize(const traces::Workload& w, const SimResult& r);

}  // namespace lagom::sim
