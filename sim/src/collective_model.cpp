// Lagom's collective cost model (see collective_model.hpp for the form and its sources).
#include "lagom/sim/collective_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "lagom/common/error.hpp"

namespace lagom::sim {
namespace {

using nccl::LinkClass;

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// LL lines carry 8 B of data with 8 B of flags, LL128 lines 120 B of 128.
double wire_efficiency(nccl::Protocol p) {
  switch (p) {
    case nccl::Protocol::kLL:
      return 0.5;
    case nccl::Protocol::kLL128:
      return 120.0 / 128.0;
    case nccl::Protocol::kSimple:
      return 1.0;
  }
  return 1.0;
}

namespace {

// The class whose profile parameters a communicator's hops use: NVLink when nothing binds.
LinkClass or_nvlink(const std::optional<LinkClass>& c) {
  return c.value_or(LinkClass::kNvlink);
}

std::int64_t ceil_div(double a, double b) {
  return a <= 0 ? 0 : static_cast<std::int64_t>(std::ceil(a / b - 1e-12));
}

int ceil_log2(int x) {
  int r = 0;
  while ((1 << r) < x) {
    ++r;
  }
  return r;
}

// One resource the collective's bytes must cross, per GPU (or per node) and direction.
struct Load {
  std::string_view name;
  double bytes;
  double capacity_GBps;  // after protocol wire efficiency
};

}  // namespace

double link_efficiency(const hardware::HardwareProfile& profile, nccl::LinkClass cls) {
  return profile.collective.link(cls).efficiency.value;
}

double busbw_factor(nccl::CollKind kind, int nranks) {
  const double n = nranks;
  switch (kind) {
    case nccl::CollKind::kAllReduce:
      return 2.0 * (n - 1) / n;
    case nccl::CollKind::kAllGather:
    case nccl::CollKind::kReduceScatter:
    case nccl::CollKind::kAllToAll:
      return (n - 1) / n;
    case nccl::CollKind::kBroadcast:
    case nccl::CollKind::kReduce:
    case nccl::CollKind::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

CollectiveModel::CollectiveModel(const hardware::HardwareProfile& profile,
                                 const topologies::CommunicatorInfo& comm)
    : profile_(profile), comm_(comm) {}

CollectiveEstimate CollectiveModel::estimate(nccl::CollKind kind, std::int64_t bytes,
                                             const nccl::CommConfig& cfg) const {
  return plan(kind, bytes, cfg, nullptr, nullptr);
}

CollectiveEstimate CollectiveModel::estimate_p2p(std::int64_t bytes, const nccl::CommConfig& cfg,
                                                 int from_gpu, int to_gpu) const {
  if (!comm_.traffic) {
    throw Error("internal error: the communicator has no traffic description");
  }
  const topologies::Footprint path = comm_.traffic->pair(from_gpu, to_gpu);
  return plan(nccl::CollKind::kSendRecv, bytes, cfg, nullptr, &path);
}

std::vector<CollectiveModel::Share> CollectiveModel::traffic(nccl::CollKind kind,
                                                             std::int64_t bytes,
                                                             const nccl::CommConfig& cfg) const {
  std::vector<Share> shares;
  plan(kind, bytes, cfg, &shares, nullptr);
  return shares;
}

double CollectiveModel::hbm_per_payload_byte(nccl::CollKind kind, const nccl::CommConfig& cfg,
                                             std::int64_t bytes) const {
  const hardware::ContentionParams& k = profile_.contention;
  const bool reduces = kind == nccl::CollKind::kAllReduce ||
                       kind == nccl::CollKind::kReduceScatter || kind == nccl::CollKind::kReduce;
  const double touches = reduces ? k.comm_hbm_reduce.value : k.comm_hbm_copy.value;
  const double in_flight = std::min(4.0 * cfg.nchannels * static_cast<double>(cfg.chunk_bytes),
                                    static_cast<double>(bytes));
  const double l2_bytes = profile_.gpu.l2_MiB.value * 1024.0 * 1024.0;
  const double spill = l2_bytes > 0 ? std::min(1.0, in_flight / l2_bytes) : 1.0;
  return touches / wire_efficiency(cfg.proto) * (1.0 + k.l2_spill.value * spill);
}

CollectiveEstimate CollectiveModel::plan(nccl::CollKind kind, std::int64_t bytes,
                                         const nccl::CommConfig& cfg, std::vector<Share>* shares,
                                         const topologies::Footprint* path) const {
  if (bytes < 0) {
    throw Error(fmt::format("collective size must be >= 0 bytes, got {}", bytes));
  }
  if (cfg.nchannels < 1 || cfg.nthreads < 1) {
    throw Error(fmt::format("{}: channels and threads must be positive", to_string(cfg)));
  }
  const hardware::CollectiveParams& cp = profile_.collective;
  const int n = comm_.nranks;
  const int nodes = comm_.nnodes;
  const int ppn = comm_.ranks_per_node_max;
  const int nc = cfg.nchannels;
  const double S = static_cast<double>(bytes);
  const double w = wire_efficiency(cfg.proto);
  const nccl::Protocol proto = cfg.proto;

  CollectiveEstimate e;
  e.launch_us = cp.launch_us.value + nc * cp.per_channel_us.value;
  if (n <= 1 || bytes == 0) {
    e.time_us = e.launch_us;
    e.bottleneck = "none";
    return e;
  }
  if (!comm_.traffic) {
    throw Error("internal error: the communicator has no traffic description");
  }
  const topologies::CommunicatorTraffic& traffic = *comm_.traffic;

  // A send's own path decides which links it crosses: the class that binds it inside a node
  // sets its channels' and hops' parameters (the communicator's ring otherwise).
  LinkClass intra_kind = or_nvlink(comm_.intra_bottleneck_class);
  if (path != nullptr) {
    std::optional<nccl::LinkClass> binding;
    for (int c = 0; c < nccl::kLinkClassCount; ++c) {
      const auto cls = static_cast<nccl::LinkClass>(c);
      if (cls != nccl::LinkClass::kNetwork && path->worst[c] > 0 &&
          (!binding || path->worst[c] > path->worst[static_cast<int>(*binding)])) {
        binding = cls;
      }
    }
    intra_kind = or_nvlink(binding);
  }
  const hardware::LinkParams& intra = cp.link(intra_kind);
  const hardware::LinkParams& net = cp.link(LinkClass::kNetwork);
  auto channel_cap = [&](const hardware::LinkParams& l) {
    const hardware::ProtocolParams& p = l.proto(proto);
    return p.channel_GBps.value * std::min(1.0, cfg.nthreads / p.saturation_threads.value);
  };
  const double intra_step = intra.proto(proto).step_us.value;
  const double net_step = net.proto(proto).step_us.value;  // used only across nodes
  const double C = static_cast<double>(std::max<std::int64_t>(cfg.chunk_bytes, 1));
  const double per_channel = S / nc;

  std::vector<Load> loads;
  // The links of a footprint carrying `volume` bytes per unit: per link class, the most loaded
  // link at the class's efficiency (and the protocol's wire efficiency unless `wire` is 1).
  auto add_links = [&](const topologies::Footprint& f, double volume, double wire) {
    if (shares != nullptr) {
      shares->push_back(Share{&f, volume, 1.0 / wire});
    }
    for (int c = 0; c < nccl::kLinkClassCount; ++c) {
      if (f.worst[c] > 0) {
        const auto cls = static_cast<nccl::LinkClass>(c);
        const double eff = cp.link(cls).efficiency.value;
        // Bytes through the busiest link of the class, at its effective bandwidth.
        loads.push_back({to_string(cls), volume * f.worst_per_byte[c],
                         eff * wire * f.worst_per_byte[c] / f.worst[c]});
      }
    }
  };
  double gpu_bytes = 0;
  auto add_channels = [&](double bytes_per_gpu, bool crosses_net) {
    gpu_bytes = bytes_per_gpu;
    if (ppn > 1) {
      loads.push_back({"channels", bytes_per_gpu, nc * channel_cap(intra) * w});
    }
    if (crosses_net) {
      loads.push_back({"channels", bytes_per_gpu, nc * channel_cap(net) * w});
    }
  };

  // Per algorithm: the resources and bytes (loads), the hops on the critical path (their
  // latency is paid once), the chunk steps (each pays an overhead pipelining does not hide) and
  // the pipeline depth (hops a chunk crosses one after another; fill for depth > 1). A hop costs
  // its wire latency (the cluster's links, from the footprint) plus the protocol's per-hop
  // overhead (the profile's step_us).
  int depth = 1;
  double hop_us = 0;
  std::int64_t steps = 0;
  double chunk_step_us = 0;  // average overhead per chunk step
  bool pipelined = false;
  // What one pipeline stage moves per channel: a chunk, or for NVLS and NVLSTree a chunk per
  // head, since every loop of their kernels advances nHeads x chunk per channel (each local GPU
  // heads a slice; nccl@v2.28.9 src/device/all_reduce.h, loopCount = nHeads * chunkCount).
  double stage = C;
  const bool multi = path != nullptr ? path->crosses_network : nodes > 1;
  const double intra_chunk = intra.proto(proto).chunk_us.value;
  const double net_chunk = net.proto(proto).chunk_us.value;
  // Hops split between intra-node links and the network.
  auto hops = [&](int total, int on_net, const topologies::Footprint& f) {
    hop_us = (total - on_net) * (intra_step + f.intra_latency_us) +
             on_net * (net_step + f.net_latency_us);
    chunk_step_us = total > 0 ? ((total - on_net) * intra_chunk + on_net * net_chunk) / total : 0;
  };
  // A tree or chain between nodes moves 2(N-1)/N of the buffer through each node's NICs (two
  // nodes: each sends its half once and receives the other's).
  const double tree_net_factor = multi ? 2.0 * (nodes - 1) / nodes : 0.0;

  switch (cfg.algo) {
    case nccl::Algorithm::kRing: {
      if (kind == nccl::CollKind::kAllReduce || kind == nccl::CollKind::kAllGather ||
          kind == nccl::CollKind::kReduceScatter) {
        const bool ar = kind == nccl::CollKind::kAllReduce;
        const double factor = (ar ? 2.0 : 1.0) * (n - 1) / n;
        const int s = ar ? 2 * (n - 1) : n - 1;
        const int s_net = multi ? (ar ? 2 * (nodes - 1) : nodes - 1) : 0;
        add_links(traffic.ring(), factor * S, w);
        add_channels(factor * S, multi);
        hops(s, s_net, traffic.ring());
        const std::int64_t loops = std::max<std::int64_t>(1, ceil_div(per_channel, n * C));
        steps = loops * s;
      } else if (kind == nccl::CollKind::kBroadcast || kind == nccl::CollKind::kReduce) {
        // A chain in ring order: the root's data flows through n-1 hops, pipelined by chunk
        // (every ring edge counted at S: the edge into the root is the one left out).
        add_links(traffic.ring(), S, w);
        add_channels(S, multi);
        depth = n - 1;
        hops(depth, multi ? nodes - 1 : 0, traffic.ring());
        steps = std::max<std::int64_t>(1, ceil_div(per_channel, C)) + depth - 1;
        pipelined = true;
      }
      // AllToAll and SendRecv (Ring by convention, as nccl::choose reports them) take the p2p
      // schedule below.
      break;
    }
    case nccl::Algorithm::kTree: {
      if (kind != nccl::CollKind::kAllReduce) {
        throw Error("Tree is an AllReduce algorithm");
      }
      // Intra-node chain, inter-node double binary tree: reduce up, broadcast down. Each chain
      // edge carries S up and S down; each node's NICs 2(N-1)/N S each way.
      add_links(traffic.tree(), S, w);
      add_channels(2.0 * S, multi);
      const int d_net = multi ? 2 * ceil_log2(nodes) : 0;
      depth = std::max(1, 2 * (ppn - 1) + d_net);
      hops(depth, d_net, traffic.tree());
      steps = std::max<std::int64_t>(1, ceil_div(per_channel, C)) + depth - 1;
      pipelined = true;
      break;
    }
    case nccl::Algorithm::kNvls:
    case nccl::Algorithm::kNvlsTree: {
      if (intra_kind != LinkClass::kNvlink || !comm_.nvls_available) {
        throw Error("NVLS needs GPUs on an NVSwitch with NVLink SHARP");
      }
      const bool ar = kind == nccl::CollKind::kAllReduce;
      if (!ar && kind != nccl::CollKind::kAllGather && kind != nccl::CollKind::kReduceScatter) {
        throw Error(fmt::format("NVLS has no schedule for {}", to_string(kind)));
      }
      // AllReduce: each GPU sends its buffer into the switch and receives the reduced result (S
      // each way). AllGather multicasts a GPU's shard up (S/n) and receives the others' down
      // ((n-1)/n S); ReduceScatter sends the others' shares up to be reduced and receives its
      // own reduced shard.
      const double shard = S / n;
      const double up = ar ? S : kind == nccl::CollKind::kAllGather ? shard : S - shard;
      const double down = ar ? S : kind == nccl::CollKind::kAllGather ? S - shard : shard;
      const double v = std::max(up, down);
      const int nvl = static_cast<int>(nccl::LinkClass::kNvlink);
      const double port_scale =
          cp.link(LinkClass::kNvlink).efficiency.value / cp.nvls_efficiency.value;
      for (const auto& [f, bytes_on] :
           {std::pair{&traffic.nvls_up(), up}, std::pair{&traffic.nvls_down(), down}}) {
        loads.push_back({"nvls", bytes_on * f->worst_per_byte[nvl],
                         cp.nvls_efficiency.value * f->worst_per_byte[nvl] / f->worst[nvl]});
        if (shares != nullptr) {
          shares->push_back(Share{f, bytes_on, port_scale});
        }
      }
      const topologies::Footprint& ports = traffic.nvls();
      loads.push_back({"channels", v, nc * channel_cap(intra)});
      gpu_bytes = v;
      int d_net = 0;
      if (cfg.algo == nccl::Algorithm::kNvlsTree) {
        if (!multi) {
          throw Error("NVLSTree needs more than one node");
        }
        add_links(traffic.network(), tree_net_factor * S, 1.0);
        loads.push_back({"channels", tree_net_factor * S / ppn, nc * channel_cap(net)});
        d_net = 2 * ceil_log2(nodes);
      } else if (multi) {
        add_links(traffic.network(), tree_net_factor * S, 1.0);
        d_net = 2;
      }
      const int d_intra = ar ? 2 : 1;
      depth = d_intra + d_net;
      hop_us = d_intra * (cp.nvls_step_us.value + ports.intra_latency_us) +
               d_net * (net_step + traffic.network().net_latency_us);
      chunk_step_us = (d_intra * cp.nvls_chunk_us.value + d_net * net_chunk) / depth;
      stage = C * std::max(1, ppn);  // the NVLS graph has a head per local GPU
      steps = std::max<std::int64_t>(1, ceil_div(per_channel, stage)) + depth - 1;
      pipelined = true;
      break;
    }
    case nccl::Algorithm::kCollNetDirect:
    case nccl::Algorithm::kCollNetChain: {
      if (!multi) {
        throw Error("CollNet needs more than one node");
      }
      // The network switch reduces: a node sends its (intra-reduced) buffer once and receives
      // the result once. Direct scatters within the node (2(ppn-1)/ppn S per GPU); Chain runs a
      // chain (2S per GPU).
      const bool direct = cfg.algo == nccl::Algorithm::kCollNetDirect;
      const double v_intra = direct ? 2.0 * S * (ppn - 1) / ppn : S;
      if (ppn > 1) {
        add_links(direct ? traffic.all_to_all() : traffic.chain(), v_intra, w);
      }
      add_links(traffic.network(), S, w);
      add_channels(direct ? v_intra : 2.0 * S, true);
      const int d_intra = direct ? std::min(1, ppn - 1) * 2 : 2 * (ppn - 1);
      depth = d_intra + 2;
      hops(depth, 2, traffic.ring());
      steps = std::max<std::int64_t>(1, ceil_div(per_channel, C)) + depth - 1;
      pipelined = true;
      break;
    }
    case nccl::Algorithm::kPat: {
      // Parallel aggregated trees for AllGather/ReduceScatter with one rank per node: log2(n)
      // rounds, each moving a growing share over the network.
      const double v = S * (n - 1) / n;
      add_links(multi ? traffic.network() : traffic.ring(), v, w);
      add_channels(v, multi);
      const int rounds = std::max(1, ceil_log2(n));
      hops(rounds, multi ? rounds : 0, traffic.ring());
      steps = std::max<std::int64_t>(1, ceil_div(per_channel, n * C)) * rounds;
      break;
    }
  }

  if (kind == nccl::CollKind::kAllToAll || kind == nccl::CollKind::kSendRecv) {
    // Point-to-point schedules (whatever `algo` says): NCCL runs AllToAll as n-1 concurrent
    // send/recv pairs and Send/Recv as one, chunked by the p2p chunk size.
    loads.clear();
    pipelined = false;
    depth = 1;
    if (kind == nccl::CollKind::kAllToAll) {
      const double share = S / n;  // to each peer
      add_links(traffic.all_to_all(), S, w);
      add_channels(share * (n - 1), multi);
      hops(1, multi ? 1 : 0, traffic.all_to_all());
      const std::int64_t per_peer = std::max<std::int64_t>(1, ceil_div(share, C));
      steps = per_peer * std::max<std::int64_t>(1, ceil_div(n - 1, nc));
    } else {
      // The sender's path to the receiver (estimate_p2p); without one, nccl-tests' sendrecv, where
      // every rank sends to the next at once, each send on its own path (across nodes through
      // one NIC: the network pattern spread it over every NIC of the node).
      const topologies::Footprint& f = path != nullptr ? *path : traffic.shift();
      add_links(f, S, w);
      add_channels(S, multi);
      hops(1, multi ? 1 : 0, f);
      steps = std::max<std::int64_t>(1, ceil_div(per_channel, C));
    }
  }

  // Each GPU's HBM serves its channels' traffic (payload units, so fill below stays per channel).
  if (gpu_bytes > 0) {
    loads.push_back({"hbm", gpu_bytes,
                     profile_.gpu.hbm_GBps.value * profile_.contention.hbm_efficiency.value /
                         hbm_per_payload_byte(kind, cfg, bytes)});
  }
  e.gpu_bytes = gpu_bytes;
  // The slowest resource sets the transfer time.
  const Load* worst = nullptr;
  for (const Load& l : loads) {
    if (!(l.capacity_GBps > 0) || !std::isfinite(l.capacity_GBps)) {
      throw Error(fmt::format("{} of {}: resource '{}' has no usable bandwidth", to_string(cfg),
                              to_string(kind), l.name));
    }
    if (worst == nullptr || l.bytes / l.capacity_GBps > worst->bytes / worst->capacity_GBps) {
      worst = &l;
    }
  }
  e.transfer_us = worst == nullptr ? 0.0 : worst->bytes / (worst->capacity_GBps * 1e3);
  if (worst != nullptr) {
    e.bottleneck_bytes = worst->bytes;
    e.bottleneck_GBps = worst->capacity_GBps;
    e.bottleneck = worst->name;
  }
  e.sync_steps = steps;
  e.hop_us = hop_us;
  e.sync_us = static_cast<double>(steps) * chunk_step_us;
  if (pipelined && depth > 1 && e.transfer_us > 0 && cfg.proto == nccl::Protocol::kSimple) {
    // Simple forwards a chunk once it has arrived: the first chunk crosses depth-1 hops before
    // the last hop starts streaming. LL and LL128 forward each 16- or 128-byte line as it
    // arrives, so their fill is the hops' latency, already counted.
    // A pipeline of k chunks through `depth` stages takes k + depth - 1 chunk times, and the k
    // chunks stream in transfer_us: a chunk time is transfer_us x chunk / per_channel, whichever
    // resource binds. (It was chunk over the binding resource's capacity per channel, which
    // mixed units when a link bound: a link's bytes are the busiest link's, not the channel's
    // payload, so the fill came out 8x too long on a DGX's eight NICs.)
    const double chunk = std::min(stage, per_channel);
    e.fill_us = (depth - 1) * e.transfer_us * chunk / per_channel;
  }
  e.time_us = e.launch_us + e.hop_us + e.sync_us + e.transfer_us + e.fill_us;
  return e;
}

}  // namespace lagom::sim
