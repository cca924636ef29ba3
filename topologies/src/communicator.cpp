// describe_communicator(): ring/tree/NVLS link classes and bottlenecks of a rank set, and an
// estimate of NCCL's topology-search result for it (see communicator.hpp for the models).
#include "lagom/topologies/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "cluster_impl.hpp"
#include "lagom/common/error.hpp"
#include "lagom/nccl/topo.hpp"

namespace lagom::topologies {
namespace {

using internal::LocalRoute;
using Impl = Cluster::Impl;

constexpr double kUnlimited = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-6;  // NCCL rounds link budgets to 1e-3 (SUB_ROUND); stay below that

// Load per (node-local link, direction): how many streams of the algorithm cross it.
using Loads = std::map<std::pair<std::size_t, int>, double>;

void add_route(const Impl& m, const LocalRoute& r, double weight, double pcie_weight,
               Loads& loads) {
  for (std::size_t k = 0; k < r.edges.size(); ++k) {
    const int dir = r.vertices[k] < r.vertices[k + 1] ? 0 : 1;
    const bool pcie = m.edge(r.edges[k]).link_class == nccl::LinkClass::kPcie;
    loads[{r.edges[k], dir}] += pcie ? pcie_weight : weight;
  }
}

const LocalRoute& gpu_route(const Impl& m, int a, int b) {
  return m.route(m.gpu_vertex[static_cast<std::size_t>(a)],
                 m.gpu_vertex[static_cast<std::size_t>(b)]);
}

const LocalRoute& nic_route(const Impl& m, int gpu, int nic) {
  return m.route(m.gpu_vertex[static_cast<std::size_t>(gpu)],
                 m.nic_vertex[static_cast<std::size_t>(nic)]);
}

// Ring hops over `locals` in order (k hops, closing the ring), or the chain without the closing
// hop. The weight of PCIe links is NCCL's Intel P2P overhead when `nccl_units` and the hop goes
// through an Intel host bridge.
Loads ring_loads(const Impl& m, const std::vector<int>& locals, bool closed, bool nccl_units) {
  Loads loads;
  const std::size_t k = locals.size();
  if (k < 2) {
    return loads;
  }
  const bool intel = m.spec.cpu.vendor == nccl::CpuVendor::kIntel;
  for (std::size_t i = 0; i + (closed ? 0 : 1) < k; ++i) {
    const LocalRoute& r = gpu_route(m, locals[i], locals[(i + 1) % k]);
    const double pcie_weight =
        nccl_units && intel && r.type == nccl::PathType::kPhb ? nccl::kIntelP2pOverhead : 1.0;
    add_route(m, r, 1.0, pcie_weight, loads);
  }
  return loads;
}

struct Limit {
  double bw_GBps = kUnlimited;
  std::optional<nccl::LinkClass> cls;

  void take(double bw, nccl::LinkClass c) {
    if (bw < bw_GBps) {
      bw_GBps = bw;
      cls = c;
    }
  }
  void take(const Limit& o) {
    if (o.cls && o.bw_GBps < bw_GBps) {
      *this = o;
    }
  }
};

// The per-stream rate the most loaded link allows (physical bandwidths).
Limit rate(const Impl& m, const Loads& loads) {
  Limit l;
  for (const auto& [key, load] : loads) {
    const auto& e = m.edge(key.first);
    l.take(e.bandwidth_GBps / load, e.link_class);
  }
  return l;
}

std::set<nccl::LinkClass> classes(const Impl& m, const Loads& loads) {
  std::set<nccl::LinkClass> out;
  for (const auto& [key, load] : loads) {
    out.insert(m.edge(key.first).link_class);
  }
  return out;
}

double nccl_route_bw(const Impl& m, const LocalRoute& r) {
  double bw = kUnlimited;
  for (std::size_t e : r.edges) {
    bw = std::min(bw, m.edge(e).nccl_bw_GBps);
  }
  return bw;
}

// Everything we derive for one node's set of communicator GPUs.
struct NodeResult {
  nccl::PathType intra_type = nccl::PathType::kLoc;
  Limit ring_intra;
  Limit chain_intra;
  std::set<nccl::LinkClass> intra_classes;
  Limit inter_per_gpu;  // per GPU, worst NIC
  Limit nic_sum;        // all NICs of the node that serve communicator GPUs, together
  std::set<nccl::LinkClass> nic_classes;
  nccl::PathType nic_type = nccl::PathType::kLoc;
  Limit nvls_intra;
  NcclSearchEstimate nccl;
};

NcclSearchEstimate nccl_search(const Impl& m, const std::vector<int>& locals, bool multi_node) {
  const ClusterSpec& s = m.spec;
  const int cc = s.compute_capability;
  const std::size_t k = locals.size();
  NcclSearchEstimate est;

  const bool v218 = s.nccl_version == nccl::Version::k2_18;
  const int max_search = nccl::max_search_channels(s.nccl_version);
  // The GPU-NIC type of the NICs a channel can use (the worst ring hop's type is taken below).
  est.type_inter = nccl::PathType::kPix;  // NCCL's minTypeInter when there is no NET

  // maxBw and totalBw (search.cc ncclTopoSearchInit).
  double max_bw = 0;
  double total_bw = 0;
  for (int g : locals) {
    double nvl = 0;
    double pci = 0;
    const std::size_t v = m.gpu_vertex[static_cast<std::size_t>(g)];
    for (auto [it, end] = boost::out_edges(v, m.graph); it != end; ++it) {
      const auto& e = m.graph[*it];
      if (e.link_class == nccl::LinkClass::kNvlink) {
        nvl += e.nccl_bw_GBps;
      } else if (e.link_class == nccl::LinkClass::kPcie) {
        pci = e.nccl_bw_GBps;
      }
    }
    total_bw = std::max(total_bw, std::max(nvl, pci));
  }

  // NICs a channel can enter and leave by, and how much each carries per channel speed.
  std::vector<double> nic_cap;
  if (multi_node) {
    std::vector<std::pair<nccl::PathType, double>> best(s.network.nics.size(),
                                                        {nccl::PathType::kNet, 0.0});
    for (std::size_t n = 0; n < s.network.nics.size(); ++n) {
      // An entry of `count` NICs is one NCCL device of count x the speed (NicSpec).
      const double net = nccl::net_bw(s.network.nics[n].count * s.network.nic_speed_Gbps);
      for (int g : locals) {
        const LocalRoute& r = nic_route(m, g, static_cast<int>(n));
        const double bw = std::min(net, nccl_route_bw(m, r));
        max_bw = std::max(max_bw, bw);
        if (r.type < best[n].first || (r.type == best[n].first && bw > best[n].second)) {
          best[n] = {r.type, bw};
        }
      }
    }
    nccl::PathType limit = nccl::PathType::kPxb;  // NCCL's default GPU Direct RDMA level
    nccl::PathType closest = nccl::PathType::kNet;
    for (const auto& [t, bw] : best) {
      closest = std::min(closest, t);
    }
    limit = std::max(limit, closest);
    est.type_inter = nccl::PathType::kLoc;
    for (const auto& [t, bw] : best) {
      if (t <= limit) {
        nic_cap.push_back(bw);
        est.type_inter = std::max(est.type_inter, t);
      }
    }
  } else if (k >= 2) {
    for (int a : locals) {
      for (int b : locals) {
        if (a != b) {
          max_bw = std::max(max_bw, nccl_route_bw(m, gpu_route(m, a, b)));
        }
      }
    }
  } else {
    max_bw = total_bw = nccl::kLocBw;
  }

  // Rings that fit at per-channel speed `bw`: every link's budget divided by the streams that
  // cross it. Across nodes each GPU is the first (or last) GPU of 1/k of the channels, so the
  // chain crosses each ring hop in (k-1)/k of them, and each channel enters by one NIC.
  Loads loads = ring_loads(m, locals, true, true);
  if (multi_node) {
    for (auto& [key, load] : loads) {
      load *= static_cast<double>(k - 1) / static_cast<double>(k);
    }
  }
  for (std::size_t i = 0; k >= 2 && i < k; ++i) {
    est.type_intra = std::max(est.type_intra, gpu_route(m, locals[i], locals[(i + 1) % k]).type);
  }
  // When the search may look for different channels (sameChannels 0), a channel can run the ring
  // backwards and use the other direction of every link. NCCL 2.28 does not try that when the
  // ring crosses AMD sockets (search.cc); 2.18 always does.
  const bool reverse_rings =
      v218 || !(s.cpu.vendor == nccl::CpuVendor::kAmd && est.type_intra == nccl::PathType::kSys);
  std::set<std::pair<std::size_t, int>> directions;  // every (link, direction) either order loads
  for (const auto& [key, load] : loads) {
    directions.insert(key);
    directions.insert({key.first, 1 - key.second});
  }
  const auto load_on = [&](const std::pair<std::size_t, int>& key) {
    const auto it = loads.find(key);
    return it == loads.end() ? 0.0 : it->second;
  };
  const auto forward_fit = [&](double bw, int reverse) {  // forward rings beside `reverse` back
    double ch = max_search;
    for (const auto& key : directions) {
      const double budget =
          m.edge(key.first).nccl_bw_GBps / bw - reverse * load_on({key.first, 1 - key.second});
      const double fwd = load_on(key);
      if (budget < -kEps) {
        return -1.0;
      }
      if (fwd > 0) {
        ch = std::min(ch, std::floor(budget / fwd + kEps));
      }
    }
    return ch;
  };
  const auto channels_at = [&](double bw) {
    double ch = forward_fit(bw, 0);
    for (int r = 1; reverse_rings && r <= max_search; ++r) {
      const double f = forward_fit(bw, r);
      if (f < 0) {
        break;
      }
      ch = std::max(ch, std::min<double>(max_search, f + r));
    }
    if (multi_node) {
      double nic_ch = 0;
      for (double cap : nic_cap) {
        nic_ch += std::floor(cap / bw + kEps);
      }
      ch = std::min(ch, nic_ch);
    }
    return static_cast<int>(ch);
  };

  // ncclTopoCompute, pass 1: from the fastest speed the links allow, lower the speed while the
  // next one is above 0.49x the best found; stop when the rings use all of the GPU's bandwidth.
  const std::span<const double> ladder = nccl::speed_ladder(cc, multi_node, s.nccl_version);
  std::size_t idx = 0;
  while ((ladder[idx] > max_bw + kEps || ladder[idx] > total_bw + kEps) &&
         idx + 1 < ladder.size()) {
    ++idx;
  }
  int best_ch = 0;
  double best_bw = 0;
  for (;;) {
    const double bw = ladder[idx];
    const int ch = channels_at(bw);
    if (ch >= 1 && ch * bw > best_ch * best_bw + kEps) {
      best_ch = ch;
      best_bw = bw;
      if (ch >= max_search) {
        break;  // "perfect": as many channels as the search may make
      }
    }
    if (best_ch > 0 && best_ch * best_bw >= total_bw - kEps) {
      break;
    }
    if (idx + 1 < ladder.size() && (best_ch == 0 || ladder[idx + 1] / best_bw > 0.49)) {
      ++idx;
      continue;
    }
    break;
  }
  if (best_ch == 0) {
    // "Could not find a path for pattern 4, falling back to simple order".
    est.type_intra = est.type_inter = nccl::PathType::kSys;
    est.bw_intra_GBps = est.bw_inter_GBps = 0.1;
    est.channels = 1;
    return est;
  }
  // ncclTopoDupChannels. 2.28 then runs a second pass that tries every faster speed with at least
  // as many channels; 2.18 has no second pass for rings (it duplicates last).
  if (best_bw >= 25.0 && !(cc > 80 && best_bw < 50.0 && best_ch > 4)) {
    const int dup = std::min(best_ch * 2, max_search);
    best_bw /= (dup + best_ch - 1) / best_ch;
    best_ch = dup;
  }
  if (!v218) {
    const int min_ch = best_ch;
    idx = 0;
    while (ladder[idx] > best_bw + kEps && idx + 1 < ladder.size()) {
      ++idx;
    }
    while (idx > 0) {
      const double bw = ladder[--idx];
      const int ch = channels_at(bw);
      if (ch >= min_ch && ch * bw > best_ch * best_bw + kEps) {
        best_ch = ch;
        best_bw = bw;
      }
    }
  }
  est.bw_intra_GBps = est.bw_inter_GBps = best_bw;
  est.channels = best_ch;
  return est;
}

NodeResult describe_node(const Impl& m, const std::vector<int>& locals, bool multi_node) {
  const ClusterSpec& s = m.spec;
  NodeResult r;
  const std::size_t k = locals.size();
  if (k >= 2) {
    const Loads ring = ring_loads(m, locals, true, false);
    r.ring_intra = rate(m, ring);
    r.chain_intra = rate(m, ring_loads(m, locals, false, false));
    r.intra_classes = classes(m, ring);
    for (std::size_t i = 0; i < k; ++i) {
      r.intra_type = std::max(r.intra_type, gpu_route(m, locals[i], locals[(i + 1) % k]).type);
    }
  }
  if (multi_node) {
    // Per NIC: min(NIC, the PCIe path from each GPU it serves), shared by those GPUs.
    std::map<int, std::pair<Limit, int>> nics;  // nic -> (effective limit, GPUs served)
    for (int g : locals) {
      const int n = m.nic_of_gpu[static_cast<std::size_t>(g)];
      const LocalRoute& route = nic_route(m, g, n);
      r.nic_type = std::max(r.nic_type, route.type);
      auto& [lim, served] = nics[n];
      if (!lim.cls) {
        lim.take(s.nic_entry_bandwidth_GBps(static_cast<std::size_t>(n)),
                 nccl::LinkClass::kNetwork);
      }
      for (std::size_t e : route.edges) {
        lim.take(m.edge(e).bandwidth_GBps, m.edge(e).link_class);
        r.nic_classes.insert(m.edge(e).link_class);
      }
      ++served;
    }
    r.nic_classes.insert(nccl::LinkClass::kNetwork);
    double sum = 0;
    std::optional<nccl::LinkClass> sum_cls;
    for (const auto& [n, entry] : nics) {
      const auto& [lim, served] = entry;
      r.inter_per_gpu.take(lim.bw_GBps / served, *lim.cls);
      sum += lim.bw_GBps;
      if (!sum_cls || *lim.cls != nccl::LinkClass::kNetwork) {
        sum_cls = lim.cls;
      }
    }
    r.nic_sum.bw_GBps = sum;
    r.nic_sum.cls = sum_cls;
  }
  if (s.intra_node.kind == IntraNodeKind::kNvSwitch) {
    for (int g : locals) {
      const std::size_t v = m.gpu_vertex[static_cast<std::size_t>(g)];
      for (auto [it, end] = boost::out_edges(v, m.graph); it != end; ++it) {
        if (m.graph[*it].link_class == nccl::LinkClass::kNvlink) {
          r.nvls_intra.take(m.graph[*it].bandwidth_GBps, nccl::LinkClass::kNvlink);
        }
      }
    }
  }
  r.nccl = nccl_search(m, locals, multi_node);
  return r;
}

AlgorithmPaths finish(bool available, const std::set<nccl::LinkClass>& cls, const Limit& limit) {
  AlgorithmPaths a;
  a.available = available;
  if (!available) {
    return a;
  }
  a.link_classes.assign(cls.begin(), cls.end());
  a.bottleneck_class = limit.cls;
  a.bottleneck_GBps = limit.cls ? limit.bw_GBps : kUnlimited;
  return a;
}

}  // namespace

CommunicatorInfo describe_communicator(const Cluster& cluster, std::span<const int> ranks) {
  const Impl& m = *cluster.impl_;
  const ClusterSpec& s = m.spec;
  if (ranks.empty()) {
    throw Error(fmt::format("a communicator needs at least one rank (cluster '{}')", s.name));
  }
  if (ranks.size() > static_cast<std::size_t>(cluster.gpu_count())) {
    throw Error(
        fmt::format("a communicator of {} ranks does not fit cluster '{}' ({} nodes x {} "
                    "GPUs = {} GPUs)",
                    ranks.size(), s.name, s.nodes, s.gpus_per_node, cluster.gpu_count()));
  }
  std::map<int, std::vector<int>> by_node;
  {
    std::vector<int> sorted(ranks.begin(), ranks.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (i > 0 && sorted[i] == sorted[i - 1]) {
        throw Error(fmt::format("rank {} appears twice in the communicator", sorted[i]));
      }
      const GpuLocation loc = cluster.locate(sorted[i]);  // throws when out of range
      by_node[loc.node].push_back(loc.local);
    }
  }

  CommunicatorInfo info;
  info.nranks = static_cast<int>(ranks.size());
  info.nnodes = static_cast<int>(by_node.size());
  info.ranks_per_node_min = std::numeric_limits<int>::max();
  const bool multi = info.nnodes > 1;
  std::map<std::vector<int>, NodeResult> cache;  // nodes with the same local GPUs agree
  for (const auto& [node, locals] : by_node) {
    const int k = static_cast<int>(locals.size());
    info.ranks_per_node_max = std::max(info.ranks_per_node_max, k);
    info.ranks_per_node_min = std::min(info.ranks_per_node_min, k);
    if (!cache.contains(locals)) {
      cache.emplace(locals, describe_node(m, locals, multi));
    }
  }
  info.uniform = info.ranks_per_node_min == info.ranks_per_node_max;

  Limit ring;
  Limit tree;
  Limit nvls;
  Limit intra;
  Limit inter;
  std::set<nccl::LinkClass> ring_classes;
  std::set<nccl::LinkClass> nvls_classes{nccl::LinkClass::kNvlink};
  bool first = true;
  for (const auto& [locals, r] : cache) {
    info.intra_path_type = std::max(info.intra_path_type, r.intra_type);
    intra.take(r.ring_intra);
    ring.take(r.ring_intra);
    tree.take(r.chain_intra);
    ring_classes.insert(r.intra_classes.begin(), r.intra_classes.end());
    nvls.take(r.nvls_intra);
    if (multi) {
      inter.take(r.inter_per_gpu);
      ring.take(r.nic_sum);
      tree.take(r.nic_sum);
      nvls.take(r.nic_sum);
      ring_classes.insert(r.nic_classes.begin(), r.nic_classes.end());
      nvls_classes.insert(r.nic_classes.begin(), r.nic_classes.end());
      info.nic_path_type = std::max(info.nic_path_type, r.nic_type);
    }
    if (first) {
      info.nccl = r.nccl;
      first = false;
    } else {
      // NCCL agrees on the minimum channel count and bandwidth and the worst path types.
      info.nccl.channels = std::min(info.nccl.channels, r.nccl.channels);
      info.nccl.bw_intra_GBps = std::min(info.nccl.bw_intra_GBps, r.nccl.bw_intra_GBps);
      info.nccl.bw_inter_GBps = std::min(info.nccl.bw_inter_GBps, r.nccl.bw_inter_GBps);
      info.nccl.type_intra = std::max(info.nccl.type_intra, r.nccl.type_intra);
      info.nccl.type_inter = std::max(info.nccl.type_inter, r.nccl.type_inter);
    }
  }
  info.intra_bw_GBps = intra.cls ? intra.bw_GBps : kUnlimited;
  info.intra_bottleneck_class = intra.cls;
  info.inter_bw_GBps = multi ? inter.bw_GBps : 0.0;
  info.inter_bottleneck_class = inter.cls;

  const bool nvls_capable = s.intra_node.nvswitch && s.intra_node.nvswitch->nvls;
  info.nvls_available = nvls_capable && info.ranks_per_node_max >= 2;
  info.ring = finish(true, ring_classes, ring);
  info.tree = finish(true, ring_classes, tree);
  info.nvls = finish(info.nvls_available, nvls_classes, nvls);
  info.traffic = std::make_shared<const CommunicatorTraffic>(cluster, ranks);
  return info;
}

}  // namespace lagom::topologies
