// How long an op takes when it runs alone: the axis the collective and compute models plug into.
#pragma once

#include <string_view>

#include "lagom/common/time.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

// Standalone (uncontended) time of ops that carry no fixed duration. The engine asks once per
// compute/memcpy op and once per collective or send/recv instance, when it starts.
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string_view name() const = 0;
  // `op` is a compute or memcpy op, or the first member of a communication instance (whose other
  // members are graph.members(graph.instance_of(op))). Throws lagom::Error when it cannot time it.
  virtual Time standalone_time(const traces::Workload& w, const traces::ExecutionGraph& graph,
                               traces::OpId op) const = 0;
};

}  // namespace lagom::sim
