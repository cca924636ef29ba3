// SM, HBM and link contention between overlapping ops on one GPU (see resource_contention.hpp).
#include "lagom/sim/resource_contention.hpp"

#include <algorithm>
#include <cmath>

namespace lagom::sim {

namespace {

double wire_efficiency(Protocol p) {
  return p == Protocol::kLL ? 0.5 : p == Protocol::kLL128 ? 120.0 / 128.0 : 1.0;
}

bool reduces(traces::OpKind k) {
  return k == traces::OpKind::kAllReduce || k == traces::OpKind::kReduceScatter ||
         k == traces::OpKind::kReduce;
}

}  // namespace

ResourceContention::ResourceContention(const ModelCost& models) : models_(models) {}

std::size_t ResourceContention::CommKeyHash::operator()(const CommKey& k) const {
  std::size_t h = std::hash<std::int64_t>()(k.bytes);
  h = h * 31 + std::hash<std::int32_t>()(k.group);
  h = h * 31 + std::hash<std::int32_t>()(k.peer);
  h = h * 31 + static_cast<std::size_t>(k.kind);
  return h * 31 + std::hash<const void*>()(k.pin);
}

const ResourceContention::CommInfo& ResourceContention::comm_info(const traces::Workload& w,
                                                                  traces::OpId op) {
  if (by_op_.empty()) {
    by_op_.assign(w.op_count(), nullptr);
  }
  if (const CommInfo* known = by_op_[op]) {
    return *known;
  }
  // Send/recv without a group are keyed by their two ranks.
  const bool pair = w.group(op) == traces::kNoGroup;
  const std::int32_t a = static_cast<std::int32_t>(w.rank_of(op));
  const CommKey key{w.group(op),
                    pair ? std::min(a, w.peer(op)) * 65536 + std::max(a, w.peer(op)) : w.peer(op),
                    w.kind(op) == traces::OpKind::kRecv ? traces::OpKind::kSend : w.kind(op),
                    w.bytes(op), w.pinned_config(op)};
  if (auto it = comm_.find(key); it != comm_.end()) {
    by_op_[op] = &it->second;
    return it->second;
  }
  const CommConfig cfg = models_.config_for(w, op);
  const CollectiveEstimate e = models_.estimate(w, op, cfg);
  const calibrate::HardwareProfile& p = models_.profile();
  CommInfo c;
  c.nchannels = cfg.nchannels;
  // Payload per direction through its bottleneck, averaged over its life alone.
  const double payload = e.bottleneck == "network"
                             ? e.bottleneck_bytes / std::max(1, models_.cluster().gpus_per_node())
                             : e.bottleneck_bytes;
  c.rate_GBps = e.time_us > 0 ? payload / (e.time_us * 1e3) : 0.0;
  const double touches =
      reduces(w.kind(op)) ? p.contention.comm_hbm_reduce.value : p.contention.comm_hbm_copy.value;
  const double in_flight = 4.0 * cfg.nchannels * static_cast<double>(cfg.chunk_bytes);
  c.in_flight_bytes = in_flight;
  const double l2_bytes = p.gpu.l2_MiB.value * 1024.0 * 1024.0;
  const double spill = l2_bytes > 0 ? std::min(1.0, in_flight / l2_bytes) : 1.0;
  c.hbm_GBps = touches * c.rate_GBps / wire_efficiency(cfg.proto) *
               (1.0 + p.contention.l2_spill.value * spill);
  if (e.bottleneck == "intra" || e.bottleneck == "nvls") {
    c.link_class = 0;
    c.link_GBps = e.bottleneck_GBps;
  } else if (e.bottleneck == "network") {
    c.link_class = 1;
    c.link_GBps = e.bottleneck_GBps / std::max(1, models_.cluster().gpus_per_node());
  }
  const CommInfo* stored = &comm_.emplace(key, c).first->second;
  by_op_[op] = stored;
  return *stored;
}

int ResourceContention::held_sms(const traces::Workload& w, traces::OpId op) {
  return traces::is_comm(w.kind(op)) ? comm_info(w, op).nchannels : 0;
}

void ResourceContention::speed_factors(const traces::Workload& w, traces::Rank,
                                       std::span<const ActiveOp> active,
                                       std::span<double> factors) {
  const ComputeModel& cm = models_.compute();
  const calibrate::HardwareProfile& p = models_.profile();
  const int sms = cm.sms();

  // SMs: channels of every collective present, running or waiting.
  int held = 0;
  int kernels = 0;
  for (const ActiveOp& a : active) {
    const traces::OpKind k = w.kind(a.op);
    if (traces::is_comm(k)) {
      held += comm_info(w, a.op).nchannels;
    } else if (k == traces::OpKind::kCompute && !a.waiting) {
      ++kernels;
    }
  }
  held = std::min(held, sms - 1);
  // L2: the collectives' chunks in flight (4 per channel: NCCL keeps two chunk slots per send and
  // receive connection busy) evict kernels' working sets once they fill it.
  double in_flight = 0;
  for (const ActiveOp& a : active) {
    if (!a.waiting && traces::is_comm(w.kind(a.op))) {
      in_flight += comm_info(w, a.op).in_flight_bytes;
    }
  }
  const double l2_bytes = p.gpu.l2_MiB.value * 1024.0 * 1024.0;
  const double inflation = 1.0 + p.contention.l2_pollution.value *
                                     (l2_bytes > 0 ? std::min(1.0, in_flight / l2_bytes) : 0.0);
  const int per_kernel = kernels > 0 ? std::max(1, (sms - held) / kernels) : sms;

  // HBM: what every running op would draw alone.
  demand_.assign(active.size(), 0.0);
  double total = 0;
  for (std::size_t i = 0; i < active.size(); ++i) {
    if (active[i].waiting) {
      continue;
    }
    const traces::OpId op = active[i].op;
    const traces::OpKind k = w.kind(op);
    if (k == traces::OpKind::kCompute || k == traces::OpKind::kMemcpy) {
      const double bytes =
          static_cast<double>(w.bytes(op)) * (k == traces::OpKind::kMemcpy ? 2 : 1);
      if (bytes > 0) {
        demand_[i] = bytes / (std::max(1e-3, models_.alone_us(w, op)) * 1e3);
      }
    } else {
      demand_[i] = comm_info(w, op).hbm_GBps;
    }
    total += demand_[i];
  }
  const double capacity = cm.hbm_GBps() * p.contention.hbm_efficiency.value;
  const double share = total > capacity ? capacity / total : 1.0;

  // Links: running collectives per link class, in proportion to their rates.
  double link_demand[2] = {0, 0};
  double link_capacity[2] = {0, 0};
  for (const ActiveOp& a : active) {
    if (!a.waiting && traces::is_comm(w.kind(a.op))) {
      const CommInfo& c = comm_info(w, a.op);
      if (c.link_class >= 0) {
        link_demand[c.link_class] += c.rate_GBps;
        link_capacity[c.link_class] = std::max(link_capacity[c.link_class], c.link_GBps);
      }
    }
  }

  for (std::size_t i = 0; i < active.size(); ++i) {
    factors[i] = 1.0;
    if (active[i].waiting) {
      continue;
    }
    const traces::OpId op = active[i].op;
    const traces::OpKind k = w.kind(op);
    if (k == traces::OpKind::kCompute) {
      const traces::ComputeShape* shape = w.compute_shape(op);
      if (shape == nullptr && w.bytes(op) == 0) {
        // Known only by its duration: it slows with the SMs it loses.
        factors[i] = static_cast<double>(per_kernel) / sms;
        continue;
      }
      const traces::ComputeShape s = shape ? *shape : traces::ComputeShape{};
      const double bytes = static_cast<double>(w.bytes(op));
      const double alone = cm.alone(s, bytes).time_us;
      const double now =
          cm.estimate(s, bytes, per_kernel, cm.hbm_GBps() * share, inflation).time_us;
      factors[i] = std::clamp(alone / now, 1e-6, 1.0);
    } else if (k == traces::OpKind::kMemcpy) {
      factors[i] = share;
    } else {
      const CommInfo& c = comm_info(w, op);
      double f = share;
      if (c.link_class >= 0 && link_demand[c.link_class] > link_capacity[c.link_class] &&
          link_demand[c.link_class] > 0) {
        f = std::min(f, link_capacity[c.link_class] / link_demand[c.link_class]);
      }
      factors[i] = std::clamp(f, 1e-6, 1.0);
    }
  }
}

}  // namespace lagom::sim
