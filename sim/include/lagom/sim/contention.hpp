// How ops that run at the same time slow each other: the engine's fluid core tells a
// ContentionModel what is on the GPUs (communication ops waiting for their peers, running
// activities) and asks it for rates after every batch of changes at one time point.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lagom/common/time.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

// Something that makes progress: a compute or memcpy op, or a communication instance (all its
// member ops at once). `slot` is the engine's handle, unique among running activities.
struct Activity {
  std::uint32_t slot = 0;
  bool instance = false;
  std::uint32_t subject = 0;  // InstanceId when `instance`, else OpId
};

struct RateChange {
  std::uint32_t slot = 0;
  double rate = 1;  // fraction of its standalone speed, in (0, 1]
};

class ContentionModel {
 public:
  virtual ~ContentionModel() = default;
  virtual std::string_view name() const = 0;
  // Called once by the engine before it runs; both outlive the run.
  virtual void bind(const traces::Workload& w, const traces::ExecutionGraph& g) = 0;
  // A communication op was launched and waits for the rest of its instance: it is on its GPU
  // (an NCCL kernel holds its CTAs) but moves nothing. Not called for the member whose launch
  // starts the instance.
  virtual void waiting(traces::OpId op) = 0;
  // `a` starts now; an instance's members stop waiting.
  virtual void started(const Activity& a) = 0;
  // `a` has finished; its ops leave their GPUs.
  virtual void finished(const Activity& a) = 0;
  // The part of a communication instance's time alone `alone` that no bandwidth buys back
  // (launch, hop latencies, per-step overheads). The engine runs it first, at full speed, the
  // members holding their SMs (as waiting) but moving nothing, and starts the instance's shared,
  // moving part after it: the latency-then-bandwidth phases of flow-level network simulators.
  // None by default.
  virtual Time fixed_part(std::uint32_t instance, Time alone) {
    (void)instance;
    (void)alone;
    return Time();
  }
  // Appends the rate of every activity started since the last call, and of every running one
  // whose rate changed, in a deterministic order.
  virtual void rates(std::vector<RateChange>& changed) = 0;
};

}  // namespace lagom::sim
