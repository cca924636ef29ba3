// Footprints of the communication patterns on the hardware graph (see traffic.hpp).
#include "lagom/topologies/traffic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cluster_impl.hpp"
#include "lagom/common/error.hpp"

namespace lagom::topologies {
namespace {

using Impl = Cluster::Impl;

// Loads as they come (a link direction may come many times); finish() sorts and merges them, which
// is several times faster than a map on fat-tree footprints of thousands of ECMP hops.
struct Accumulator {
  std::vector<LinkLoad> loads;
  double intra_latency_us = 0;
  double net_latency_us = 0;
  bool network = false;

  void add(std::size_t link, int dir, double per_byte) {
    if (per_byte > 0) {
      loads.push_back({static_cast<std::uint32_t>(link), static_cast<std::uint8_t>(dir), per_byte});
    }
  }
};

// Direction of travel on `link` when leaving global vertex `from`.
int direction(const Impl& m, std::size_t link, std::size_t from) {
  return boost::source(m.edges[link], m.graph) == from ? 0 : 1;
}

void add_path(const Impl& m, const Path& p, double per_byte, Accumulator& acc) {
  for (const Hop& h : p.hops) {
    const auto& e = m.edges[h.link_id];
    const Endpoint& a = m.graph[boost::source(e, m.graph)].endpoint;
    acc.add(h.link_id, a == h.from ? 0 : 1, per_byte * h.share);
  }
  if (p.type == nccl::PathType::kNet) {
    acc.network = true;
    acc.net_latency_us = std::max(acc.net_latency_us, p.latency_us);
  } else if (!p.hops.empty()) {
    acc.intra_latency_us = std::max(acc.intra_latency_us, p.latency_us);
  }
}

// A node-local route of node `node`, in its direction of travel.
void add_local_route(const Impl& m, int node, const internal::LocalRoute& r, double per_byte,
                     Accumulator& acc) {
  const std::size_t vb = static_cast<std::size_t>(node) * m.vertices_per_node;
  const std::size_t eb = static_cast<std::size_t>(node) * m.edges_per_node;
  for (std::size_t k = 0; k < r.edges.size(); ++k) {
    acc.add(eb + r.edges[k], direction(m, eb + r.edges[k], vb + r.vertices[k]), per_byte);
  }
}

Footprint finish(const Impl& m, Accumulator&& acc) {
  Footprint f;
  // Sorted by (link, dir); equal keys summed in the order they came (deterministic: a stable
  // sort keeps it).
  std::stable_sort(acc.loads.begin(), acc.loads.end(), [](const LinkLoad& x, const LinkLoad& y) {
    return x.link != y.link ? x.link < y.link : x.dir < y.dir;
  });
  for (const LinkLoad& l : acc.loads) {
    if (!f.loads.empty() && f.loads.back().link == l.link && f.loads.back().dir == l.dir) {
      f.loads.back().per_byte += l.per_byte;
    } else {
      f.loads.push_back(l);
    }
  }
  for (const LinkLoad& l : f.loads) {
    const double per_byte = l.per_byte;
    const internal::EdgeProps& e = m.edge(l.link);
    const int c = static_cast<int>(e.link_class);
    if (per_byte / e.bandwidth_GBps > f.worst[c]) {
      f.worst[c] = per_byte / e.bandwidth_GBps;
      f.worst_per_byte[c] = per_byte;
    }
  }
  f.intra_latency_us = acc.intra_latency_us;
  f.net_latency_us = acc.net_latency_us;
  f.crosses_network = acc.network;
  return f;
}

}  // namespace

CommunicatorTraffic::CommunicatorTraffic(const Cluster& cluster, std::span<const int> ranks)
    : cluster_(cluster), ranks_(ranks.begin(), ranks.end()) {
  const auto& env = cluster_.spec().nccl_env;
  const auto pxn = env.find("NCCL_PXN_DISABLE");
  pxn_ = pxn == env.end() || pxn->second != "1";
  std::sort(ranks_.begin(), ranks_.end());
  for (std::size_t i = 1; i < ranks_.size(); ++i) {
    if (ranks_[i] == ranks_[i - 1]) {
      throw Error(fmt::format("rank {} appears twice in the communicator", ranks_[i]));
    }
  }
  // Nodes in the order the communicator's ranks first reach them, as NCCL numbers them (its
  // inter-node rings and trees follow that order); a node's GPUs in local order.
  std::map<int, std::size_t> slot;  // node -> index in by_node_
  for (int rank : ranks) {
    const GpuLocation loc = cluster_.locate(rank);
    const auto [it, fresh] = slot.emplace(loc.node, by_node_.size());
    if (fresh) {
      by_node_.emplace_back(loc.node, std::vector<int>{});
    }
    by_node_[it->second].second.push_back(loc.local);
  }
  for (auto& [node, locals] : by_node_) {
    std::sort(locals.begin(), locals.end());
  }
}

const Footprint& CommunicatorTraffic::ring() const {
  return get(kRing);
}
const Footprint& CommunicatorTraffic::network() const {
  return get(kNetwork);
}
const Footprint& CommunicatorTraffic::chain() const {
  return get(kChain);
}
const Footprint& CommunicatorTraffic::tree() const {
  return get(kTree);
}
const Footprint& CommunicatorTraffic::nvls() const {
  return get(kNvls);
}
const Footprint& CommunicatorTraffic::nvls_up() const {
  return get(kNvlsUp);
}
const Footprint& CommunicatorTraffic::nvls_down() const {
  return get(kNvlsDown);
}
const Footprint& CommunicatorTraffic::all_to_all() const {
  return get(kAllToAll);
}

const Footprint& CommunicatorTraffic::shift() const {
  return get(kShift);
}

const Footprint& CommunicatorTraffic::get(Which w) const {
  std::call_once(once_[w], [&] { cache_[w] = build(w); });
  return cache_[w];
}

int CommunicatorTraffic::send_via(int node, int g, int d) const {
  const auto it = std::find_if(by_node_.begin(), by_node_.end(),
                               [&](const auto& e) { return e.first == node; });
  return it == by_node_.end() ? g : send_via(it->second, g, d);
}

int CommunicatorTraffic::send_via(const std::vector<int>& locals, int g, int d) const {
  const Impl& m = *cluster_.impl_;
  if (g == d || !pxn_) {
    return g;
  }
  // d must be a member on this node (NCCL maps the peer's device to a local rank of the
  // communicator). The NIC is d's; the GPU that forwards is the member local to that NIC
  // (ncclTopoGetLocalGpu: the best path to it, then the lowest index), which must reach g over
  // NVLink and sit PIX or PXB from the NIC. With one NIC per GPU that is d itself.
  if (!std::binary_search(locals.begin(), locals.end(), d)) {
    return g;
  }
  const int nic = cluster_.nic_of(d);
  const std::size_t nv = m.nic_vertex[static_cast<std::size_t>(nic)];
  int proxy = -1;
  nccl::PathType best = nccl::PathType::kNet;
  for (int x : locals) {  // local order
    if (cluster_.nic_of(x) != nic) {
      continue;
    }
    const nccl::PathType t = m.route(m.gpu_vertex[static_cast<std::size_t>(x)], nv).type;
    if (proxy < 0 || static_cast<int>(t) < static_cast<int>(best)) {
      proxy = x;
      best = t;
    }
  }
  if (proxy < 0 || proxy == g) {
    return g;
  }
  const std::size_t gv = m.gpu_vertex[static_cast<std::size_t>(g)];
  const std::size_t pv = m.gpu_vertex[static_cast<std::size_t>(proxy)];
  return m.route(gv, pv).type == nccl::PathType::kNvl &&
                 (best == nccl::PathType::kPix || best == nccl::PathType::kPxb)
             ? proxy
             : g;
}

Footprint CommunicatorTraffic::pair(int from, int to) const {
  Accumulator acc;
  const GpuLocation a = cluster_.locate(from);
  const GpuLocation b = cluster_.locate(to);
  const int via = a.node == b.node ? a.local : send_via(a.node, a.local, b.local);
  if (via != a.local) {
    // PXN: over NVLink to the local GPU on the receiver's rail, out through its NIC.
    const int hop = a.node * cluster_.gpus_per_node() + via;
    add_path(*cluster_.impl_, cluster_.path(from, hop), 1.0, acc);
    add_path(*cluster_.impl_, cluster_.path(hop, to), 1.0, acc);
  } else {
    add_path(*cluster_.impl_, cluster_.path(from, to), 1.0, acc);
  }
  return finish(*cluster_.impl_, std::move(acc));
}

Footprint CommunicatorTraffic::build(Which w) const {
  const Impl& m = *cluster_.impl_;
  const int gpn = cluster_.gpus_per_node();
  const auto rank_of = [&](int node, int local) { return node * gpn + local; };
  const std::size_t nodes = by_node_.size();
  Accumulator acc;

  // Node t's traffic to node t+1 (ring order), U per node spread over its GPUs' NICs.
  const auto add_network = [&](double per_byte) {
    if (nodes < 2) {
      return;
    }
    for (std::size_t t = 0; t < nodes; ++t) {
      const auto& [node, locals] = by_node_[t];
      const auto& [next, next_locals] = by_node_[(t + 1) % nodes];
      const double share = per_byte / static_cast<double>(locals.size());
      for (std::size_t i = 0; i < locals.size(); ++i) {
        const int g = locals[i];
        const bool there = std::binary_search(next_locals.begin(), next_locals.end(), g);
        const int entry = there ? g : next_locals[i % next_locals.size()];
        add_path(m, cluster_.path(rank_of(node, g), rank_of(next, entry)), share, acc);
      }
    }
  };

  switch (w) {
    case kRing:
      for (const auto& [node, locals] : by_node_) {
        const std::size_t k = locals.size();
        if (k < 2) {
          continue;
        }
        const double per_edge =
            nodes > 1 ? static_cast<double>(k - 1) / static_cast<double>(k) : 1.0;
        for (std::size_t i = 0; i < k; ++i) {
          add_path(m, cluster_.path(rank_of(node, locals[i]), rank_of(node, locals[(i + 1) % k])),
                   per_edge, acc);
        }
      }
      add_network(1.0);
      break;
    case kNetwork:
      add_network(1.0);
      break;
    case kChain:
    case kTree:
      for (const auto& [node, locals] : by_node_) {
        for (std::size_t i = 0; i + 1 < locals.size(); ++i) {
          const int a = rank_of(node, locals[i]);
          const int b = rank_of(node, locals[i + 1]);
          add_path(m, cluster_.path(a, b), 1.0, acc);
          add_path(m, cluster_.path(b, a), 1.0, acc);
        }
      }
      if (w == kTree) {
        add_network(2.0 * static_cast<double>(nodes - 1) / static_cast<double>(nodes));
      }
      break;
    case kNvls:
    case kNvlsUp:
    case kNvlsDown:
      for (const auto& [node, locals] : by_node_) {
        for (int g : locals) {
          const std::size_t v = static_cast<std::size_t>(node) * m.vertices_per_node +
                                m.gpu_vertex[static_cast<std::size_t>(g)];
          for (auto [it, end] = boost::out_edges(v, m.graph); it != end; ++it) {
            const internal::EdgeProps& e = m.graph[*it];
            const Endpoint& other = m.graph[boost::target(*it, m.graph)].endpoint;
            if (e.link_class != nccl::LinkClass::kNvlink || other.kind != VertexKind::kNvSwitch) {
              continue;
            }
            const int up = direction(m, e.id, v);
            if (w != kNvlsDown) {
              acc.add(e.id, up, 1.0);
            }
            if (w != kNvlsUp) {
              acc.add(e.id, 1 - up, 1.0);
            }
            acc.intra_latency_us = std::max(acc.intra_latency_us, e.latency_us);
          }
        }
      }
      break;
    case kShift:
      for (std::size_t i = 0; ranks_.size() > 1 && i < ranks_.size(); ++i) {
        const Footprint f = pair(ranks_[i], ranks_[(i + 1) % ranks_.size()]);
        for (const LinkLoad& l : f.loads) {
          acc.add(l.link, l.dir, l.per_byte);
        }
        acc.network = acc.network || f.crosses_network;
        acc.intra_latency_us = std::max(acc.intra_latency_us, f.intra_latency_us);
        acc.net_latency_us = std::max(acc.net_latency_us, f.net_latency_us);
      }
      break;
    case kAllToAll: {
      const double n = static_cast<double>(ranks_.size());
      // Inside each node: every ordered pair by its route.
      for (const auto& [node, locals] : by_node_) {
        for (int a : locals) {
          for (int b : locals) {
            if (a != b) {
              add_path(m, cluster_.path(rank_of(node, a), rank_of(node, b)), 1.0 / n, acc);
            }
          }
        }
      }
      if (nodes < 2) {
        break;
      }
      // Across nodes a GPU sends U/n to each of the n - k remote ranks and receives as much. A
      // send to a rank of local index d leaves through the NIC of send_via(g, d) (PXN: local GPU
      // d's, reached over NVLink; else g's own); a receive comes in through the receiver's own
      // NIC (NCCL's receiver always uses its own). What leaves a leaf (stage 1) or a pod (stage
      // 2) climbs the fabric by ECMP (Impl::up_spread), and what enters one comes down the
      // mirror of that spread.
      const auto pod_of = [&](int leaf) { return m.switches[static_cast<std::size_t>(leaf)].pod; };
      // Members per local index overall, behind each leaf and in each pod (keyed with d).
      std::vector<double> of_index(static_cast<std::size_t>(gpn), 0.0);
      std::map<std::pair<int, int>, double> leaf_index;  // (leaf, d)
      std::map<std::pair<int, int>, double> pod_index;   // (pod, d)
      std::map<int, double> in_pod;
      for (const auto& [node, locals] : by_node_) {
        for (int d : locals) {
          const int leaf = m.leaf_of(node, cluster_.nic_of(d));
          of_index[static_cast<std::size_t>(d)] += 1;
          leaf_index[{leaf, d}] += 1;
          pod_index[{pod_of(leaf), d}] += 1;
          in_pod[pod_of(leaf)] += 1;
        }
      }
      // Senders per (destination index d, leaf their bytes leave by).
      std::map<std::pair<int, int>, double> sent_by_leaf;
      std::map<int, std::array<double, 2>> up;    // leaf -> bytes per unit leaving, stages 1, 2
      std::map<int, std::array<double, 2>> down;  // leaf -> bytes per unit entering
      for (const auto& [node, locals] : by_node_) {
        for (int g : locals) {
          for (int d = 0; d < gpn; ++d) {
            const bool here = std::binary_search(locals.begin(), locals.end(), d);
            const double remote = of_index[static_cast<std::size_t>(d)] - (here ? 1.0 : 0.0);
            const int via = send_via(locals, g, d);
            const int nic = cluster_.nic_of(via);
            sent_by_leaf[{d, m.leaf_of(node, nic)}] += 1;  // (also when it sends nothing: the
                                                           // receivers' count cancels it)
            if (remote <= 0) {
              continue;
            }
            const double bytes = remote / n;
            if (via != g) {
              add_local_route(m, node,
                              m.route(m.gpu_vertex[static_cast<std::size_t>(g)],
                                      m.gpu_vertex[static_cast<std::size_t>(via)]),
                              bytes, acc);
            }
            add_local_route(m, node,
                            m.route(m.gpu_vertex[static_cast<std::size_t>(via)],
                                    m.nic_vertex[static_cast<std::size_t>(nic)]),
                            bytes, acc);
            const std::size_t link = m.nic_link(node, nic);
            acc.add(link, direction(m, link, m.nic_vertex_of(node, nic)), bytes);
            // Receivers of index d not behind this leaf (this node's own is local), and not in
            // its pod (a node's NICs all sit in one pod).
            const int leaf = m.leaf_of(node, nic);
            const bool here_behind = here && m.leaf_of(node, cluster_.nic_of(d)) == leaf;
            const auto li = leaf_index.find({leaf, d});
            const double behind = li == leaf_index.end() ? 0.0 : li->second;
            auto& u = up[leaf];
            u[0] += (remote - (behind - (here_behind ? 1.0 : 0.0))) / n;
            const auto pi = pod_index.find({pod_of(leaf), d});
            u[1] += (of_index[static_cast<std::size_t>(d)] -
                     (pi == pod_index.end() ? 0.0 : pi->second)) /
                    n;
          }
        }
      }
      for (const auto& [node, locals] : by_node_) {
        const double k = static_cast<double>(locals.size());
        for (int g : locals) {
          const int nic = cluster_.nic_of(g);
          const double remote = (n - k) / n;
          const std::size_t nv = m.nic_vertex[static_cast<std::size_t>(nic)];
          add_local_route(m, node, m.route(nv, m.gpu_vertex[static_cast<std::size_t>(g)]), remote,
                          acc);
          const std::size_t link = m.nic_link(node, nic);
          acc.add(link, 1 - direction(m, link, m.nic_vertex_of(node, nic)), remote);
          // Senders elsewhere whose bytes for index g leave by another leaf than this one, and
          // those outside this pod.
          const int leaf = m.leaf_of(node, nic);
          double same_leaf_here = 0;  // this node's senders that would use this leaf for g
          for (int s : locals) {
            same_leaf_here += m.leaf_of(node, cluster_.nic_of(send_via(locals, s, g))) == leaf;
          }
          const auto si = sent_by_leaf.find({g, leaf});
          const double via_leaf = si == sent_by_leaf.end() ? 0.0 : si->second;
          auto& dn = down[leaf];
          dn[0] += (n - k - (via_leaf - same_leaf_here)) / n;
          dn[1] += (n - in_pod[pod_of(leaf)]) / n;
        }
      }
      std::vector<internal::FabricHop> hops;
      for (bool going_down : {false, true}) {
        for (const auto& [leaf, c] : going_down ? down : up) {
          hops.clear();
          m.up_spread(leaf, m.fabric_tiers - 1, going_down, hops);
          for (const internal::FabricHop& h : hops) {
            acc.add(h.link, direction(m, h.link, h.from),
                    h.share * c[static_cast<std::size_t>(h.stage - 1)]);
          }
        }
      }
      // Wire latency of the slowest remote pair from the first node: to each rail of the next.
      const auto& [node0, locals0] = by_node_[0];
      const auto& [node1, locals1] = by_node_[1];
      for (int b : locals1) {
        const Path p = cluster_.path(rank_of(node0, locals0.front()), rank_of(node1, b));
        acc.network = true;
        acc.net_latency_us = std::max(acc.net_latency_us, p.latency_us);
      }
      break;
    }
    case kCount:
      break;
  }
  return finish(m, std::move(acc));
}

}  // namespace lagom::topologies
