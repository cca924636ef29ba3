// Flows on links, HBM and SMs, shared by bounded max-min fairness (see resource_contention.hpp).
#include "lagom/sim/resource_contention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "lagom/common/error.hpp"

namespace lagom::sim {

namespace {

// Gives out `capacity` units among claims in order: equal shares, what a claim does not need goes
// to the others, the indivisible rest to the first claims.
void water_fill(int capacity, const std::vector<int>& need, std::vector<int>& got) {
  got.assign(need.size(), 0);
  int left = capacity;
  if (need.size() == 1) {
    got[0] = std::min(need[0], std::max(left, 0));
    return;
  }
  for (;;) {
    int open = 0;
    for (std::size_t k = 0; k < need.size(); ++k) {
      open += got[k] < need[k] ? 1 : 0;
    }
    if (open == 0 || left <= 0) {
      return;
    }
    const int share = left / open;
    for (std::size_t k = 0; k < need.size() && left > 0; ++k) {
      if (got[k] < need[k]) {
        const int give = std::min(std::max(share, 1), need[k] - got[k]);
        got[k] += give;
        left -= give;
      }
    }
  }
}

constexpr double kGB = 1e3;  // bytes per us in one GB/s
constexpr FlowSolver::FlowId kNoFlow = 0xffffffffu;
constexpr std::size_t kKeptWarnings = 5;

}  // namespace

ResourceContention::ResourceContention(const ModelCost& models) : models_(models) {}

std::size_t ResourceContention::CommKeyHash::operator()(const CommKey& k) const {
  std::size_t h = std::hash<std::int64_t>()(k.bytes);
  h = h * 31 + std::hash<std::int32_t>()(k.group);
  h = h * 31 + std::hash<std::int32_t>()(k.from);
  h = h * 31 + std::hash<std::int32_t>()(k.to);
  h = h * 31 + static_cast<std::size_t>(k.kind);
  return h * 31 + std::hash<const void*>()(k.pin);
}

void ResourceContention::bind(const traces::Workload& w, const traces::ExecutionGraph& g) {
  if (w_ != nullptr) {
    throw Error("ResourceContention::bind called twice; create one per simulation");
  }
  w_ = &w;
  g_ = &g;
  const topologies::Cluster& cluster = models_.cluster();
  const hardware::HardwareProfile& p = models_.profile();
  for (std::size_t id = 0; id < cluster.link_count(); ++id) {
    const topologies::Link l = cluster.link(id);
    const double cap = l.bandwidth_GBps * link_efficiency(p, l.link_class);
    if (!(cap > 0) || !std::isfinite(cap)) {
      throw Error(fmt::format("cluster '{}': link {} -> {} ({}) has no usable bandwidth ({} GB/s)",
                              cluster.name(), cluster.name_of(l.a), cluster.name_of(l.b),
                              to_string(l.link_class), l.bandwidth_GBps));
    }
    solver_.add_resource(cap);  // 2 * id: a -> b
    solver_.add_resource(cap);  // 2 * id + 1: b -> a
  }
  hbm_base_ = static_cast<FlowSolver::ResourceId>(solver_.resource_count());
  const double hbm = p.gpu.hbm_GBps.value * p.contention.hbm_efficiency.value;
  for (traces::Rank r = 0; r < w.rank_count(); ++r) {
    solver_.add_resource(hbm);
  }
  gpus_.assign(w.rank_count(), Gpu{});
  by_op_.assign(w.op_count(), nullptr);
}

ResourceContention::CommInfo& ResourceContention::comm_info(traces::OpId op) {
  if (CommInfo* known = by_op_[op]) {
    return *known;
  }
  const traces::Workload& w = *w_;
  const traces::OpKind kind = w.kind(op);
  const bool p2p = traces::is_p2p(kind);
  const auto self = static_cast<std::int32_t>(w.rank_of(op));
  const std::int32_t from = !p2p ? -1 : kind == traces::OpKind::kSend ? self : w.peer(op);
  const std::int32_t to = !p2p ? -1 : kind == traces::OpKind::kSend ? w.peer(op) : self;
  const CommKey key{w.group(op),        from, to, p2p ? traces::OpKind::kSend : kind, w.bytes(op),
                    w.pinned_config(op)};
  // Members of one instance come one after another with the same key.
  if (last_info_ != nullptr && key == last_key_) {
    by_op_[op] = last_info_;
    return *last_info_;
  }
  if (auto it = comm_.find(key); it != comm_.end()) {
    by_op_[op] = &it->second;
    last_key_ = key;
    last_info_ = &it->second;
    return it->second;
  }
  const nccl::CommConfig cfg = models_.config_for(op);
  const CollectiveEstimate e = models_.estimate(op, cfg);
  const CollectiveModel& model = models_.collective_model(op);
  const nccl::CollKind ck = *traces::coll_kind_of(kind);
  CommInfo c;
  c.time_us = e.time_us;
  // Its bytes move during the part of its time that bandwidth buys (transfer and pipeline
  // fill); the engine runs the fixed part (launch, hop latencies, chunk-step overheads) first,
  // uncontended (fixed_part), so the draws are over the moving part alone.
  const double fixed_us = e.launch_us + e.hop_us + e.sync_us;
  const double moving_us = e.time_us - fixed_us;
  c.fixed_share = e.time_us > 0 ? std::clamp(fixed_us / e.time_us, 0.0, 1.0) : 0.0;
  c.nchannels = cfg.nchannels;
  c.nthreads = cfg.nthreads;
  // NCCL keeps up to 4 chunks per channel in flight, but never more than the collective's size.
  c.in_flight_bytes = std::min(4.0 * cfg.nchannels * static_cast<double>(cfg.chunk_bytes),
                               static_cast<double>(w.bytes(op)));
  const double S = static_cast<double>(w.bytes(op));
  if (moving_us > 0 && S > 0) {
    std::map<FlowSolver::ResourceId, double> demand;
    std::map<FlowSolver::ResourceId, double>* into = &demand;  // where add_footprint adds
    const double per_us = 1.0 / (moving_us * kGB);  // bytes while they move alone -> GB/s
    const auto add_footprint = [&](const topologies::Footprint& f, double bytes, double scale) {
      for (const topologies::LinkLoad& l : f.loads) {
        (*into)[static_cast<FlowSolver::ResourceId>(2 * l.link + l.dir)] +=
            bytes * l.per_byte * scale * per_us;
      }
    };
    const topologies::CommunicatorInfo& info = models_.communicator_info(op);
    const auto gpu_of = [&](std::int32_t rank) {
      return static_cast<int>(w.gpu_of(static_cast<traces::Rank>(rank)));
    };
    const traces::Group* group = w.group(op) == traces::kNoGroup
                                     ? nullptr
                                     : &w.groups()[static_cast<std::size_t>(w.group(op))];
    const auto add_traffic = [&](const CollectiveModel& m, const topologies::CommunicatorInfo& i,
                                 int from_gpu, int to_gpu) {
      if (ck == nccl::CollKind::kSendRecv) {
        add_footprint(i.traffic->pair(from_gpu, to_gpu), S, 1.0 / wire_efficiency(cfg.proto));
      } else {
        for (const CollectiveModel::Share& s : m.traffic(ck, w.bytes(op), cfg)) {
          add_footprint(*s.footprint, s.bytes, s.link_scale);
        }
      }
    };
    add_traffic(model, info, p2p ? gpu_of(from) : -1, p2p ? gpu_of(to) : -1);
    // A folded communicator's other instances (Group::mirrors) move the same bytes at the same
    // times, at the same rate when they are alike: their bytes join this flow's on every link
    // they cross (max-min fairness on rates treats n alike flows through a link as one of n
    // times the demand). All their links, not only this instance's: another simulated flow (a
    // data-parallel ring over the same GPUs) may meet them where this instance does not go.
    // Their HBM stays theirs (their GPUs' kernels are not simulated; alike, they match this one's).
    std::map<FlowSolver::ResourceId, double> own;
    std::map<FlowSolver::ResourceId, int> crossings;  // instances crossing each link
    if (const std::vector<ModelCost::Mirror> mirrors = models_.mirrors(op); !mirrors.empty()) {
      own = demand;
      for (const auto& [r, d] : own) {
        crossings[r] = 1;
      }
      const std::span<const std::uint32_t> gpus = group->cluster_gpus();
      const auto index = [&](std::int32_t rank) {
        return std::find(gpus.begin(), gpus.end(), static_cast<std::uint32_t>(gpu_of(rank))) -
               gpus.begin();
      };
      std::map<FlowSolver::ResourceId, double> one;
      into = &one;
      for (const ModelCost::Mirror& mirror : mirrors) {
        one.clear();
        add_traffic(*mirror.model, *mirror.info,
                    p2p ? static_cast<int>(mirror.gpus[index(from)]) : -1,
                    p2p ? static_cast<int>(mirror.gpus[index(to)]) : -1);
        for (const auto& [r, d] : one) {
          demand[r] += d;
          ++crossings[r];
        }
      }
      into = &demand;
    }
    // HBM of the simulated members (a folded group's other GPUs run nothing else here).
    const double hbm = e.gpu_bytes * model.hbm_per_payload_byte(ck, cfg, w.bytes(op)) * per_us;
    if (hbm > 0) {
      const auto add_hbm = [&](std::uint32_t rank) {
        demand[hbm_of(rank)] += hbm;
        if (!own.empty()) {
          own[hbm_of(rank)] += hbm;
        }
      };
      if (p2p) {
        add_hbm(static_cast<std::uint32_t>(from));
        add_hbm(static_cast<std::uint32_t>(to));
      } else {
        for (std::uint32_t rank : group->ranks) {
          add_hbm(rank);
        }
      }
    }
    for (const auto& [r, d] : demand) {
      c.uses.push_back(FlowSolver::Use{r, d});
      if (!own.empty()) {
        const auto it = own.find(r);
        c.own.push_back(FlowSolver::Use{r, it == own.end() ? 0.0 : it->second});
        const auto n = crossings.find(r);
        c.crossings.push_back(n == crossings.end() ? 1 : n->second);
      }
    }
  }
  // How far one instance could be sped up alone (its mirrors' draws are theirs to fit).
  c.margin = std::numeric_limits<double>::infinity();
  for (const FlowSolver::Use& u : c.own.empty() ? c.uses : c.own) {
    if (u.demand > 0) {
      c.margin = std::min(c.margin, solver_.capacity(u.resource) / u.demand);
    }
  }
  CommInfo* stored = &comm_.emplace(key, std::move(c)).first->second;
  by_op_[op] = stored;
  last_key_ = key;
  last_info_ = stored;
  return *stored;
}

void ResourceContention::warn(std::string message) {
  if (warnings_.size() < kKeptWarnings) {
    warnings_.push_back(std::move(message));
  }
  ++warning_count_;
}

void ResourceContention::fit_alone(std::vector<FlowSolver::Use>& uses, double bound,
                                   traces::OpId op, bool measured) {
  // A measured op faster than the hardware is the input's fault: say so, once per op (and write
  // out only the first few: formatting is not free). A model-timed one over a capacity is the
  // model's own rounding (integer nanoseconds, L2 inflation): capped silently.
  bool warned = !measured;
  for (FlowSolver::Use& u : uses) {
    const double cap = solver_.capacity(u.resource);
    if (u.demand * bound > cap * (1 + 1e-9)) {
      if (!warned) {
        warned = true;
        ++warning_count_;
        if (warnings_.size() < kKeptWarnings) {
          warnings_.push_back(fmt::format(
              "{}: its duration_us means {:.4g} GB/s through {}, which carries {:.4g} GB/s: "
              "capped there (and wherever else it exceeds a capacity), so it runs at its stated "
              "speed; the workload's bytes or duration, or the cluster, is off",
              w_->describe(op), u.demand * bound, resource_name(u.resource), cap));
        }
      }
      u.demand = cap / bound;
    }
  }
}

void ResourceContention::mark(traces::Rank rank) {
  Gpu& gpu = gpus_[rank];
  if (!gpu.dirty) {
    gpu.dirty = true;
    dirty_.push_back(rank);
  }
}

void ResourceContention::add_comm(traces::Rank rank, traces::OpId op) {
  Gpu& gpu = gpus_[rank];
  const CommInfo& c = comm_info(op);
  gpu.comms.push_back(op);
  gpu.ctas += c.nchannels;
  gpu.comm_threads = std::max(gpu.comm_threads, c.nthreads);
  if (gpu.ctas > models_.compute().sms() && !gpu.warned_ctas) {
    gpu.warned_ctas = true;
    warn(fmt::format(
        "rank {}: {} NCCL CTAs at once ({} communication ops) on {} SMs: more than "
        "the GPU holds; real NCCL kernels would wait for SMs (modelled as sharing them)",
        rank, gpu.ctas, gpu.comms.size(), models_.compute().sms()));
  }
  mark(rank);
}

void ResourceContention::remove_comm(traces::Rank rank, traces::OpId op) {
  Gpu& gpu = gpus_[rank];
  gpu.comms.erase(std::find(gpu.comms.begin(), gpu.comms.end(), op));
  gpu.ctas = 0;
  gpu.comm_threads = 0;
  for (traces::OpId other : gpu.comms) {
    gpu.ctas += by_op_[other]->nchannels;
    gpu.comm_threads = std::max(gpu.comm_threads, by_op_[other]->nthreads);
  }
  mark(rank);
}

void ResourceContention::waiting(traces::OpId op) {
  add_comm(w_->rank_of(op), op);
}

traces::OpId ResourceContention::key_op(std::uint32_t instance) const {
  // Point-to-point instances are keyed by their sender.
  const auto members = g_->members(instance);
  traces::OpId key = members.front();
  for (traces::OpId m : members) {
    key = w_->kind(m) == traces::OpKind::kSend ? m : key;
  }
  return key;
}

Time ResourceContention::fixed_part(std::uint32_t instance, Time alone) {
  // A measured instance is taken to split as the model's estimate does.
  const double share = comm_info(key_op(instance)).fixed_share;
  return Time::ns(std::llround(share * static_cast<double>(alone.count_ns())));
}

void ResourceContention::started(const Activity& a) {
  if (a.slot >= running_.size()) {
    running_.resize(a.slot + 1);
  }
  Running& run = running_[a.slot];
  run.kernel = false;
  run.alive = false;
  run.flow = kNoFlow;
  run.scale = 1;
  run.pool = nullptr;
  run.grant = SmGrant{};
  run.bound = 1;
  run.hbm_demand = 0;
  run.beside_threads = -1;
  const traces::Workload& w = *w_;
  if (a.instance) {
    const auto members = g_->members(a.subject);
    const traces::OpId key_op = this->key_op(a.subject);
    CommInfo& c = comm_info(key_op);
    run.op = key_op;
    // An instance given its duration (a measured trace) moves its bytes in that time, not in
    // the model's: its draws scale by model time / its time.
    // The member whose duration it is (named in a warning; the key op among equals).
    const std::optional<traces::OpId> measured = traces::measured_member(w, *g_, a.subject);
    const traces::OpId given_by = measured.value_or(key_op);
    const std::int64_t given_ns = measured ? w.duration_ns(*measured) : traces::kNoDuration;
    const double scale = given_ns == traces::kNoDuration || given_ns <= 0 || c.time_us <= 0
                             ? 1.0
                             : c.time_us / (static_cast<double>(given_ns) / 1e3);
    // A measured instance whose bytes fit the hardware alone shares the model's flow, in model
    // units: bound and weight `scale`, so that at full speed it moves its bytes in its own time
    // and max-min fairness treats its speed like anyone's. One that does not fit crosses the
    // same resources with its demands capped (fit_alone warns). Either reuses a parked flow of
    // this communication when there is one (same resources, so renewed in place).
    const bool fits = scale <= c.margin;
    std::span<const FlowSolver::Use> uses = c.uses;
    if (!fits) {
      // Capped as each instance would be alone: a folded flow's draw on a link is that of the
      // alike instances crossing it, each capped to the link (fit_alone warns for the op).
      scratch_.assign(c.uses.begin(), c.uses.end());
      for (std::size_t i = 0; i < scratch_.size(); ++i) {
        scratch_[i].demand *= scale / (c.crossings.empty() ? 1 : c.crossings[i]);
      }
      fit_alone(scratch_, 1.0, given_by, given_ns != traces::kNoDuration);
      for (std::size_t i = 0; i < c.crossings.size(); ++i) {
        scratch_[i].demand *= c.crossings[i];
      }
      uses = scratch_;
    }
    run.scale = fits ? scale : 1.0;
    if (!c.parked.empty()) {
      run.flow = c.parked.back();
      c.parked.pop_back();
      flow_parked_[run.flow] = 0;
      if (fits && flow_capped_[run.flow] == 0) {
        solver_.renew(run.flow, scale, scale);
      } else {
        solver_.renew(run.flow, uses, run.scale, run.scale);
      }
    } else {
      run.flow = solver_.add_flow(uses, run.scale, run.scale);
    }
    run.pool = &c.parked;
    bind_flow(a.slot);
    flow_capped_[run.flow] = fits ? 0 : 1;
    for (traces::OpId m : members) {
      Gpu& gpu = gpus_[w.rank_of(m)];
      if (std::find(gpu.comms.begin(), gpu.comms.end(), m) == gpu.comms.end()) {
        add_comm(w.rank_of(m), m);  // the member whose launch started it never waited
      }
      gpu.in_flight_bytes += c.in_flight_bytes;
      mark(w.rank_of(m));
    }
  } else if (w.kind(a.subject) == traces::OpKind::kCompute) {
    run.op = a.subject;
    run.kernel = true;
    run.bound = 0;  // set by regrant() before the solve, which also adds its flow
    run.unrated = true;
    run.alive = true;
    const ComputeModel& cm = models_.compute();
    const traces::ComputeShape* shape = w.compute_shape(a.subject);
    run.shape = shape ? *shape : traces::ComputeShape{};
    run.tb = cm.blocks_per_sm(run.shape);
    run.blocks = run.shape.blocks > 0
                     ? cm.blocks_of(run.shape, static_cast<double>(w.bytes(a.subject)))
                     : static_cast<double>(cm.sms()) * run.tb;
    run.need = static_cast<int>(std::min<double>(cm.sms(), std::ceil(run.blocks / run.tb)));
    run.bytes = static_cast<double>(w.bytes(a.subject));
    run.duration_only = shape == nullptr && run.bytes == 0;
    if (!run.duration_only) {
      run.alone_model_us = models_.compute_alone_us(a.subject);
      run.alone_us = models_.alone_us(a.subject);
    }
    run.flow = kNoFlow;
    gpus_[w.rank_of(a.subject)].kernels.push_back(a.slot);
    gpus_[w.rank_of(a.subject)].kernels_changed = true;
    mark(w.rank_of(a.subject));
  } else {
    // Memcpy: copy engines read and write every byte through HBM.
    run.op = a.subject;
    const double t = models_.alone_us(a.subject);
    const double bytes = 2.0 * static_cast<double>(w.bytes(a.subject));
    scratch_.clear();
    if (t > 0 && bytes > 0) {
      scratch_.push_back({hbm_of(w.rank_of(a.subject)), bytes / (t * kGB)});
    }
    fit_alone(scratch_, 1.0, a.subject, w.duration_ns(a.subject) != traces::kNoDuration);
    run.flow = solver_.add_flow(scratch_, 1.0);
  }
  if (run.flow != kNoFlow) {
    bind_flow(a.slot);
  }
}

void ResourceContention::bind_flow(std::uint32_t slot) {
  const FlowSolver::FlowId f = running_[slot].flow;
  if (f >= slot_of_flow_.size()) {
    slot_of_flow_.resize(f + 1);
    flow_parked_.resize(f + 1, 0);
    flow_capped_.resize(f + 1, 0);
  }
  slot_of_flow_[f] = slot;
}

void ResourceContention::finished(const Activity& a) {
  Running& run = running_[a.slot];
  run.alive = false;
  const traces::Workload& w = *w_;
  if (a.instance) {
    const CommInfo& c = comm_info(run.op);
    if (run.pool != nullptr) {
      solver_.set_bound(run.flow, 0.0);
      run.pool->push_back(run.flow);
      flow_parked_[run.flow] = 1;
    } else {
      solver_.remove_flow(run.flow);
    }
    for (traces::OpId m : g_->members(a.subject)) {
      remove_comm(w.rank_of(m), m);
      Gpu& gpu = gpus_[w.rank_of(m)];
      gpu.in_flight_bytes = gpu.comms.empty() ? 0.0 : gpu.in_flight_bytes - c.in_flight_bytes;
    }
  } else if (run.flow != kNoFlow) {
    solver_.remove_flow(run.flow);
  }
  if (run.kernel) {
    Gpu& gpu = gpus_[w.rank_of(run.op)];
    gpu.kernels.erase(std::find(gpu.kernels.begin(), gpu.kernels.end(), a.slot));
    gpu.kernels_changed = true;
    mark(w.rank_of(run.op));
  }
}

int ResourceContention::beside_of(Running& run, int comm_threads) const {
  if (run.beside_threads != comm_threads) {
    run.beside_threads = comm_threads;
    run.beside = models_.compute().blocks_beside_comm(run.shape, comm_threads);
  }
  return run.beside;
}

void ResourceContention::regrant(traces::Rank rank) {
  Gpu& gpu = gpus_[rank];
  gpu.dirty = false;
  if (gpu.kernels.empty()) {
    return;
  }
  const ComputeModel& cm = models_.compute();
  const hardware::HardwareProfile& p = models_.profile();
  const int sms = cm.sms();
  const int ctas = gpu.ctas;
  const int comm_threads = gpu.comm_threads;
  // Grants depend on the kernels, the CTAs beside them and (for kernels that move bytes) the L2
  // pollution of the running collectives' chunks.
  bool moves_bytes = false;
  for (std::uint32_t slot : gpu.kernels) {
    moves_bytes = moves_bytes || !running_[slot].duration_only;
  }
  if (!gpu.kernels_changed && ctas == gpu.granted_ctas && comm_threads == gpu.granted_threads &&
      (!moves_bytes || gpu.in_flight_bytes == gpu.granted_in_flight)) {
    return;
  }
  gpu.kernels_changed = false;
  gpu.granted_ctas = ctas;
  gpu.granted_threads = comm_threads;
  gpu.granted_in_flight = gpu.in_flight_bytes;
  const int shared = std::min(ctas, sms);
  const int free = sms - shared;
  // Kernels in op order, so that the split does not depend on launch bookkeeping.
  const std::size_t n = gpu.kernels.size();
  if (n > 1) {
    std::sort(gpu.kernels.begin(), gpu.kernels.end(),
              [&](std::uint32_t a, std::uint32_t b) { return running_[a].op < running_[b].op; });
  }
  Scratch& k_ = grant_scratch_;
  k_.full.resize(n);
  k_.beside.assign(n, 0);
  k_.on_shared.assign(n, 0);
  if (n == 1) {
    Running& run = running_[gpu.kernels[0]];
    k_.full[0] = std::min(run.need, free);
    if (ctas > 0) {
      k_.beside[0] = beside_of(run, comm_threads);
      const double rest = run.blocks - static_cast<double>(k_.full[0]) * run.tb;
      if (k_.beside[0] > 0 && rest > 0) {
        k_.on_shared[0] =
            static_cast<int>(std::min<double>(shared, std::ceil(rest / k_.beside[0])));
      }
    }
  } else {
    k_.need.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      k_.need[k] = running_[gpu.kernels[k]].need;
    }
    water_fill(free, k_.need, k_.full);
    k_.need_shared.assign(n, 0);
    for (std::size_t k = 0; k < n && ctas > 0; ++k) {
      Running& run = running_[gpu.kernels[k]];
      k_.beside[k] = beside_of(run, comm_threads);
      const double rest = run.blocks - static_cast<double>(k_.full[k]) * run.tb;
      if (k_.beside[k] > 0 && rest > 0) {
        k_.need_shared[k] =
            static_cast<int>(std::min<double>(shared, std::ceil(rest / k_.beside[k])));
      }
    }
    water_fill(shared, k_.need_shared, k_.on_shared);
  }
  const double l2_bytes = p.gpu.l2_MiB.value * 1024.0 * 1024.0;
  const double inflation =
      1.0 + p.contention.l2_pollution.value *
                (l2_bytes > 0 ? std::min(1.0, gpu.in_flight_bytes / l2_bytes) : 0.0);
  for (std::size_t k = 0; k < n; ++k) {
    Running& run = running_[gpu.kernels[k]];
    SmGrant grant{k_.full[k], k_.on_shared[k], k_.on_shared[k] > 0 ? k_.beside[k] : 0};
    if (grant.full * run.tb + grant.shared * grant.blocks_per_shared < 1) {
      grant = SmGrant{0, 1, 1};  // one block squeezes in: the step never stalls on SMs
    }
    double bound = 1;
    double demand = 0;
    if (run.duration_only) {
      // Known only by its duration: it slows with the block slots it loses.
      const double slots = grant.full * run.tb + grant.shared * grant.blocks_per_shared;
      bound = slots / (static_cast<double>(sms) * run.tb);
    } else {
      const bool whole = grant.full == sms && inflation == 1.0;
      const double now =
          whole ? run.alone_model_us
                : cm.estimate(run.shape, run.bytes, grant, cm.hbm_GBps(), inflation).time_us;
      bound = now > 0 ? run.alone_model_us / now : 1.0;
      demand = run.alone_us > 0 ? run.bytes * inflation / (run.alone_us * kGB) : 0.0;
    }
    bound = std::clamp(bound, 1e-9, 1.0);
    run.grant = grant;
    if (run.duration_only) {
      // Nothing it draws is shared (no bytes): its rate is its bound, no solver needed.
      if (bound != run.bound || run.unrated) {
        run.bound = bound;
        run.unrated = false;
        direct_.push_back(gpu.kernels[k]);
      }
    } else if (demand != run.hbm_demand || run.flow == kNoFlow) {
      run.bound = bound;
      run.hbm_demand = demand;
      scratch_.clear();
      if (demand > 0) {
        scratch_.push_back({hbm_of(rank), demand});
      }
      fit_alone(scratch_, bound, run.op, w_->duration_ns(run.op) != traces::kNoDuration);
      if (run.flow == kNoFlow) {
        run.flow = solver_.add_flow(scratch_, bound);
        bind_flow(gpu.kernels[k]);
      } else {
        solver_.update_flow(run.flow, scratch_, bound);
      }
    } else if (bound != run.bound) {
      run.bound = bound;
      solver_.set_bound(run.flow, bound);
    }
  }
}

void ResourceContention::rates(std::vector<RateChange>& out) {
  for (traces::Rank r : dirty_) {
    regrant(r);
  }
  dirty_.clear();
  changed_.clear();
  solver_.solve(changed_);
  for (FlowSolver::FlowId f : changed_) {
    if (!flow_parked_[f]) {
      const std::uint32_t slot = slot_of_flow_[f];
      out.push_back(RateChange{slot, std::min(1.0, solver_.rate(f) / running_[slot].scale)});
    }
  }
  for (std::uint32_t slot : direct_) {
    const Running& run = running_[slot];
    if (run.kernel && run.alive) {
      out.push_back(RateChange{slot, run.bound});
    }
  }
  direct_.clear();
}

int ResourceContention::held_ctas(traces::Rank rank) const {
  int ctas = 0;
  for (traces::OpId op : gpus_.at(rank).comms) {
    ctas += by_op_[op] != nullptr ? by_op_[op]->nchannels : 0;
  }
  return ctas;
}

SmGrant ResourceContention::grant_of(traces::OpId op) const {
  for (std::uint32_t slot : gpus_.at(w_->rank_of(op)).kernels) {
    if (running_[slot].op == op) {
      return running_[slot].grant;
    }
  }
  throw Error(fmt::format("{} is not running", w_->describe(op)));
}

std::string ResourceContention::resource_name(FlowSolver::ResourceId r) const {
  if (r >= hbm_base_) {
    return fmt::format("rank {} HBM", r - hbm_base_);
  }
  const topologies::Cluster& c = models_.cluster();
  const topologies::Link l = c.link(r / 2);
  const bool forward = r % 2 == 0;
  return fmt::format("{} -> {} ({})", c.name_of(forward ? l.a : l.b),
                     c.name_of(forward ? l.b : l.a), to_string(l.link_class));
}

std::string ResourceContention::check_invariants() const {
  for (FlowSolver::ResourceId r = 0; r < solver_.resource_count(); ++r) {
    const double used = solver_.usage(r);
    if (used > solver_.capacity(r) * (1 + 1e-6)) {
      return fmt::format("{} carries {:.6g} GB/s, above its capacity {:.6g} GB/s", resource_name(r),
                         used, solver_.capacity(r));
    }
  }
  for (std::size_t slot = 0; slot < running_.size(); ++slot) {
    const Running& run = running_[slot];
    if (run.flow == kNoFlow || !solver_.alive(run.flow) || slot_of_flow_[run.flow] != slot ||
        flow_parked_[run.flow]) {
      continue;
    }
    const double rate = solver_.rate(run.flow) / run.scale;
    const double bound = solver_.bound(run.flow) / run.scale;
    if (rate > bound * (1 + 1e-9) || bound > 1.0 + 1e-12) {
      return fmt::format("{} runs at {} of its speed alone, above its bound {}",
                         w_->describe(run.op), rate, bound);
    }
  }
  const int sms = models_.compute().sms();
  for (traces::Rank r = 0; r < gpus_.size(); ++r) {
    const int shared = std::min(held_ctas(r), sms);
    int full = 0;
    int on_shared = 0;
    for (std::uint32_t slot : gpus_[r].kernels) {
      full += running_[slot].grant.full;
      on_shared += running_[slot].grant.shared;
    }
    if (full > sms - shared || (shared > 0 && on_shared > shared)) {
      return fmt::format(
          "rank {}: kernels hold {} free and {} shared SMs of {} ({} hold NCCL CTAs)", r, full,
          on_shared, sms, shared);
    }
  }
  return "";
}

}  // namespace lagom::sim
