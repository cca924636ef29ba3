// How ops that run at the same time on one GPU slow each other: the engine's fluid core asks a
// ContentionModel for speed factors whenever the set of ops on a GPU changes.
#pragma once

#include <span>
#include <string_view>

#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

// An op present on a GPU: running, or (communication only) launched and waiting for its peers,
// which still holds the SMs of its channels.
struct ActiveOp {
  traces::OpId op;
  bool waiting;
};

class ContentionModel {
 public:
  virtual ~ContentionModel() = default;
  virtual std::string_view name() const = 0;
  // The ops on `rank` changed. Write into factors[i] the speed of active[i] on this GPU relative
  // to running alone, in (0, 1]. Factors of waiting ops are ignored. A communication instance
  // progresses at the smallest factor any of its ranks gives it.
  virtual void speed_factors(const traces::Workload& w, traces::Rank rank,
                             std::span<const ActiveOp> active, std::span<double> factors) = 0;
};

}  // namespace lagom::sim
