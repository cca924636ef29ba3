// Chrome/Perfetto trace JSON of a simulated step: opens in ui.perfetto.dev and chrome://tracing.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "lagom/traces/timeline.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::traces {

struct ChromeTraceOptions {
  // Extra "args" members for an op's slice, as a JSON object body without braces
  // (e.g. "\"slowdown\": 1.25"); empty for none.
  std::function<std::string(OpId)> extra_args;
  bool dependency_flows = true;
  // Filters for large steps: only the ranks marked true (empty: every rank), and only ops whose
  // time from launch to end meets [window_begin_ns, window_end_ns] (end 0: no window). Flows are
  // drawn between shown ops only.
  std::vector<bool> ranks;
  std::int64_t window_begin_ns = 0;
  std::int64_t window_end_ns = 0;
};

// One process per rank ("rank N"), one thread per stream, an "X" slice per op (microseconds,
// exactly three decimals), a "wait" slice while a communication op waits for its peers, and a
// flow arrow for each dependency.
// `times` is indexed by OpId.
void write_chrome_trace(const Workload& w, std::span<const OpTimes> times, std::ostream& out,
                        const ChromeTraceOptions& options = {});

// Several timelines of one workload in one trace (e.g. measured and simulated, `lagom validate`):
// timeline i's ranks are processes "<label> rank N" after the previous timelines' ranks. Ops a
// timeline lacks (`present` false) have no slice there.
struct LabelledTimeline {
  std::string label;
  std::span<const OpTimes> times;
  std::vector<bool> present;  // by OpId; empty: every op
};
void write_chrome_trace(const Workload& w, std::span<const LabelledTimeline> timelines,
                        std::ostream& out, const ChromeTraceOptions& options = {});

}  // namespace lagom::traces
