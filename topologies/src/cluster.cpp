// Builds the Boost graph of a Cluster (every node laid out identically, then the network) and
// answers rank-to-rank path queries from a per-node route table.
#include "lagom/topologies/cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "cluster_impl.hpp"
#include "lagom/common/error.hpp"
#include "lagom/nccl/topo.hpp"

namespace lagom::topologies {
namespace {

using internal::EdgeProps;
using internal::Graph;
using internal::LocalRoute;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Fewest hops, then the widest bottleneck, from `src` to every node-local vertex of node 0.
// GPUs and NICs other than `src` are endpoints only: NCCL does not route through a GPU here
// (that would be NVB or PXN, which are NCCL choices, not the hardware path), and a NIC forwards
// nothing inside a node.
std::vector<LocalRoute> routes_from(const Cluster::Impl& impl, std::size_t src) {
  const std::size_t n = impl.vertices_per_node;
  std::vector<int> dist(n, -1);
  std::vector<double> width(n, 0.0);
  std::vector<std::size_t> pred_edge(n, 0);
  std::vector<std::size_t> pred_vertex(n, 0);
  std::deque<std::size_t> queue;
  dist[src] = 0;
  width[src] = kInf;
  queue.push_back(src);
  while (!queue.empty()) {
    const std::size_t u = queue.front();
    queue.pop_front();
    const VertexKind kind = impl.graph[u].endpoint.kind;
    if (u != src && (kind == VertexKind::kGpu || kind == VertexKind::kNic)) {
      continue;
    }
    // Out-edges in link-id order so that ties break the same way on every platform.
    std::vector<std::pair<std::size_t, std::size_t>> out;  // (edge id, neighbour)
    for (auto [it, end] = boost::out_edges(u, impl.graph); it != end; ++it) {
      const std::size_t v = boost::target(*it, impl.graph);
      if (v < n) {
        out.emplace_back(impl.graph[*it].id, v);
      }
    }
    std::sort(out.begin(), out.end());
    for (const auto& [e, v] : out) {
      const double w = std::min(width[u], impl.edge(e).bandwidth_GBps);
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        width[v] = w;
        pred_edge[v] = e;
        pred_vertex[v] = u;
        queue.push_back(v);
      } else if (dist[v] == dist[u] + 1 && w > width[v]) {
        width[v] = w;
        pred_edge[v] = e;
        pred_vertex[v] = u;
      }
    }
  }
  std::vector<LocalRoute> out(n);
  for (std::size_t dst = 0; dst < n; ++dst) {
    LocalRoute& r = out[dst];
    if (dist[dst] < 0) {
      continue;
    }
    r.reachable = true;
    r.bottleneck_GBps = width[dst];
    for (std::size_t v = dst; v != src; v = pred_vertex[v]) {
      r.vertices.push_back(v);
      r.edges.push_back(pred_edge[v]);
    }
    r.vertices.push_back(src);
    std::reverse(r.vertices.begin(), r.vertices.end());
    std::reverse(r.edges.begin(), r.edges.end());
    // NCCL's path type: the worst of what the route crosses (topo.h comments).
    if (r.edges.empty()) {
      r.type = nccl::PathType::kLoc;
      continue;
    }
    bool all_nvlink = true;
    bool cpu_link = false;
    bool through_cpu = false;
    int pcie_switches = 0;
    for (std::size_t e : r.edges) {
      all_nvlink = all_nvlink && impl.edge(e).link_class == nccl::LinkClass::kNvlink;
      cpu_link = cpu_link || impl.edge(e).link_class == nccl::LinkClass::kCpuInterconnect;
    }
    for (std::size_t k = 1; k + 1 < r.vertices.size(); ++k) {
      const VertexKind kind = impl.graph[r.vertices[k]].endpoint.kind;
      through_cpu = through_cpu || kind == VertexKind::kCpu;
      pcie_switches += kind == VertexKind::kPcieSwitch ? 1 : 0;
    }
    r.type = all_nvlink          ? nccl::PathType::kNvl
             : cpu_link          ? nccl::PathType::kSys
             : through_cpu       ? nccl::PathType::kPhb
             : pcie_switches > 1 ? nccl::PathType::kPxb
                                 : nccl::PathType::kPix;
  }
  return out;
}

std::size_t add_vertex(Graph& g, VertexKind kind, int node, int index) {
  // Not add_vertex(props, g): with -O1 and the sanitizers GCC 12 flags an uninitialized
  // boost::optional inside Boost.Graph's named-graph lookup that this overload skips.
  const std::size_t v = boost::add_vertex(g);
  g[v].endpoint = Endpoint{kind, node, index};
  return v;
}

// The network switches and links (every node's vertices exist already). Switch vertices are
// Endpoint{kNetworkSwitch, -1, leaf} for leaves (a rail-optimized fabric's leaf r is rail r), the
// spine or the single switch {.., -1, -1}, and on a fat-tree {.., -2, spine} and {.., -3, core}.
void build_fabric(Cluster::Impl& m) {
  const ClusterSpec& s = m.spec;
  Graph& g = m.graph;
  const int nics = static_cast<int>(s.network.nics.size());
  const FabricSpec& f = s.network.fabric;
  const auto add_link = [&](std::size_t a, std::size_t b, double bw, int count) {
    EdgeProps p{m.edges.size(), nccl::LinkClass::kNetwork, bw, f.latency_us, count, bw};
    m.edges.push_back(boost::add_edge(a, b, p, g).first);
    return p.id;
  };
  const auto add_switch = [&](int node, int index, int pod) {
    internal::NetSwitch sw;
    sw.vertex = add_vertex(g, VertexKind::kNetworkSwitch, node, index);
    sw.pod = pod;
    m.switches.push_back(sw);
    return static_cast<int>(m.switches.size()) - 1;
  };
  const auto connect = [&](int child, int parent, double bw, int cables) {
    internal::NetSwitch& c = m.switches[static_cast<std::size_t>(child)];
    const std::size_t id =
        add_link(c.vertex, m.switches[static_cast<std::size_t>(parent)].vertex, bw, cables);
    c.up.push_back({id, parent, cables});
    c.up_cables += cables;
  };
  m.leaf_of_nic.resize(static_cast<std::size_t>(s.nodes) * static_cast<std::size_t>(nics));
  std::optional<FatTreeLayout> ft;
  switch (f.kind) {
    case FabricKind::kSingleSwitch:
      m.fabric_tiers = 1;
      add_switch(-1, -1, 0);
      std::fill(m.leaf_of_nic.begin(), m.leaf_of_nic.end(), 0);
      break;
    case FabricKind::kRailOptimized:
      m.fabric_tiers = 2;
      for (int r = 0; r < nics; ++r) {
        add_switch(-1, r, 0);
      }
      add_switch(-1, -1, 0);
      for (std::size_t k = 0; k < m.leaf_of_nic.size(); ++k) {
        m.leaf_of_nic[k] = static_cast<int>(k % static_cast<std::size_t>(nics));
      }
      break;
    case FabricKind::kFatTree: {
      ft = fat_tree_layout(s);
      m.fabric_tiers = ft->tiers;
      for (int l = 0; l < ft->leaves; ++l) {
        add_switch(-1, l, l / ft->leaves_per_pod);
      }
      for (int p = 0; p < ft->pods; ++p) {
        for (int j = 0; j < ft->spines_per_pod; ++j) {
          add_switch(-2, p * ft->spines_per_pod + j, p);
        }
      }
      for (int c = 0; c < ft->cores(); ++c) {
        add_switch(-3, c, -1);
      }
      for (int node = 0; node < s.nodes; ++node) {
        for (int i = 0; i < nics; ++i) {
          m.leaf_of_nic[static_cast<std::size_t>(node) * static_cast<std::size_t>(nics) +
                        static_cast<std::size_t>(i)] =
              (node / ft->nodes_per_leaf) * ft->rails + (ft->rails > 1 ? i : 0);
        }
      }
      break;
    }
  }
  // An entry of `count` NICs is one bundle of `count` links whose bandwidths add up; NCCL sees
  // it as one device of count x the speed (aws-ofi-nccl's multi-rail devices do exactly that).
  m.nic_link_base = m.edges.size();
  for (int node = 0; node < s.nodes; ++node) {
    for (int i = 0; i < nics; ++i) {
      const std::size_t v = m.nic_vertex_of(node, i);
      const int count = s.network.nics[static_cast<std::size_t>(i)].count;
      const double bw = s.nic_entry_bandwidth_GBps(static_cast<std::size_t>(i));
      EdgeProps p{m.edges.size(),
                  nccl::LinkClass::kNetwork,
                  bw,
                  f.latency_us,
                  count,
                  nccl::net_bw(count * s.network.nic_speed_Gbps)};
      m.edges.push_back(
          boost::add_edge(v, m.switches[static_cast<std::size_t>(m.leaf_of(node, i))].vertex, p, g)
              .first);
    }
  }
  if (f.kind == FabricKind::kRailOptimized) {
    // A leaf's uplinks carry what its `nodes` NICs can send, divided by the taper.
    for (int r = 0; r < nics; ++r) {
      const double up =
          s.nodes * s.nic_entry_bandwidth_GBps(static_cast<std::size_t>(r)) / f.oversubscription;
      connect(r, nics, up, s.nodes);
    }
  } else if (ft) {
    // Every leaf to every spine of its pod; spine j of every pod to the cores of plane j.
    const int spine0 = ft->leaves;
    const int core0 = spine0 + ft->spines();
    for (int l = 0; l < ft->leaves; ++l) {
      const int pod = l / ft->leaves_per_pod;
      for (int j = 0; j < ft->spines_per_pod; ++j) {
        connect(l, spine0 + pod * ft->spines_per_pod + j, ft->leaf_spine_cables * ft->port_GBps,
                ft->leaf_spine_cables);
      }
    }
    for (int p = 0; p < ft->pods; ++p) {
      for (int j = 0; j < ft->spines_per_pod; ++j) {
        for (int k = 0; k < ft->cores_per_plane; ++k) {
          connect(spine0 + p * ft->spines_per_pod + j, core0 + j * ft->cores_per_plane + k,
                  ft->spine_core_cables * ft->port_GBps, ft->spine_core_cables);
        }
      }
    }
  }
}

}  // namespace

int Cluster::Impl::stages_between(int leaf_a, int leaf_b) const {
  if (leaf_a == leaf_b) {
    return 0;
  }
  if (fabric_tiers == 3 && switches[static_cast<std::size_t>(leaf_a)].pod !=
                               switches[static_cast<std::size_t>(leaf_b)].pod) {
    return 2;
  }
  return 1;
}

void Cluster::Impl::up_spread(int leaf, int stages, bool down,
                              std::vector<internal::FabricHop>& out) const {
  // (switch, share) at the current height, in switch order, each switch once.
  std::vector<std::pair<int, double>> layer{{leaf, 1.0}};
  std::vector<std::pair<int, double>> next;
  for (int stage = 1; stage <= stages; ++stage) {
    next.clear();
    for (const auto& [sw, share] : layer) {
      const internal::NetSwitch& x = switches[static_cast<std::size_t>(sw)];
      for (const internal::NetSwitch::Up& u : x.up) {
        const double part = share * u.cables / x.up_cables;
        const std::size_t parent = switches[static_cast<std::size_t>(u.parent)].vertex;
        out.push_back(down ? internal::FabricHop{u.link, parent, x.vertex, part, stage}
                           : internal::FabricHop{u.link, x.vertex, parent, part, stage});
        next.emplace_back(u.parent, part);
      }
    }
    // Merge the shares of a switch reached from several below (in the order they came).
    std::stable_sort(next.begin(), next.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    layer.clear();
    for (const auto& [sw, part] : next) {
      if (!layer.empty() && layer.back().first == sw) {
        layer.back().second += part;
      } else {
        layer.emplace_back(sw, part);
      }
    }
  }
}

void Cluster::Impl::fabric_route(int leaf_a, int leaf_b,
                                 std::vector<internal::FabricHop>& out) const {
  const int stages = stages_between(leaf_a, leaf_b);
  up_spread(leaf_a, stages, false, out);
  // Down to b: the mirror of b's spread up, highest stage first.
  std::vector<internal::FabricHop> down;
  up_spread(leaf_b, stages, true, down);
  std::stable_sort(down.begin(), down.end(),
                   [](const auto& x, const auto& y) { return x.stage > y.stage; });
  out.insert(out.end(), down.begin(), down.end());
}

Cluster::Cluster(ClusterSpec spec) {
  validate(spec);
  auto impl = std::make_shared<Impl>();
  impl->spec = std::move(spec);
  Impl& m = *impl;
  const ClusterSpec& s = m.spec;
  Graph& g = m.graph;
  const int gpn = s.gpus_per_node;
  const int nics = static_cast<int>(s.network.nics.size());
  const int cc = s.compute_capability;
  const double pcie_nccl = nccl::pcie_bw(s.pcie.generation, s.pcie.lanes);
  // The CPU interconnect in NCCL's units: the spec's figure (the presets use 2.28's SMP
  // constants). NCCL 2.18.3 (topo.cc) joins AMD sockets at LOC_BW and knows no Xeon past
  // Skylake's 10 GB/s.
  double cpu_nccl = s.cpu.interconnect_bandwidth_GBps;
  if (s.nccl_version == nccl::Version::k2_18) {
    if (s.cpu.vendor == nccl::CpuVendor::kAmd) {
      cpu_nccl = nccl::kLocBw;
    } else if (s.cpu.vendor == nccl::CpuVendor::kIntel) {
      cpu_nccl = std::min(cpu_nccl, 10.0);
    }
  }

  const auto add_link = [&](std::size_t a, std::size_t b, nccl::LinkClass cls, double bw,
                            double lat, int count, double nccl_bw) {
    EdgeProps p{m.edges.size(), cls, bw, lat, count, nccl_bw};
    m.edges.push_back(boost::add_edge(a, b, p, g).first);
  };

  for (int node = 0; node < s.nodes; ++node) {
    const std::size_t base = boost::num_vertices(g);
    std::map<std::string, std::size_t> by_id;  // switch ids and cpu<N> -> local vertex
    for (int i = 0; i < gpn; ++i) {
      add_vertex(g, VertexKind::kGpu, node, i);
    }
    std::size_t nvswitch = 0;
    if (s.intra_node.kind == IntraNodeKind::kNvSwitch) {
      nvswitch = add_vertex(g, VertexKind::kNvSwitch, node, 0);
    }
    for (std::size_t i = 0; i < s.pcie.switches.size(); ++i) {
      by_id[s.pcie.switches[i].id] =
          add_vertex(g, VertexKind::kPcieSwitch, node, static_cast<int>(i));
    }
    for (int i = 0; i < s.cpu.sockets; ++i) {
      by_id[fmt::format("cpu{}", i)] = add_vertex(g, VertexKind::kCpu, node, i);
    }
    std::vector<std::size_t> nic_v;
    for (int i = 0; i < nics; ++i) {
      nic_v.push_back(add_vertex(g, VertexKind::kNic, node, i));
    }
    if (node == 0) {
      m.vertices_per_node = boost::num_vertices(g);
      for (int i = 0; i < gpn; ++i) {
        m.gpu_vertex.push_back(static_cast<std::size_t>(i));
      }
      m.nic_vertex = nic_v;
    }

    // NVLink.
    if (s.intra_node.nvlink) {
      const NvLinkSpec& nv = *s.intra_node.nvlink;
      const double bw = nv.links_per_gpu * nv.link_bandwidth_GBps;
      const double nccl_bw = nv.links_per_gpu * nccl::nvlink_bw(cc, s.nccl_version);
      if (s.intra_node.kind == IntraNodeKind::kNvSwitch) {
        for (int i = 0; i < gpn; ++i) {
          add_link(base + static_cast<std::size_t>(i), nvswitch, nccl::LinkClass::kNvlink, bw,
                   nv.latency_us, nv.links_per_gpu, nccl_bw);
        }
      } else {
        for (const auto& [x, y] : s.intra_node.pairs) {
          add_link(base + static_cast<std::size_t>(x), base + static_cast<std::size_t>(y),
                   nccl::LinkClass::kNvlink, bw, nv.latency_us, nv.links_per_gpu, nccl_bw);
        }
      }
    }
    // PCIe tree: switch uplinks, then GPUs, then NICs.
    const auto pcie = [&](std::size_t a, std::size_t b) {
      add_link(a, b, nccl::LinkClass::kPcie, s.pcie.link_bandwidth_GBps, s.pcie.latency_us, 1,
               pcie_nccl);
    };
    for (const PcieSwitchSpec& sw : s.pcie.switches) {
      pcie(by_id.at(sw.id), by_id.at(sw.upstream));
    }
    for (int i = 0; i < gpn; ++i) {
      pcie(base + static_cast<std::size_t>(i),
           by_id.at(s.pcie.gpu_attach[static_cast<std::size_t>(i)]));
    }
    for (int i = 0; i < nics; ++i) {
      // An entry of `count` NICs: one PCIe link each, bundled.
      const NicSpec& nic = s.network.nics[static_cast<std::size_t>(i)];
      add_link(nic_v[static_cast<std::size_t>(i)], by_id.at(nic.attach), nccl::LinkClass::kPcie,
               nic.count * s.pcie.link_bandwidth_GBps, s.pcie.latency_us, nic.count,
               nic.count * pcie_nccl);
    }
    // CPU interconnect: every pair of sockets.
    for (int a = 0; a < s.cpu.sockets; ++a) {
      for (int b = a + 1; b < s.cpu.sockets; ++b) {
        add_link(by_id.at(fmt::format("cpu{}", a)), by_id.at(fmt::format("cpu{}", b)),
                 nccl::LinkClass::kCpuInterconnect, s.cpu.interconnect_bandwidth_GBps,
                 s.cpu.interconnect_latency_us, 1, cpu_nccl);
      }
    }
    if (node == 0) {
      m.edges_per_node = m.edges.size();
    }
  }

  // Network: the switches, every node's NIC-to-leaf links, then the links between tiers.
  m.nic_of_gpu.assign(static_cast<std::size_t>(gpn), -1);
  if (nics > 0) {
    for (int i = 0; i < nics; ++i) {
      for (int gpu : s.network.nics[static_cast<std::size_t>(i)].gpus) {
        m.nic_of_gpu[static_cast<std::size_t>(gpu)] = i;
      }
    }
    build_fabric(m);
  }

  m.routes.resize(m.vertices_per_node);
  for (std::size_t v = 0; v < m.vertices_per_node; ++v) {
    m.routes[v] = routes_from(m, v);
  }
  // Every GPU must reach every other GPU and its NIC (a PCIe tree without a CPU link, e.g. two
  // sockets and no interconnect, would not).
  for (int a = 0; a < gpn; ++a) {
    for (int b = 0; b < gpn; ++b) {
      if (!m.route(m.gpu_vertex[static_cast<std::size_t>(a)],
                   m.gpu_vertex[static_cast<std::size_t>(b)])
               .reachable) {
        throw Error(fmt::format("{}: GPU {} cannot reach GPU {} inside a node", s.origin, a, b));
      }
    }
    const int nic = m.nic_of_gpu[static_cast<std::size_t>(a)];
    if (nic >= 0 && !m.route(m.gpu_vertex[static_cast<std::size_t>(a)],
                             m.nic_vertex[static_cast<std::size_t>(nic)])
                         .reachable) {
      throw Error(
          fmt::format("{}: GPU {} cannot reach its NIC {} inside a node", s.origin, a, nic));
    }
  }
  impl_ = std::move(impl);
  apply_slow_parts(m);
}

// After the routes: a degraded part carries traffic slower, but neither routing nor NCCL's view
// of the topology (nccl_bw) changes, as with a link that trained down or a throttled GPU.
void Cluster::apply_slow_parts(Impl& m) const {
  const ClusterSpec& s = m.spec;
  auto check_factor = [&](double f, const std::string& what) {
    if (!std::isfinite(f) || f < 1.0 || f > 1e6) {
      throw Error(fmt::format("{}: the slowdown factor must be from 1 to 1e6, got {}", what, f));
    }
  };
  if (!s.slow_gpus.empty()) {
    m.compute_slowdown.assign(static_cast<std::size_t>(s.gpu_count()), 1.0);
    for (const SlowGpu& g : s.slow_gpus) {
      const std::string what = fmt::format("--slow-gpu {}={}", g.gpu, g.factor);
      if (g.gpu < 0 || g.gpu >= s.gpu_count()) {
        throw Error(
            fmt::format("{}: cluster '{}' has GPUs 0..{}", what, s.name, s.gpu_count() - 1));
      }
      check_factor(g.factor, what);
      if (std::count_if(s.slow_gpus.begin(), s.slow_gpus.end(),
                        [&](const SlowGpu& o) { return o.gpu == g.gpu; }) > 1) {
        throw Error(fmt::format("{}: GPU {} is slowed twice", what, g.gpu));
      }
      m.compute_slowdown[static_cast<std::size_t>(g.gpu)] = g.factor;
    }
  }
  for (const SlowLink& l : s.slow_links) {
    const std::string what = fmt::format("--slow-link {}-{}={}", l.a, l.b, l.factor);
    check_factor(l.factor, what);
    if (std::count_if(s.slow_links.begin(), s.slow_links.end(), [&](const SlowLink& o) {
          return (o.a == l.a && o.b == l.b) || (o.a == l.b && o.b == l.a);
        }) > 1) {
      throw Error(
          fmt::format("{}: the link between '{}' and '{}' is slowed twice", what, l.a, l.b));
    }
    std::vector<std::string> ends_of_a;  // for the error: where `a` does lead
    bool found = false;
    for (std::size_t id = 0; id < m.edges.size(); ++id) {
      const auto e = m.edges[id];
      const std::string x = name_of(m.graph[boost::source(e, m.graph)].endpoint);
      const std::string y = name_of(m.graph[boost::target(e, m.graph)].endpoint);
      if ((x == l.a && y == l.b) || (x == l.b && y == l.a)) {
        internal::EdgeProps& p = m.graph[e];
        p.bandwidth_GBps /= l.factor;
        found = true;
      } else if (x == l.a || y == l.a) {
        ends_of_a.push_back(x == l.a ? y : x);
      }
    }
    if (!found) {
      throw Error(fmt::format(
          "{}: cluster '{}' has no link between '{}' and '{}'{}", what, s.name, l.a, l.b,
          ends_of_a.empty()
              ? fmt::format(" ('{}' is not a part of it; parts are named like node0/gpu0, "
                            "node0/nvswitch0, node0/nic0, leaf0, spine)",
                            l.a)
              : fmt::format("; '{}' links to {}", l.a, fmt::join(ends_of_a, ", "))));
    }
  }
}

double Cluster::compute_slowdown(int gpu) const {
  const std::vector<double>& f = impl_->compute_slowdown;
  return f.empty() || gpu < 0 || static_cast<std::size_t>(gpu) >= f.size()
             ? 1.0
             : f[static_cast<std::size_t>(gpu)];
}

Cluster::~Cluster() = default;
Cluster::Cluster(const Cluster&) = default;
Cluster& Cluster::operator=(const Cluster&) = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

const ClusterSpec& Cluster::spec() const {
  return impl_->spec;
}

GpuLocation Cluster::locate(int rank) const {
  if (rank < 0 || rank >= gpu_count()) {
    throw Error(fmt::format("rank {} is not in cluster '{}' ({} nodes x {} GPUs: ranks 0..{})",
                            rank, name(), nodes(), gpus_per_node(), gpu_count() - 1));
  }
  return GpuLocation{rank / gpus_per_node(), rank % gpus_per_node()};
}

int Cluster::nic_of(int local) const {
  if (local < 0 || local >= gpus_per_node()) {
    throw Error(fmt::format("local GPU {} does not exist in cluster '{}' (GPUs 0..{})", local,
                            name(), gpus_per_node() - 1));
  }
  const int nic = impl_->nic_of_gpu[static_cast<std::size_t>(local)];
  if (nic < 0) {
    throw Error(fmt::format("cluster '{}' has no NICs", name()));
  }
  return nic;
}

Path Cluster::path(int a, int b) const {
  const GpuLocation la = locate(a);
  const GpuLocation lb = locate(b);
  const Impl& m = *impl_;
  Path p;
  p.from_rank = a;
  p.to_rank = b;
  p.bottleneck_GBps = kInf;
  if (a == b) {
    return p;
  }
  // Collect the links crossed (global link, the vertex it is left from, the share) then turn
  // them into hops.
  std::vector<internal::FabricHop> crossed;
  const auto append_local = [&](int node, const LocalRoute& r) {
    const std::size_t vb = static_cast<std::size_t>(node) * m.vertices_per_node;
    const std::size_t eb = static_cast<std::size_t>(node) * m.edges_per_node;
    for (std::size_t k = 0; k < r.edges.size(); ++k) {
      crossed.push_back({eb + r.edges[k], vb + r.vertices[k], vb + r.vertices[k + 1], 1.0, 0});
    }
  };
  const std::size_t ga = m.gpu_vertex[static_cast<std::size_t>(la.local)];
  const std::size_t gb = m.gpu_vertex[static_cast<std::size_t>(lb.local)];
  if (la.node == lb.node) {
    const LocalRoute& r = m.route(ga, gb);
    append_local(la.node, r);
    p.type = r.type;
  } else {
    const int nic_a = nic_of(la.local);
    const int nic_b = nic_of(lb.local);
    const int leaf_a = m.leaf_of(la.node, nic_a);
    const int leaf_b = m.leaf_of(lb.node, nic_b);
    append_local(la.node, m.route(ga, m.nic_vertex[static_cast<std::size_t>(nic_a)]));
    crossed.push_back({m.nic_link(la.node, nic_a), m.nic_vertex_of(la.node, nic_a),
                       m.switches[static_cast<std::size_t>(leaf_a)].vertex, 1.0, 0});
    m.fabric_route(leaf_a, leaf_b, crossed);
    crossed.push_back({m.nic_link(lb.node, nic_b),
                       m.switches[static_cast<std::size_t>(leaf_b)].vertex,
                       m.nic_vertex_of(lb.node, nic_b), 1.0, 0});
    append_local(lb.node, m.route(m.nic_vertex[static_cast<std::size_t>(nic_b)], gb));
    p.type = nccl::PathType::kNet;
  }
  for (const internal::FabricHop& c : crossed) {
    const EdgeProps& e = m.edge(c.link);
    Hop h{c.link,       m.graph[c.from].endpoint, m.graph[c.to].endpoint,
          e.link_class, e.bandwidth_GBps,         e.latency_us,
          c.share};
    // A link that carries a share s of the bytes limits the transfer to its bandwidth / s; the
    // equal-cost paths are equally long, so the latency is the share-weighted sum.
    if (h.bandwidth_GBps / h.share < p.bottleneck_GBps) {
      p.bottleneck_GBps = h.bandwidth_GBps / h.share;
      p.bottleneck_class = h.link_class;
    }
    p.latency_us += h.latency_us * h.share;
    p.hops.push_back(h);
  }
  return p;
}

std::size_t Cluster::vertex_count() const {
  return boost::num_vertices(impl_->graph);
}
std::size_t Cluster::link_count() const {
  return impl_->edges.size();
}

Endpoint Cluster::vertex(std::size_t v) const {
  if (v >= vertex_count()) {
    throw Error(fmt::format("vertex {} does not exist ({} vertices)", v, vertex_count()));
  }
  return impl_->graph[v].endpoint;
}

Link Cluster::link(std::size_t id) const {
  if (id >= link_count()) {
    throw Error(fmt::format("link {} does not exist ({} links)", id, link_count()));
  }
  const auto& e = impl_->edges[id];
  const EdgeProps& p = impl_->graph[e];
  return Link{id,
              impl_->graph[boost::source(e, impl_->graph)].endpoint,
              impl_->graph[boost::target(e, impl_->graph)].endpoint,
              p.link_class,
              p.bandwidth_GBps,
              p.latency_us,
              p.count};
}

std::string Cluster::name_of(const Endpoint& e) const {
  const ClusterSpec& s = spec();
  if (e.kind == VertexKind::kPcieSwitch && e.index >= 0 &&
      static_cast<std::size_t>(e.index) < s.pcie.switches.size()) {
    return fmt::format("node{}/pcie:{}", e.node,
                       s.pcie.switches[static_cast<std::size_t>(e.index)].id);
  }
  if (e.kind == VertexKind::kNetworkSwitch && e.node == -1 && e.index < 0) {
    return s.network.fabric.kind == FabricKind::kRailOptimized ? "spine" : "switch";
  }
  return describe(e);
}

std::string gpus_differ(const Cluster& cluster) {
  const int per_node = cluster.gpus_per_node();
  using HopView = std::tuple<int, double, double, double, int>;  // class, GB/s, us, share, sharers
  const auto hops_of = [](const Path& p, const std::map<std::size_t, int>* sharers) {
    std::vector<HopView> v;
    for (const Hop& h : p.hops) {
      v.emplace_back(static_cast<int>(h.link_class), h.bandwidth_GBps, h.latency_us, h.share,
                     sharers != nullptr ? sharers->at(h.link_id) : 0);
    }
    return v;
  };
  std::map<std::size_t, int> sharers;
  std::vector<Path> out(static_cast<std::size_t>(per_node));
  if (cluster.nodes() > 1) {
    for (int g = 0; g < per_node; ++g) {
      out[static_cast<std::size_t>(g)] = cluster.path(g, g + per_node);
      for (const Hop& h : out[static_cast<std::size_t>(g)].hops) {
        ++sharers[h.link_id];
      }
    }
  }
  std::vector<std::vector<HopView>> first;
  for (int g = 0; g < per_node; ++g) {
    std::vector<std::vector<HopView>> view;
    for (int o = 0; o < per_node; ++o) {
      if (o != g) {
        view.push_back(hops_of(cluster.path(g, o), nullptr));
      }
    }
    std::sort(view.begin(), view.end());
    if (cluster.nodes() > 1) {
      view.push_back(hops_of(out[static_cast<std::size_t>(g)], &sharers));
    }
    if (g == 0) {
      first = std::move(view);
    } else if (view != first) {
      const bool to_net = cluster.nodes() > 1 && view.back() != first.back();
      return fmt::format("local GPUs 0 and {} see the node differently ({})", g,
                         to_net ? "their paths to the network, or how many GPUs share them"
                                : "their paths to the node's other GPUs");
    }
  }
  return "";
}

bool share_a_node(const Cluster& cluster, std::span<const std::uint32_t> a,
                  std::span<const std::uint32_t> b) {
  const auto per_node = static_cast<std::uint32_t>(cluster.gpus_per_node());
  return std::any_of(a.begin(), a.end(), [&](std::uint32_t x) {
    return std::any_of(b.begin(), b.end(),
                       [&](std::uint32_t y) { return x / per_node == y / per_node; });
  });
}

Cluster load_cluster(std::string_view name_or_path, std::optional<int> nodes) {
  return Cluster(load_cluster_spec(name_or_path, nodes));
}

std::string_view to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::kGpu:
      return "gpu";
    case VertexKind::kNvSwitch:
      return "nvswitch";
    case VertexKind::kPcieSwitch:
      return "pcie-switch";
    case VertexKind::kCpu:
      return "cpu";
    case VertexKind::kNic:
      return "nic";
    case VertexKind::kNetworkSwitch:
      return "network-switch";
  }
  return "?";
}

std::string describe(const Endpoint& e) {
  if (e.kind == VertexKind::kNetworkSwitch) {
    if (e.node == -2) {
      return fmt::format("spine{}", e.index);
    }
    if (e.node == -3) {
      return fmt::format("core{}", e.index);
    }
    return e.index >= 0 ? fmt::format("leaf{}", e.index) : std::string("core-switch");
  }
  return fmt::format("node{}/{}{}", e.node, to_string(e.kind), e.index);
}

}  // namespace lagom::topologies
