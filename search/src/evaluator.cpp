// Collective classes and step evaluation (see evaluator.hpp).
#include "lagom/search/evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
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
  auto ok = [&](const nccl::CommConfig& c) { return !nccl::why_illegal(t, coll, c); };
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

// Evaluations the evaluator keeps for repeats: a search's walk revisits a handful, and
// `lagom compare` re-evaluates NCCL's choice per method; a random or exhaustive search, which
// does not repeat, stops filling it.
constexpr std::size_t kMemo = 4096;

}  // namespace

// One simulation and the overrides it runs with: the evaluator's own, or one per extra thread.
struct Evaluator::Worker final : sim::ConfigSource {
  // Runs `simulation` with the overrides of `classes` collective classes (class_of: by op).
  Worker(std::unique_ptr<sim::Simulation> simulation, const std::vector<std::int32_t>& class_of,
         std::size_t classes)
      : sim(std::move(simulation)), class_of_op(&class_of), current(classes), active(classes, 0) {
    sim->set_config_source(this);
  }

  std::unique_ptr<sim::Simulation> sim;
  const std::vector<std::int32_t>* class_of_op;
  std::vector<nccl::ConfigOverride> current;
  std::vector<char> active;

  const nccl::ConfigOverride* override_for(traces::OpId op) const override {
    const std::int32_t j = (*class_of_op)[op];
    if (j < 0 || active[static_cast<std::size_t>(j)] == 0) {
      return nullptr;
    }
    return &current[static_cast<std::size_t>(j)];
  }
};

Evaluator::Evaluator(const traces::Workload& w, const topologies::Cluster& cluster,
                     const hardware::HardwareProfile& profile, SpaceOptions space, bool contention)
    : w_(w), space_(space) {
  auto own = std::make_unique<sim::Simulation>(w, cluster, profile,
                                               sim::SimulationOptions{contention, {}});
  // Every evaluation runs the step again: the compute ops' times alone are computed once.
  own->mutable_cost()->memoize_alone();
  cost_ = own->cost();
  const traces::ExecutionGraph& graph = own->graph();
  class_of_op_.assign(w.op_count(), -1);
  using ClassKey = std::tuple<int, std::int64_t, int, int>;
  std::map<ClassKey, std::int32_t> index;
  std::vector<std::set<const nccl::Tables*>> tables;
  // A folded step's replica count: the most GPUs a communicator's instances span per rank it
  // holds.
  std::int64_t folded = 1;
  for (const traces::Group& g : w.groups()) {
    if (!g.ranks.empty() && g.folded()) {
      folded = std::max<std::int64_t>(
          folded, static_cast<std::int64_t>(g.cluster_gpus().size() * (1 + g.mirrors.size()) /
                                            g.ranks.size()));
    }
  }
  // A key (collective, size, nodes, ranks) is tuned when the models time at least one of its
  // calls. Its class then holds every call of the key, measured ones too (traces::measured_member:
  // such a call runs alone for its duration, but its configuration still sets the SMs it holds
  // and its traffic under contention), since a plan's rule applies to every call of its key on
  // replay; the search must run them as the replay will. A key whose calls are all measured is
  // not tuned (no rule: they keep NCCL's choice).
  std::vector<std::optional<ClassKey>> keys(graph.instance_count());
  std::set<ClassKey> modelled;
  for (traces::InstanceId i = 0; i < graph.instance_count(); ++i) {
    const traces::OpId op = graph.members(i).front();
    const auto kind = traces::coll_kind_of(w.kind(op));
    if (!kind || !plannable(*kind)) {
      continue;
    }
    const topologies::CommunicatorInfo& info = cost_->communicator_info(op);
    keys[i] = ClassKey{static_cast<int>(*kind), w.bytes(op), info.nnodes, info.nranks};
    if (!traces::measured_member(w, graph, i)) {
      modelled.insert(*keys[i]);
    }
  }
  for (traces::InstanceId i = 0; i < graph.instance_count(); ++i) {
    if (!keys[i] || modelled.count(*keys[i]) == 0) {
      continue;
    }
    const auto members = graph.members(i);
    const traces::OpId op = members.front();
    const auto& [kind, bytes, nnodes, nranks] = *keys[i];
    auto [it, fresh] = index.emplace(*keys[i], static_cast<std::int32_t>(classes_.size()));
    if (fresh) {
      CollClass c;
      c.coll = static_cast<nccl::CollKind>(kind);
      c.bytes = bytes;
      c.nnodes = nnodes;
      c.nranks = nranks;
      c.nccl = cost_->config_for(op);
      classes_.push_back(std::move(c));
      tables.emplace_back();
    }
    CollClass& c = classes_[static_cast<std::size_t>(it->second)];
    ++c.calls;
    // A communicator with mirrors stands for itself and each of them; one of r ranks spanning g
    // GPUs without (a workload folded before mirrors were written) for folded x r / g calls of
    // the step (a replicated tensor-parallel group for each replica; a data-parallel one, which
    // spans them all, for one).
    const traces::GroupId gid = w.group(op);
    std::int64_t stands_for = folded;
    if (gid != traces::kNoGroup) {
      const traces::Group& g = w.groups()[static_cast<std::size_t>(gid)];
      const auto span = static_cast<std::int64_t>(g.cluster_gpus().size());
      const auto held = static_cast<std::int64_t>(g.ranks.size());
      stands_for = !g.mirrors.empty() ? 1 + static_cast<std::int64_t>(g.mirrors.size())
                   : span > 0         ? std::max<std::int64_t>(1, folded * held / span)
                                      : folded;
    }
    c.step_calls += stands_for;
    c.weights.push_back(static_cast<std::int32_t>(std::min<std::int64_t>(stands_for, 1 << 30)));
    c.nccl_varies = c.nccl_varies || cost_->config_for(op) != c.nccl;
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
  workers_.push_back(std::make_unique<Worker>(std::move(own), class_of_op_, classes_.size()));
}

Evaluator::~Evaluator() = default;

void Evaluator::set_jobs(int jobs) {
  if (jobs < 1) {
    throw Error(fmt::format("jobs: {} threads; at least 1", jobs));
  }
  jobs_ = jobs;
}

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

Evaluator::Key Evaluator::key_of(std::span<const std::optional<nccl::CommConfig>> configs) const {
  if (configs.size() != classes_.size()) {
    throw Error(fmt::format("internal: {} configurations for {} collective classes", configs.size(),
                            classes_.size()));
  }
  Key key;
  key.reserve(configs.size() * 5);
  for (const std::optional<nccl::CommConfig>& c : configs) {
    if (!c) {
      key.push_back(-1);
      continue;
    }
    const nccl::ConfigOverride o = override_of(*c);
    key.insert(key.end(), {static_cast<std::int64_t>(o.algo ? static_cast<int>(*o.algo) : -1),
                           static_cast<std::int64_t>(o.proto ? static_cast<int>(*o.proto) : -1),
                           o.nchannels, o.nthreads, o.chunk_bytes});
  }
  return key;
}

Evaluation Evaluator::evaluate(std::span<const std::optional<nccl::CommConfig>> configs) {
  const std::vector<std::optional<nccl::CommConfig>> one(configs.begin(), configs.end());
  return evaluate_all(std::span(&one, 1)).front();
}

std::vector<Evaluation> Evaluator::evaluate_all(
    std::span<const std::vector<std::optional<nccl::CommConfig>>> batch,
    std::span<const std::vector<std::optional<nccl::CommConfig>>> ahead) {
  const std::size_t n = batch.size();
  std::vector<Evaluation> out(n);
  std::vector<Key> keys(n);
  std::vector<std::size_t> todo;        // first candidates of keys not kept
  std::vector<std::size_t> same(n, n);  // a repeat within the batch: its first
  std::map<Key, std::size_t> first;
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = key_of(batch[i]);
    if (auto m = memo_.find(keys[i]); m != memo_.end()) {
      out[i] = m->second;
    } else if (auto f = first.find(keys[i]); f != first.end()) {
      same[i] = f->second;
    } else {
      first.emplace(keys[i], i);
      todo.push_back(i);
    }
  }
  // Look-ahead candidates fill the threads the batch leaves idle, never more: up to a whole
  // number of tasks per thread (3 candidates on 2 threads leave one thread a task's time idle).
  const std::size_t jobs = static_cast<std::size_t>(jobs_);
  const std::size_t slots = (todo.size() + jobs - 1) / jobs * jobs;
  std::vector<std::size_t> spare;  // into `ahead`
  std::vector<Key> spare_keys;
  for (std::size_t i = 0; !todo.empty() && i < ahead.size() && todo.size() + spare.size() < slots;
       ++i) {
    Key k = key_of(ahead[i]);
    if (memo_.count(k) == 0 && first.count(k) == 0 &&
        std::find(spare_keys.begin(), spare_keys.end(), k) == spare_keys.end()) {
      spare.push_back(i);
      spare_keys.push_back(std::move(k));
    }
  }
  const std::size_t tasks = todo.size() + spare.size();
  std::vector<Evaluation> spare_out(spare.size());
  std::vector<char> spare_ok(spare.size(), 0);
  // Task t < todo.size() is a batch candidate, the rest look-ahead ones.
  auto run_task = [&](Worker& worker, std::size_t t) {
    if (t < todo.size()) {
      out[todo[t]] = run_on(worker, batch[todo[t]]);
    } else {
      const std::size_t k = t - todo.size();
      spare_out[k] = run_on(worker, ahead[spare[k]]);
      spare_ok[k] = 1;
    }
  };
  const std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(jobs_), tasks);
  while (workers_.size() < threads) {
    workers_.push_back(
        std::make_unique<Worker>(workers_.front()->sim->sibling(), class_of_op_, classes_.size()));
  }
  std::vector<std::exception_ptr> errors(tasks);
  // Each thread takes the next task; a result lands at its candidate's index, so which thread
  // ran it does not matter.
  std::atomic<std::size_t> next{0};
  auto work = [&](Worker& worker) {
    for (std::size_t t = next++; t < tasks; t = next++) {
      try {
        run_task(worker, t);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    }
  };
  if (threads <= 1) {
    work(*workers_.front());
  } else {
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) {
      try {
        pool.emplace_back(work, std::ref(*workers_[t]));
      } catch (const std::system_error&) {
        break;  // no more threads: those running (and this one) take every task
      }
    }
    work(*workers_.front());
    for (std::thread& t : pool) {
      t.join();
    }
  }
  // Keep every candidate simulated, even when one failed: after an interrupt the caller keeps
  // the batch's results up to the first that failed (kept()), as one at a time would have.
  std::optional<std::exception_ptr> failed;
  for (std::size_t t = 0; t < todo.size(); ++t) {
    if (errors[t]) {
      failed = failed.value_or(errors[t]);
    } else {
      ++simulations_;
      if (memo_.size() < kMemo) {
        memo_.emplace(keys[todo[t]], out[todo[t]]);
      }
    }
  }
  if (failed) {
    std::rethrow_exception(*failed);
  }
  evaluations_ += static_cast<std::int64_t>(n);
  for (std::size_t k = 0; k < spare.size(); ++k) {
    simulations_ += spare_ok[k];
    if (spare_ok[k] != 0 && memo_.size() < kMemo) {
      memo_.emplace(std::move(spare_keys[k]), std::move(spare_out[k]));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (same[i] < n) {
      out[i] = out[same[i]];
    }
  }
  return out;
}

std::optional<Evaluation> Evaluator::kept(
    std::span<const std::optional<nccl::CommConfig>> configs) const {
  const auto m = memo_.find(key_of(configs));
  if (m == memo_.end()) {
    return std::nullopt;
  }
  return m->second;
}

void Evaluator::apply(Worker& worker,
                      std::span<const std::optional<nccl::CommConfig>> configs) const {
  for (std::size_t j = 0; j < classes_.size(); ++j) {
    worker.active[j] = configs[j].has_value() ? 1 : 0;
    if (configs[j]) {
      worker.current[j] = override_of(*configs[j]);
    }
  }
}

Evaluation Evaluator::run_on(Worker& worker,
                             std::span<const std::optional<nccl::CommConfig>> configs) const {
  apply(worker, configs);
  return measure(worker.sim->run());
}

template <typename F>
auto Evaluator::with_class_config(std::size_t j, const nccl::CommConfig& c, F f) {
  Worker& own = *workers_.front();
  // Class j runs `c` while its calls are timed, and what it ran before afterwards, also when
  // timing one throws (an illegal configuration): the next evaluation must not see `c`.
  struct Restore {
    Worker& w;
    std::size_t j;
    char active;
    nccl::ConfigOverride current;
    ~Restore() {
      w.active[j] = active;
      w.current[j] = current;
    }
  } restore{own, j, own.active[j], own.current[j]};
  own.active[j] = 1;
  own.current[j] = override_of(c);
  return f(own.sim->graph());
}

double Evaluator::alone_comm_us(std::size_t j, const nccl::CommConfig& c) {
  return with_class_config(j, c, [&](const traces::ExecutionGraph& graph) {
    // In whole nanoseconds, as measure() sums (a folded step's sum is then exactly its share).
    double ns = 0;
    const CollClass& cls = classes_[j];
    for (std::size_t i = 0; i < cls.examples.size(); ++i) {
      const traces::OpId op = cls.examples[i];
      // As the engine times an instance alone: by its measured member's duration when it has
      // one (then `c` does not set it), else by the collective model under `c`.
      if (const auto m = traces::measured_member(w_, graph, graph.instance_of(op))) {
        ns += static_cast<double>(w_.duration_ns(*m)) * cls.weights[i];
      } else {
        ns += cost_->standalone_time(w_, graph, op).count_ns_double() * cls.weights[i];
      }
    }
    return ns / 1000.0;
  });
}

void Evaluator::build_bounds() {
  const traces::ExecutionGraph& graph = workers_.front()->sim->graph();
  std::map<traces::StreamId, std::uint32_t> index;
  const auto stream_index = [&](traces::OpId op) {
    return index.try_emplace(w_.stream_of(op), static_cast<std::uint32_t>(index.size()))
        .first->second;
  };
  struct Pending {
    std::vector<double> measured_ns;               // by stream index, grown as streams appear
    std::map<std::int64_t, std::size_t> by_group;  // a call without a group: its own
    std::vector<StreamCalls> modelled;
    std::vector<std::map<std::uint32_t, std::uint32_t>> counts;
  };
  std::vector<Pending> pending(classes_.size());
  for (std::size_t j = 0; j < classes_.size(); ++j) {
    Pending& p = pending[j];
    for (traces::OpId op : classes_[j].examples) {
      const traces::InstanceId inst = graph.instance_of(op);
      const auto measured = traces::measured_member(w_, graph, inst);
      // Calls of one communicator (and the class's one kind and size) take the same time alone
      // under one configuration: ModelCost's memo keys them alike.
      std::size_t rep = 0;
      if (!measured) {
        const traces::GroupId gid = w_.group(op);
        const std::int64_t key = gid != traces::kNoGroup ? static_cast<std::int64_t>(gid)
                                                         : -1 - static_cast<std::int64_t>(inst);
        const auto [it, added] = p.by_group.try_emplace(key, p.modelled.size());
        if (added) {
          p.modelled.push_back(StreamCalls{op, {}});
          p.counts.emplace_back();
        }
        rep = it->second;
      }
      for (traces::OpId m : graph.members(inst)) {
        const std::uint32_t s = stream_index(m);
        if (measured) {
          if (p.measured_ns.size() <= s) {
            p.measured_ns.resize(s + 1, 0);
          }
          p.measured_ns[s] += static_cast<double>(w_.duration_ns(*measured)) - 1;
        } else {
          ++p.counts[rep][s];
        }
      }
    }
  }
  bound_streams_ = index.size();
  bounds_.resize(classes_.size());
  for (std::size_t j = 0; j < classes_.size(); ++j) {
    ClassBound& b = bounds_[j];
    b.measured_ns = std::move(pending[j].measured_ns);
    b.measured_ns.resize(bound_streams_, 0);
    b.modelled = std::move(pending[j].modelled);
    for (std::size_t r = 0; r < b.modelled.size(); ++r) {
      b.modelled[r].counts.assign(pending[j].counts[r].begin(), pending[j].counts[r].end());
    }
  }
}

std::size_t Evaluator::bound_streams() {
  if (bounds_.empty() && !classes_.empty()) {
    build_bounds();
  }
  return bound_streams_;
}

std::size_t Evaluator::bound_groups(std::size_t j) {
  bound_streams();
  return bounds_[j].modelled.size();
}

std::vector<double> Evaluator::alone_group_ns(std::size_t j, const nccl::CommConfig& c) {
  bound_streams();
  const ClassBound& b = bounds_[j];
  std::vector<double> ns(b.modelled.size(), 0);
  if (!b.modelled.empty()) {
    with_class_config(j, c, [&](const traces::ExecutionGraph& graph) {
      for (std::size_t r = 0; r < b.modelled.size(); ++r) {
        ns[r] = cost_->standalone_time(w_, graph, b.modelled[r].op).count_ns_double();
      }
      return 0;
    });
  }
  return ns;
}

void Evaluator::add_stream_ns(std::size_t j, std::span<const double> group_ns,
                              std::vector<double>& streams) {
  bound_streams();
  const ClassBound& b = bounds_[j];
  for (std::size_t s = 0; s < bound_streams_; ++s) {
    streams[s] += b.measured_ns[s];
  }
  for (std::size_t r = 0; r < b.modelled.size(); ++r) {
    for (const auto& [s, calls] : b.modelled[r].counts) {
      streams[s] += (group_ns[r] - 1) * calls;
    }
  }
}

Time Evaluator::uncontended_step(std::span<const std::optional<nccl::CommConfig>> configs) {
  // Every run applies its whole configuration first (run_on), so nothing is restored after.
  Worker& own = *workers_.front();
  apply(own, configs);
  return own.sim->run(/*contention=*/false).step_time;
}

Evaluation Evaluator::measure(const sim::SimResult& r) const {
  // Summed in whole nanoseconds (integers, exact in a double below 2^53 ns, 104 days; never an
  // overflow) and converted once: a folded step's sums are then exactly the unfolded step's over
  // the ranks it stands for (alike ranks' equal terms), whatever the order.
  Evaluation e;
  e.step_time = r.step_time;
  const std::size_t n = classes_.size();
  std::vector<double> comm(n, 0), group_comm(n, 0), group_compute(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    const CollClass& c = classes_[j];
    for (std::size_t i = 0; i < c.examples.size(); ++i) {
      const traces::OpId op = c.examples[i];
      comm[j] += (r.ops[op].end - r.ops[op].start).count_ns_double() * c.weights[i];
    }
  }
  double compute = 0;
  for (traces::OpId op = 0; op < w_.op_count(); ++op) {
    if (w_.kind(op) == traces::OpKind::kCompute) {
      compute += (r.ops[op].end - r.ops[op].start).count_ns_double();
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
        group_comm[static_cast<std::size_t>(j)] += group.comm.count_ns_double();
        group_compute[static_cast<std::size_t>(j)] += group.compute.count_ns_double();
      }
    }
  }
  const auto us = [](double ns) { return ns / 1000.0; };
  e.compute_us = us(compute);
  // Per rank, so that a folded step (one data-parallel replica standing for all) measures what
  // the whole step does.
  const double ranks = static_cast<double>(w_.rank_count());
  e.comm_us.resize(n);
  e.group_comm_us.resize(n);
  e.group_compute_us.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    e.comm_us[j] = us(comm[j]);
    e.group_comm_us[j] = us(group_comm[j]) / ranks;
    e.group_compute_us[j] = us(group_compute[j]) / ranks;
  }
  return e;
}

}  // namespace lagom::search
