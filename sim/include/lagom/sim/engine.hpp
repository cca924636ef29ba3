// The discrete-event engine: replays a Workload, one simulation per Engine object.
//
// Semantics (docs/formats/workload.md, "How a workload runs"):
//  * An op is launched when the previous op of its stream has finished and all its deps have
//    finished (CUDA stream order plus event waits).
//  * Compute and memcpy ops start at launch. A collective or send/recv starts when the last of
//    its member ops is launched; every member records the same start and end.
//  * A running op (or communication instance) has remaining work, measured in nanoseconds of
//    standalone time, and a rate in (0, 1]. Without a contention model the rate is 1 and an op
//    takes exactly its standalone time. With one, whenever the ops present on a GPU change the
//    model gives new rates; remaining work is updated and completion events are rescheduled
//    (superseded events are skipped by a version counter).
//  * Events are ordered by (time, sequence number): ties resolve in the order events were
//    created, so a run is deterministic. Time is integer nanoseconds.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lagom/common/time.hpp"
#include "lagom/sim/contention.hpp"
#include "lagom/sim/cost_model.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/timeline.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

struct SimOptions {
  const CostModel* cost = nullptr;        // for ops without duration_us; nullptr: all must have one
  ContentionModel* contention = nullptr;  // nullptr: ops never slow each other
};

struct SimResult {
  Time step_time;                    // when the last op finished
  std::uint64_t events = 0;          // completion events processed (including superseded ones)
  std::uint64_t stale_events = 0;    // completion events skipped because a rate changed
  std::uint64_t fingerprint = 0;     // hash over every (time, op, start|end) record in order
  std::vector<traces::OpTimes> ops;  // per op, indexed by OpId
};

// Receives start and end records as the engine produces them (e.g. for live statistics).
class SimObserver {
 public:
  virtual ~SimObserver() = default;
  virtual void on_start(traces::OpId op, Time t) = 0;
  virtual void on_end(traces::OpId op, Time t) = 0;
};

class Engine {
 public:
  // The workload and graph must outlive the engine; they are only read, so many engines can
  // share them (for example one per thread in a parameter sweep).
  Engine(const traces::Workload& w, const traces::ExecutionGraph& graph, SimOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void add_observer(SimObserver* observer);
  // Runs the simulation to the end. Throws lagom::Error if an op cannot be timed.
  SimResult run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lagom::sim
