// Measured against simulated (see validate.hpp).
#include "lagom/calibrate/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "lagom/calibrate/bundle.hpp"
#include "lagom/common/error.hpp"
#include "lagom/sim/stats.hpp"

namespace lagom::calibrate {
namespace {

ErrorStats stats_of(const std::vector<const OpComparison*>& ops) {
  ErrorStats s;
  std::vector<double> e;
  for (const OpComparison* c : ops) {
    const double a = std::abs(c->rel_error());
    e.push_back(a);
    if (a >= s.worst) {
      s.worst = a;
      s.worst_op = c->op;
    }
  }
  s.ops = static_cast<int>(ops.size());
  s.median = median(e);
  return s;
}

XyzTotals totals(const traces::Workload& w, const sim::SimResult& r) {
  const sim::OverlapStats o = sim::find_overlap_groups(w, r);
  return XyzTotals{o.comm.us(), o.compute.us(), o.makespan.us(), static_cast<int>(o.groups.size())};
}

}  // namespace

ValidationReport compare(const traces::Workload& w, const traces::ExecutionGraph& graph,
                         const sim::SimResult& simulated, const std::vector<MeasuredStep>& measured,
                         double min_us) {
  if (!(min_us > 0)) {
    throw Error(fmt::format("the shortest op compared must be > 0 us (got {})", min_us));
  }
  ValidationReport rep;
  rep.measured.assign(w.op_count(), traces::OpTimes{});
  std::vector<bool> seen(w.op_count(), false);
  for (const MeasuredStep& m : measured) {
    rep.measured_step_us = std::max(rep.measured_step_us, m.step_time_us);
    rep.standins = rep.standins || m.standins;
    for (const MeasuredOp& op : m.ops) {
      const auto found = w.find_op(op.id);
      if (!found || w.rank_of(*found) != op.rank) {
        throw Error(
            fmt::format("{}: op '{}' on rank {} is not in the workload", m.source, op.id, op.rank));
      }
      if (seen[*found]) {
        throw Error(fmt::format("{}: op '{}' was measured twice", m.source, op.id));
      }
      seen[*found] = true;
      traces::OpTimes& t = rep.measured[*found];
      t.launch = t.start = Time::from_us(op.start_us);
      t.end = Time::from_us(op.end_us);
      t.alone = t.end - t.start;
    }
  }
  // A communication op makes progress once every member has arrived (the simulation's `start`);
  // until then its rank only waits. Measured, each member's record begins when its own rank
  // reached it, so the wait for peers is taken out the same way: from the last arrival.
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    const traces::InstanceId inst = graph.instance_of(op);
    if (!seen[op] || inst == traces::kNoInstance) {
      continue;
    }
    Time last = rep.measured[op].launch;
    for (traces::OpId member : graph.members(inst)) {
      if (seen[member]) {
        last = std::max(last, rep.measured[member].launch);
      }
    }
    traces::OpTimes& t = rep.measured[op];
    t.start = std::min(last, t.end);
    t.alone = t.end - t.start;
  }
  std::vector<const OpComparison*> compute;
  std::vector<const OpComparison*> comm;
  std::vector<const OpComparison*> all;
  rep.ops.reserve(w.op_count());
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    if (!seen[op]) {
      rep.missing.push_back(w.describe(op));
      continue;
    }
    const traces::OpTimes& s = simulated.ops[op];
    rep.ops.push_back(OpComparison{op, (rep.measured[op].end - rep.measured[op].start).us(),
                                   (s.end - s.start).us()});
  }
  for (const OpComparison& c : rep.ops) {
    if (c.measured_us < min_us) {
      continue;  // below what events resolve (~0.5 us)
    }
    all.push_back(&c);
    (traces::is_comm(w.kind(c.op)) ? comm : compute).push_back(&c);
  }
  rep.compute = stats_of(compute);
  rep.comm = stats_of(comm);
  rep.all = stats_of(all);
  rep.simulated_step_us = simulated.step_time.us();
  if (rep.missing.empty()) {
    sim::SimResult m;
    m.ops = rep.measured;
    for (const traces::OpTimes& t : m.ops) {
      m.step_time = std::max(m.step_time, t.end);
    }
    rep.measured_xyz = totals(w, m);
  }
  rep.simulated_xyz = totals(w, simulated);
  return rep;
}

}  // namespace lagom::calibrate
