// Collective classes and step evaluation (see evaluator.hpp).
#include "lagom/search/evaluator.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

#include "lagom/common/error.hpp"
#include "lagom/nccl/legality.hpp"
#include "lagom/search/plan.hpp"
#include "lagom/sim/stats.hpp"

namespace lagom::search {
namespace {

// Keeps the grid points of `s` that NCCL also accepts on the communicator of `t` (classes
// merge communicators of the same shape; their topologies may still differ).
bool restrict_to(Subspace& s, const nccl::Tables& t, nccl::CollKind coll, std::int64_t bytes) {
  if (nccl::is_tuned(coll) && nccl::algo_time_us(t, coll, s.algo, s.proto, bytes) < 0) {
    return false;
  }
  auto ok = [&](const nccl::CommConfig& c) { return !nccl::why_illegal(t.comm, coll, c); };
  nccl::CommConfig base = s.nccl;
  std::erase_if(s.channels, [&](int v) {
    nccl::CommConfig c = base;
    c.nchannels = v;
    return !ok(c);
  });
  std::erase_if(s.threads, [&](int v) {
    nccl::CommConfig c = base;
    c.nthreads = v;
    return !ok(c);
  });
  std::erase_if(s.chunks, [&](std::int64_t v) {
    nccl::CommConfig c = base;
    c.chunk_bytes = v;
    return !ok(c);
  });
  return s.size() > 0;
}

}  // namespace

Evaluator::Evaluator(const traces::Workload& w, const topologies::Cluster& cluster,
                     const hardware::HardwareProfile& profile, SpaceOptions space, bool contention)
    : w_(w),
      space_(space),
      sim_(std::make_unique<sim::Simulation>(w, cluster, profile,
                                             sim::SimulationOptions{contention, {}})),
      cost_(sim_->cost()) {
  const traces::ExecutionGraph& graph = sim_->graph();
  class_of_op_.assign(w.op_count(), -1);
  using Key = std::tuple<int, std::int64_t, int, int>;
  std::map<Key, std::int32_t> index;
  std::vector<std::set<const nccl::Tables*>> tables;
  // A folded step's replica count: the most GPUs a communicator spans per rank it holds.
  std::int64_t folded = 1;
  for (const traces::Group& g : w.groups()) {
    if (!g.ranks.empty() && g.gpus.size() > g.ranks.size()) {
      folded =
          std::max<std::int64_t>(folded, static_cast<std::int64_t>(g.gpus.size() / g.ranks.size()));
    }
  }
  for (traces::InstanceId i = 0; i < graph.instance_count(); ++i) {
    const auto members = graph.members(i);
    const traces::OpId op = members.front();
    const auto kind = traces::coll_kind_of(w.kind(op));
    if (!kind || !plannable(*kind) || w.duration_ns(op) != traces::kNoDuration) {
      continue;
    }
    const topologies::CommunicatorInfo& info = cost_->communicator_info(op);
    const Key key{static_cast<int>(*kind), w.bytes(op), info.nnodes, info.nranks};
    auto [it, fresh] = index.emplace(key, static_cast<std::int32_t>(classes_.size()));
    if (fresh) {
      CollClass c;
      c.coll = *kind;
      c.bytes = w.bytes(op);
      c.nnodes = info.nnodes;
      c.nranks = info.nranks;
      c.nccl = cost_->config_for(op);
      classes_.push_back(std::move(c));
      tables.emplace_back();
    }
    CollClass& c = classes_[static_cast<std::size_t>(it->second)];
    ++c.calls;
    // A communicator of r ranks spanning g GPUs stands for folded x r / g calls of the step (a
    // replicated tensor-parallel group for each replica; a data-parallel one, which spans them
    // all, for one).
    const traces::GroupId gid = w.group(op);
    std::int64_t stands_for = folded;
    if (gid != traces::kNoGroup) {
      const traces::Group& g = w.groups()[static_cast<std::size_t>(gid)];
      const auto span = static_cast<std::int64_t>(g.cluster_gpus().size());
      const auto held = static_cast<std::int64_t>(g.ranks.size());
      stands_for = span > 0 ? std::max<std::int64_t>(1, folded * held / span) : folded;
    }
    c.step_calls += stands_for;
    c.examples.push_back(op);
    tables[static_cast<std::size_t>(it->second)].insert(&cost_->nccl_tables(op));
    for (traces::OpId m : members) {
      class_of_op_[m] = it->second;
    }
  }
  for (std::size_t j = 0; j < classes_.size(); ++j) {
    CollClass& c = classes_[j];
    const nccl::Tables& first = cost_->nccl_tables(c.examples.front());
    c.subspaces = subspaces(first, c.coll, c.bytes, space_);
    for (const nccl::Tables* t : tables[j]) {
      if (t != &first) {
        std::erase_if(c.subspaces,
                      [&](Subspace& s) { return !restrict_to(s, *t, c.coll, c.bytes); });
      }
    }
    if (c.subspaces.empty()) {
      throw Error(fmt::format("{} of {} bytes on {} ranks: no configuration NCCL accepts",
                              nccl::to_string(c.coll), c.bytes, c.nranks));
    }
  }
  current_.resize(classes_.size());
  active_.assign(classes_.size(), false);
  sim_->set_config_source(this);
}

Evaluator::~Evaluator() = default;

nccl::ConfigOverride Evaluator::override_of(const nccl::CommConfig& c) const {
  // With Resources::kNccl threads and chunk are NCCL's for the pinned algorithm, protocol and
  // channels, derived as NCCL derives them (and as a plan's replay does), not the grid's copy of
  // NCCL's values at its own channel count.
  if (space_.resources == Resources::kNccl) {
    return nccl::ConfigOverride{c.algo, c.proto, c.nchannels, 0, 0};
  }
  return nccl::ConfigOverride{c.algo, c.proto, c.nchannels, c.nthreads, c.chunk_bytes};
}

nccl::CommConfig Evaluator::applied(std::size_t j, const nccl::CommConfig& c) const {
  const CollClass& cls = classes_.at(j);
  return nccl::resolve_config(cost_->nccl_tables(cls.examples.front()), cls.coll, cls.bytes,
                              override_of(c));
}

const nccl::ConfigOverride* Evaluator::override_for(traces::OpId op) const {
  const std::int32_t j = class_of_op_[op];
  if (j < 0 || !active_[static_cast<std::size_t>(j)]) {
    return nullptr;
  }
  return &current_[static_cast<std::size_t>(j)];
}

Evaluation Evaluator::evaluate(std::span<const std::optional<nccl::CommConfig>> configs) {
  if (configs.size() != classes_.size()) {
    throw Error(fmt::format("internal: {} configurations for {} collective classes", configs.size(),
                            classes_.size()));
  }
  for (std::size_t j = 0; j < classes_.size(); ++j) {
    active_[j] = configs[j].has_value();
    if (configs[j]) {
      current_[j] = override_of(*configs[j]);
    }
  }
  ++evaluations_;
  const sim::SimResult r = sim_->run();

  Evaluation e;
  e.step_time = r.step_time;
  const std::size_t n = classes_.size();
  e.comm_us.assign(n, 0.0);
  e.group_comm_us.assign(n, 0.0);
  e.group_compute_us.assign(n, 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    for (traces::OpId op : classes_[j].examples) {
      e.comm_us[j] += (r.ops[op].end - r.ops[op].start).us();
    }
  }
  for (traces::OpId op = 0; op < w_.op_count(); ++op) {
    if (w_.kind(op) == traces::OpKind::kCompute) {
      e.compute_us += (r.ops[op].end - r.ops[op].start).us();
    }
  }
  const sim::OverlapStats groups = sim::find_overlap_groups(w_, r);
  std::vector<std::size_t> seen(n, static_cast<std::size_t>(-1));
  for (std::size_t g = 0; g < groups.groups.size(); ++g) {
    const sim::OverlapGroup& group = groups.groups[g];
    for (traces::OpId op : groups.ops_of(group)) {
      const std::int32_t j = class_of_op_[op];
      if (j >= 0 && seen[static_cast<std::size_t>(j)] != g) {
        seen[static_cast<std::size_t>(j)] = g;
        e.group_comm_us[static_cast<std::size_t>(j)] += group.comm.us();
        e.group_compute_us[static_cast<std::size_t>(j)] += group.compute.us();
      }
    }
  }
  // Per rank, so that a folded step (one data-parallel replica standing for all) measures what
  // the whole step does.
  const double ranks = static_cast<double>(w_.rank_count());
  for (std::size_t j = 0; j < n; ++j) {
    e.group_comm_us[j] /= ranks;
    e.group_compute_us[j] /= ranks;
  }
  return e;
}

}  // namespace lagom::search
