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
    // A stream runs its ops one after another, so each stream's run is already in order: merge
    // the runs (a rank has a few streams) instead of sorting them all.
    for (traces::StreamId sid = w.first_stream(rank); sid < w.last_stream(rank); ++sid) {
      const traces::Stream& st = w.stream(sid);
      const auto from = static_cast<std::ptrdiff_t>(order.size());
      for (traces::OpId op = st.first_op; op < st.first_op + st.op_count; ++op) {
        if (r.ops[op].end > r.ops[op].start) {
          order.emplace_back(r.ops[op].start.count_ns(), op);
        }
      }
      if (!std::is_sorted(order.begin() + from, order.end())) {
        std::sort(order.begin() + from, order.end());
      }
      std::inplace_merge(order.begin(), order.begin() + from, order.end());
    }
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
  Spans recv_wait;  // and the pipeline's tail
  Spans send_wait;
  Spans coll_wait;
  for (traces::Rank rank = 0; rank < w.rank_count(); ++rank) {
    compute.clear();
    comm.clear();
    recv_wait.clear();
    send_wait.clear();
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
            (k == traces::OpKind::kSend ? send_wait
             : traces::is_p2p(k)        ? recv_wait
                                        : coll_wait)
                .emplace_back(t.launch, t.start);
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
      recv_wait.emplace_back(last_end, step_time);  // done before the pipeline's last stage
    }
    Breakdown& b = ranks[rank].breakdown;
    Spans covered;
    b.compute = newly_covered(covered, std::move(compute));
    b.exposed_comm = newly_covered(covered, std::move(comm));
    // A receive that waits holds the rank's next work back; a send that waits (on its own
    // stream, as batched isend) usually does not, so a collective's wait at the same instant
    // names the cause first.
    b.pipeline_bubble = newly_covered(covered, std::move(recv_wait));
    b.peer_wait = newly_covered(covered, std::move(coll_wait));
    b.pipeline_bubble += newly_covered(covered, std::move(send_wait));
    b.idle = step_time - total_length(covered);
    f.exposed_comm_max = std::max(f.exposed_comm_max, b.exposed_comm);
  }
  return f;  // compute_mean and exposed_comm_mean: the mean breakdown's (summarize)
}

// The mean of the ranks' breakdowns in whole nanoseconds that sum to step_time exactly: each
// part is its exact mean rounded down or up, the parts with the largest fractions rounded up
// (largest remainder), so no part is off by more than a nanosecond and idle does not collect the
// others' rounding. Sums are kept as quotient and remainder by the rank count, which cannot
// overflow however many ranks and however long the step.
Breakdown mean_breakdown(const std::vector<RankStats>& ranks, Time step_time) {
  const auto n = std::max<std::int64_t>(1, static_cast<std::int64_t>(ranks.size()));
  constexpr std::size_t kParts = 5;
  std::int64_t quot[kParts] = {};
  std::int64_t rem[kParts] = {};  // each in [0, n)
  for (const RankStats& rs : ranks) {
    const Breakdown& b = rs.breakdown;
    const Time parts[kParts - 1] = {b.compute, b.exposed_comm, b.pipeline_bubble, b.peer_wait};
    for (std::size_t i = 0; i + 1 < kParts; ++i) {
      const std::int64_t v = parts[i].count_ns();  // >= 0
      quot[i] += v / n;
      rem[i] += v % n;
      if (rem[i] >= n) {
        ++quot[i];
        rem[i] -= n;
      }
    }
  }
  // Idle's exact mean is the step less the others': (step - sum quot) - (sum rem) / n.
  std::int64_t rem_sum = 0;  // < 4n
  std::int64_t quot_sum = 0;
  for (std::size_t i = 0; i + 1 < kParts; ++i) {
    rem_sum += rem[i];
    quot_sum += quot[i];
  }
  const std::int64_t round_ups = (rem_sum + n - 1) / n;  // parts to round up
  quot[kParts - 1] = step_time.count_ns() - quot_sum - round_ups;
  rem[kParts - 1] = round_ups * n - rem_sum;
  // The `round_ups` parts with the largest remainders go up a nanosecond (ties: earlier part).
  std::size_t order[kParts] = {0, 1, 2, 3, 4};
  std::stable_sort(std::begin(order), std::end(order),
                   [&](std::size_t a, std::size_t b) { return rem[a] > rem[b]; });
  for (std::int64_t k = 0; k < round_ups; ++k) {
    ++quot[order[k]];
  }
  Breakdown m;
  m.compute = Time::ns(quot[0]);
  m.exposed_comm = Time::ns(quot[1]);
  m.pipeline_bubble = Time::ns(quot[2]);
  m.peer_wait = Time::ns(quot[3]);
  m.idle = Time::ns(quot[4]);
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
