// Busy/idle accounting from per-op launch/start/end times.
#include "lagom/sim/stats.hpp"

#include <algorithm>
#include <utility>

namespace lagom::sim {

StepStats summarize(const traces::Workload& w, const SimResult& r) {
  StepStats s;
  s.step_time = r.step_time;
  s.streams.resize(w.streams().size());
  s.ranks.resize(w.rank_count());
  std::vector<std::pair<Time, Time>> spans;
  for (traces::Rank rank = 0; rank < w.rank_count(); ++rank) {
    spans.clear();
    for (traces::StreamId sid = w.first_stream(rank); sid < w.last_stream(rank); ++sid) {
      const traces::Stream& st = w.stream(sid);
      StreamStats& ss = s.streams[sid];
      ss.ops = st.op_count;
      for (traces::OpId op = st.first_op; op < st.first_op + st.op_count; ++op) {
        ss.busy += r.ops[op].end - r.ops[op].launch;
        ss.comm_wait += r.ops[op].start - r.ops[op].launch;
        if (r.ops[op].end > r.ops[op].launch) {
          spans.emplace_back(r.ops[op].launch, r.ops[op].end);
        }
      }
      ss.idle = s.step_time - ss.busy;
    }
    // Union of the rank's busy intervals.
    std::sort(spans.begin(), spans.end());
    Time busy;
    Time cur_begin;
    Time cur_end;
    bool open = false;
    for (const auto& [b, e] : spans) {
      if (open && b <= cur_end) {
        cur_end = std::max(cur_end, e);
        continue;
      }
      if (open) {
        busy += cur_end - cur_begin;
      }
      cur_begin = b;
      cur_end = e;
      open = true;
    }
    if (open) {
      busy += cur_end - cur_begin;
    }
    s.ranks[rank] = RankStats{busy, s.step_time - busy};
  }
  return s;
}

}  // namespace lagom::sim
