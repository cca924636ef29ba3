// Busy/idle accounting and overlap groups from per-op launch/start/end times.
#include "lagom/sim/stats.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace lagom::sim {

double slowdown(const traces::OpTimes& t) {
  if (t.alone.count_ns() <= 0) {
    return 1.0;
  }
  return static_cast<double>((t.end - t.start).count_ns()) /
         static_cast<double>(t.alone.count_ns());
}

OverlapStats find_overlap_groups(const traces::Workload& w, const SimResult& r) {
  OverlapStats o;
  double compute_sum = 0;
  double comm_sum = 0;
  double compute_max = 0;
  std::uint64_t compute_n = 0;
  std::uint64_t comm_n = 0;
  // The rank's ops that ran, by (start, OpId): a total order, so groups and their op lists are
  // the same on every run. Reused across ranks.
  std::vector<std::pair<std::int64_t, traces::OpId>> order;
  for (traces::Rank rank = 0; rank < w.rank_count(); ++rank) {
    order.clear();
    for (traces::StreamId sid = w.first_stream(rank); sid < w.last_stream(rank); ++sid) {
      const traces::Stream& st = w.stream(sid);
      for (traces::OpId op = st.first_op; op < st.first_op + st.op_count; ++op) {
        if (r.ops[op].end > r.ops[op].start) {
          order.emplace_back(r.ops[op].start.count_ns(), op);
        }
      }
    }
    std::sort(order.begin(), order.end());
    // Sweep: a component grows while the next op starts before the component's latest end.
    for (std::size_t i = 0; i < order.size();) {
      Time end = r.ops[order[i].second].end;
      std::size_t j = i + 1;
      for (; j < order.size() && r.ops[order[j].second].start < end; ++j) {
        end = std::max(end, r.ops[order[j].second].end);
      }
      bool has_comm = false;
      bool has_compute = false;
      for (std::size_t k = i; k < j; ++k) {
        const traces::OpKind kind = w.kind(order[k].second);
        has_comm = has_comm || traces::is_comm(kind);
        has_compute = has_compute || kind == traces::OpKind::kCompute;
      }
      if (has_comm && has_compute) {
        OverlapGroup g;
        g.rank = rank;
        g.start = r.ops[order[i].second].start;
        g.end = end;
        g.first = static_cast<std::uint32_t>(o.ops.size());
        g.count = static_cast<std::uint32_t>(j - i);
        for (std::size_t k = i; k < j; ++k) {
          const traces::OpId op = order[k].second;
          const traces::OpTimes& t = r.ops[op];
          o.ops.push_back(op);
          const traces::OpKind kind = w.kind(op);
          if (traces::is_comm(kind)) {
            g.comm += t.end - t.start;
            comm_sum += slowdown(t);
            ++comm_n;
          } else if (kind == traces::OpKind::kCompute) {
            g.compute += t.end - t.start;
            const double s = slowdown(t);
            compute_sum += s;
            compute_max = std::max(compute_max, s);
            ++compute_n;
          }
        }
        o.comm += g.comm;
        o.compute += g.compute;
        o.makespan += g.makespan();
        o.groups.push_back(g);
      }
      i = j;
    }
  }
  if (compute_n > 0) {
    o.compute_slowdown_mean = compute_sum / static_cast<double>(compute_n);
    o.compute_slowdown_max = compute_max;
  }
  if (comm_n > 0) {
    o.comm_slowdown_mean = comm_sum / static_cast<double>(comm_n);
  }
  return o;
}

namespace {

using Spans = std::vector<std::pair<Time, Time>>;

// Sorts and merges intervals into disjoint ones.
Spans merge(Spans spans) {
  std::sort(spans.begin(), spans.end());
  Spans out;
  for (const auto& [b, e] : spans) {
    if (!out.empty() && b <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(b, e);
    }
  }
  return out;
}

Time total_length(const Spans& merged) {
  Time t;
  for (const auto& [b, e] : merged) {
    t += e - b;
  }
  return t;
}

// The length `add` adds to the merged `covered` (which becomes their merged union).
Time newly_covered(Spans& covered, Spans add) {
  const Time before = total_length(covered);
  add.insert(add.end(), covered.begin(), covered.end());
  covered = merge(std::move(add));
  return total_length(covered) - before;
}

// Work figures, and each rank's breakdown into ranks[rank].breakdown.
WorkFigures work_figures(const traces::Workload& w, const SimResult& r, Time step_time,
                         std::vector<RankStats>& ranks) {
  WorkFigures f;
  Spans compute;
  Spans comm;
  Spans p2p_wait;
  Spans coll_wait;
  for (traces::Rank rank = 0; rank < w.rank_count(); ++rank) {
    compute.clear();
    comm.clear();
    p2p_wait.clear();
    coll_wait.clear();
    bool pipelined = false;
    Time last_end;
    for (traces::StreamId sid = w.first_stream(rank); sid < w.last_stream(rank); ++sid) {
      const traces::Stream& st = w.stream(sid);
      for (traces::OpId op = st.first_op; op < st.first_op + st.op_count; ++op) {
        const traces::OpKind k = w.kind(op);
        const traces::OpTimes& t = r.ops[op];
        last_end = std::max(last_end, t.end);
        if (traces::is_comm(k)) {
          f.comm_bytes[static_cast<std::size_t>(k)] += static_cast<double>(w.bytes(op));
          if (t.end > t.start) {
            comm.emplace_back(t.start, t.end);
          }
          pipelined = pipelined || traces::is_p2p(k);
          if (t.start > t.launch) {
            (traces::is_p2p(k) ? p2p_wait : coll_wait).emplace_back(t.launch, t.start);
          }
        } else {
          if (const traces::ComputeShape* s = w.compute_shape(op)) {
            if (s->cls == traces::ComputeClass::kGemm ||
                s->cls == traces::ComputeClass::kAttention) {
              f.flops += s->flops;
            }
          }
          if (t.end > t.start) {
            compute.emplace_back(t.start, t.end);
          }
        }
      }
    }
    if (pipelined && last_end < step_time) {
      p2p_wait.emplace_back(last_end, step_time);  // done before the pipeline's last stage
    }
    Breakdown& b = ranks[rank].breakdown;
    Spans covered;
    b.compute = newly_covered(covered, std::move(compute));
    b.exposed_comm = newly_covered(covered, std::move(comm));
    b.pipeline_bubble = newly_covered(covered, std::move(p2p_wait));
    b.peer_wait = newly_covered(covered, std::move(coll_wait));
    b.idle = step_time - total_length(covered);
    f.exposed_comm_max = std::max(f.exposed_comm_max, b.exposed_comm);
  }
  return f;  // compute_mean and exposed_comm_mean: the mean breakdown's (summarize)
}

// The mean of the ranks' breakdowns: each part rounded down to a nanosecond and idle the rest, so
// that the parts sum to step_time exactly and none is negative.
Breakdown mean_breakdown(const std::vector<RankStats>& ranks, Time step_time) {
  std::int64_t sums[4] = {0, 0, 0, 0};  // at most ranks x step: 16,384 x 28 hours fits
  for (const RankStats& rs : ranks) {
    const Breakdown& b = rs.breakdown;
    sums[0] += b.compute.count_ns();
    sums[1] += b.exposed_comm.count_ns();
    sums[2] += b.pipeline_bubble.count_ns();
    sums[3] += b.peer_wait.count_ns();
  }
  const auto n = std::max<std::int64_t>(1, static_cast<std::int64_t>(ranks.size()));
  Breakdown m;
  m.compute = Time::ns(sums[0] / n);
  m.exposed_comm = Time::ns(sums[1] / n);
  m.pipeline_bubble = Time::ns(sums[2] / n);
  m.peer_wait = Time::ns(sums[3] / n);
  m.idle = step_time - m.compute - m.exposed_comm - m.pipeline_bubble - m.peer_wait;
  return m;
}

}  // namespace

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
    const Time busy = total_length(merge(spans));
    s.ranks[rank].busy = busy;
    s.ranks[rank].idle = s.step_time - busy;
  }
  s.overlap = find_overlap_groups(w, r);
  s.work = work_figures(w, r, s.step_time, s.ranks);
  s.breakdown = mean_breakdown(s.ranks, s.step_time);
  s.work.compute_mean = s.breakdown.compute;
  s.work.exposed_comm_mean = s.breakdown.exposed_comm;
  return s;
}

}  // namespace lagom::sim
