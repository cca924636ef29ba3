// Chrome/Perfetto trace JSON of a simulated step: opens in ui.perfetto.dev and chrome://tracing.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>

#include "lagom/common/time.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::traces {

// When each op ran, from the start of the step (indexed by OpId).
//   launch: the op's stream reached it and its deps were done (a collective member starts
//           waiting for its peers here);
//   start:  it began to make progress (for communication: all peers had arrived);
//   end:    it finished.
struct OpTimeline {
  std::span<const Time> launch;
  std::span<const Time> start;
  std::span<const Time> end;
};

struct ChromeTraceOptions {
  // Extra "args" members for an op's slice, as a JSON object body without braces
  // (e.g. "\"slowdown\": 1.25"); empty for none.
  std::function<std::string(OpId)> extra_args;
  bool dependency_flows = true;
};

// One process per rank ("rank N"), one thread per stream, an "X" slice per op (microseconds,
// exactly three decimals), a "wait" slice while a communication op waits for its peers, and a
// flow arrow for each dependency.
void write_chrome_trace(const Workload& w, const OpTimeline& t, std::ostream& out,
                        const ChromeTraceOptions& options = {});

}  // namespace lagom::traces
