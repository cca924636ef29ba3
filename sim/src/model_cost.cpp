// Lagom's models as the engine's CostModel (see model_cost.hpp).
#include "lagom/sim/model_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lagom/common/error.hpp"
#include "lagom/nccl/config_override.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"

namespace lagom::sim {

struct ModelCost::Communicator {
  topologies::CommunicatorInfo info;
  nccl::CommInfo nccl;
  nccl::Tables tables;
  std::unique_ptr<CollectiveModel> model;
  // A folded group's other instances that share a node with it (Group::mirrors): routed, for
  // their traffic; NCCL's tables are the group's own.
  struct Instance {
    topologies::CommunicatorInfo info;
    std::unique_ptr<CollectiveModel> model;
    std::vector<std::uint32_t> gpus;
  };
  std::vector<Instance> mirrors;
};

namespace {

nccl::CollKind coll_of(const traces::Workload& w, traces::OpId op) {
  auto k = traces::coll_kind_of(w.kind(op));
  if (!k) {
    throw Error(fmt::format("{} is not a communication op", w.describe(op)));
  }
  return *k;
}

}  // namespace

ModelCost::ModelCost(const topologies::Cluster& cluster, const hardware::HardwareProfile& profile,
                     const traces::Workload& w)
    : w_(w), cluster_(cluster), profile_(profile), compute_(profile) {
  const std::string env = topologies::describe_nccl_env(cluster.spec());
  name_ =
      fmt::format("lagom collective model (profile {}, cluster {} x{} nodes{}{})", profile.origin,
                  cluster.name(), cluster.nodes(), env.empty() ? "" : ", ", env);
  std::uint32_t top_gpu = 0;
  for (traces::Rank r = 0; r < w.rank_count(); ++r) {
    top_gpu = std::max(top_gpu, w.gpu_of(r));
  }
  if (w.rank_count() > static_cast<std::uint32_t>(cluster.gpu_count()) ||
      top_gpu >= static_cast<std::uint32_t>(cluster.gpu_count())) {
    throw Error(fmt::format(
        "the workload has {} ranks{} but cluster '{}' has {} GPUs ({} node(s) x "
        "{}); pass --nodes to make it larger",
        w.rank_count(), top_gpu >= w.rank_count() ? fmt::format(" on GPUs up to {}", top_gpu) : "",
        cluster.name(), cluster.gpu_count(), cluster.nodes(), cluster.gpus_per_node()));
  }
  if (!(profile.gpu.fp8_TFLOPS.value > 0)) {
    // Refused up front, naming the op, rather than mid-simulation; an op with a duration too
    // (contention still times its shape, and no GPU without FP8 measured an FP8 kernel).
    for (traces::OpId op = 0; op < w.op_count(); ++op) {
      const traces::ComputeShape* sh = w.compute_shape(op);
      if (sh != nullptr && sh->precision == traces::Precision::kFp8) {
        try {
          (void)compute_.peak_TFLOPS_of(*sh);
        } catch (const Error& e) {
          throw Error(fmt::format("{}: {}", w.describe(op), e.what()));
        }
      }
    }
  }
  auto make = [&](std::vector<int> ranks) {
    auto c = std::make_shared<Communicator>();
    c->info = topologies::describe_communicator(cluster, ranks);
    c->nccl = nccl_comm_info(cluster, c->info);
    c->tables = nccl::tune_model(c->nccl);
    c->model = std::make_unique<CollectiveModel>(profile_, c->info);
    return c;
  };
  for (const traces::Group& g : w.groups()) {
    // `how`: "spans" (its own GPUs) or "stands for an instance on" (a mirror's).
    const auto check = [&](std::uint32_t gpu, std::string_view how) {
      if (gpu >= static_cast<std::uint32_t>(cluster.gpu_count())) {
        throw Error(fmt::format(
            "group '{}' {} GPU {} but cluster '{}' has {} GPUs; pass --nodes to make it larger",
            g.name, how, gpu, cluster.name(), cluster.gpu_count()));
      }
    };
    const auto gpus = g.cluster_gpus();
    for (std::uint32_t gpu : gpus) {
      check(gpu, "spans");
    }
    auto c = make(std::vector<int>(gpus.begin(), gpus.end()));
    // Mirrors on nodes this instance does not use share no NVLink, PCIe or NIC with it, and
    // folding runs only on fabrics that are not oversubscribed: they are left out.
    for (const std::vector<std::uint32_t>& m : g.mirrors) {
      for (std::uint32_t gpu : m) {
        check(gpu, "stands for an instance on");
      }
      if (topologies::share_a_node(cluster, gpus, m)) {
        Communicator::Instance i;
        i.info = topologies::describe_communicator(cluster, std::vector<int>(m.begin(), m.end()));
        i.model = std::make_unique<CollectiveModel>(profile_, i.info);
        i.gpus = m;
        c->mirrors.push_back(std::move(i));
      }
    }
    groups_.push_back(std::move(c));
  }
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    if (traces::is_p2p(w.kind(op)) && w.group(op) == traces::kNoGroup) {
      const int a = static_cast<int>(w.gpu_of(w.rank_of(op)));
      const int b = static_cast<int>(w.gpu_of(static_cast<traces::Rank>(w.peer(op))));
      const std::pair<int, int> key{std::min(a, b), std::max(a, b)};
      if (!pairs_.count(key)) {
        pairs_.emplace(key, make(std::vector<int>{key.first, key.second}));
      }
    }
  }
  // Check pinned configs now, so a bad one stops the run before it starts.
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    if (w.pinned_config(op) != nullptr) {
      config_for(op);
    }
  }
}

ModelCost::~ModelCost() = default;

std::unique_ptr<ModelCost> ModelCost::sibling() const {
  std::unique_ptr<ModelCost> c(new ModelCost(*this));
  c->source_ = nullptr;
  c->timed_.clear();
  c->next_evicted_ = 0;
  return c;
}

void ModelCost::memoize_alone() {
  if (alone_memo_) {
    return;
  }
  auto memo = std::make_shared<std::vector<double>>(w_.op_count(),
                                                    std::numeric_limits<double>::quiet_NaN());
  for (traces::OpId op = 0; op < w_.op_count(); ++op) {
    if (w_.kind(op) == traces::OpKind::kCompute &&
        (w_.compute_shape(op) != nullptr || w_.bytes(op) != 0)) {
      (*memo)[op] = compute_alone_us(op);
    }
  }
  alone_memo_ = std::move(memo);
}

double ModelCost::compute_alone_us(traces::OpId op) const {
  if (alone_memo_) {
    const double t = (*alone_memo_)[op];
    if (!std::isnan(t)) {
      return t;
    }
  }
  const traces::ComputeShape* shape = w_.compute_shape(op);
  if (shape == nullptr && w_.bytes(op) == 0) {
    throw Error(
        fmt::format("{} has no 'duration_us' and nothing to model it from: give "
                    "'duration_us', or its work ('flops', 'bytes', and where known "
                    "'blocks', 'blocks_per_sm', 'class')",
                    w_.describe(op)));
  }
  return compute_.alone(shape ? *shape : traces::ComputeShape{}, static_cast<double>(w_.bytes(op)))
      .time_us;
}

const ModelCost::Communicator& ModelCost::communicator_of(traces::OpId op) const {
  if (w_.group(op) != traces::kNoGroup) {
    return *groups_[static_cast<std::size_t>(w_.group(op))];
  }
  const int a = static_cast<int>(w_.gpu_of(w_.rank_of(op)));
  const int b = static_cast<int>(w_.gpu_of(static_cast<traces::Rank>(w_.peer(op))));
  return *pairs_.at({std::min(a, b), std::max(a, b)});
}

const nccl::ConfigOverride* ModelCost::asked_for(traces::OpId op, bool* from_plan) const {
  if (source_ != nullptr) {
    if (const nccl::ConfigOverride* o = source_->override_for(op)) {
      if (from_plan != nullptr) {
        *from_plan = true;
      }
      return o;
    }
  }
  if (from_plan != nullptr) {
    *from_plan = false;
  }
  return w_.pinned_config(op);
}

nccl::CommConfig ModelCost::config_for(traces::OpId op) const {
  const nccl::CollKind kind = coll_of(w_, op);
  const Communicator& c = communicator_of(op);
  bool from_plan = false;
  const nccl::ConfigOverride* asked = asked_for(op, &from_plan);
  try {
    return nccl::resolve_config(c.tables, kind, w_.bytes(op),
                                asked != nullptr ? *asked : nccl::ConfigOverride{});
  } catch (const Error& e) {
    const char* what = from_plan          ? "plan"
                       : asked != nullptr ? "pinned config"
                                          : "NCCL's own choice";
    throw Error(fmt::format("{}: {}: {}", w_.describe(op), what, e.what()));
  }
}

const nccl::Tables& ModelCost::nccl_tables(traces::OpId op) const {
  return communicator_of(op).tables;
}

const topologies::CommunicatorInfo& ModelCost::communicator_info(traces::OpId op) const {
  return communicator_of(op).info;
}

const CollectiveModel& ModelCost::collective_model(traces::OpId op) const {
  return *communicator_of(op).model;
}

std::vector<ModelCost::Mirror> ModelCost::mirrors(traces::OpId op) const {
  std::vector<Mirror> out;
  for (const Communicator::Instance& i : communicator_of(op).mirrors) {
    out.push_back(Mirror{i.model.get(), &i.info, i.gpus});
  }
  return out;
}

CollectiveEstimate ModelCost::estimate(traces::OpId op) const {
  return estimate(op, config_for(op));
}

CollectiveEstimate ModelCost::estimate(traces::OpId op, const nccl::CommConfig& config) const {
  const Communicator& c = communicator_of(op);
  if (traces::is_p2p(w_.kind(op))) {
    // On the sender's own path to the receiver.
    const auto self = w_.rank_of(op);
    const auto peer = static_cast<traces::Rank>(w_.peer(op));
    const bool sends = w_.kind(op) == traces::OpKind::kSend;
    return c.model->estimate_p2p(w_.bytes(op), config,
                                 static_cast<int>(w_.gpu_of(sends ? self : peer)),
                                 static_cast<int>(w_.gpu_of(sends ? peer : self)));
  }
  return c.model->estimate(coll_of(w_, op), w_.bytes(op), config);
}

double ModelCost::alone_us(traces::OpId op) const {
  if (w_.duration_ns(op) != traces::kNoDuration) {
    return static_cast<double>(w_.duration_ns(op)) / 1e3 * slowdown(op);
  }
  return model_time(op).us();
}

Time ModelCost::standalone_time(const traces::Workload&, const traces::ExecutionGraph&,
                                traces::OpId op) const {
  if (w_.duration_ns(op) != traces::kNoDuration) {  // a compute op on a slow GPU (engine.cpp)
    const double f = slowdown(op);
    return f == 1.0 ? Time::ns(w_.duration_ns(op))
                    : Time::from_us(static_cast<double>(w_.duration_ns(op)) / 1e3 * f);
  }
  return model_time(op);
}

double ModelCost::slowdown(traces::OpId op) const {
  return w_.kind(op) == traces::OpKind::kCompute
             ? cluster_.compute_slowdown(static_cast<int>(w_.gpu_of(w_.rank_of(op))))
             : 1.0;
}

Time ModelCost::model_time(traces::OpId op) const {
  switch (w_.kind(op)) {
    case traces::OpKind::kCompute:
      return Time::from_us(compute_alone_us(op) * slowdown(op));
    case traces::OpKind::kMemcpy:
      return Time::from_us(
          2.0 * static_cast<double>(w_.bytes(op)) /
          (profile_.gpu.hbm_GBps.value * profile_.contention.hbm_efficiency.value * 1e3));
    default:
      return Time::from_us(collective_alone_us(op));
  }
}

double ModelCost::collective_alone_us(traces::OpId op) const {
  const traces::GroupId group = w_.group(op);
  const traces::OpKind kind = w_.kind(op);
  if (group == traces::kNoGroup || traces::is_p2p(kind)) {
    return estimate(op).time_us;  // a send's path depends on its two ranks
  }
  const nccl::ConfigOverride* asked = asked_for(op);
  const nccl::ConfigOverride want = asked != nullptr ? *asked : nccl::ConfigOverride{};
  const std::int64_t bytes = w_.bytes(op);
  for (const TimedCollective& t : timed_) {
    if (t.group == group && t.kind == kind && t.bytes == bytes && t.asked == want) {
      return t.time_us;
    }
  }
  const double us = estimate(op).time_us;
  const TimedCollective fresh{group, kind, bytes, want, us};
  if (timed_.size() < kCollMemo) {
    timed_.push_back(fresh);
  } else {
    // Full: the oldest entry goes (a search's earlier candidates' configurations).
    timed_[next_evicted_] = fresh;
    next_evicted_ = (next_evicted_ + 1) % kCollMemo;
  }
  return us;
}

}  // namespace lagom::sim
