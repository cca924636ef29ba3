// Loading the step and the hardware of a modelling command (see step_input.hpp).
#include "step_input.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/program_options/errors.hpp>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "lagom/common/hash.hpp"
#include "warnings.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

// A measured op keeps its duration under --slow-link (the contention model runs it at its stated
// speed, docs/models.md §6); only compute ops take --slow-gpu's factor.
void warn_measured_ops(const traces::Workload& w, const HardwareOptions& hw) {
  std::size_t measured_comm = 0;
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    measured_comm += traces::is_comm(w.kind(op)) && w.duration_ns(op) != traces::kNoDuration;
  }
  if (!hw.slow_link.empty() && measured_comm > 0) {
    warn(fmt::format(
        "--slow-link: {} of the workload's communication ops carry a measured duration_us, which "
        "a slower link does not change (the models time only ops without one)",
        measured_comm));
  }
}

// A folded workload (a file exported with --fold: a group spans more GPUs than it holds ranks)
// stands for replicas it does not simulate; refused where that is not exact (`why` follows the
// group in the message).
void refuse_folded_workload(const LoadedWorkload& in, std::string_view why) {
  for (const traces::Group& g : in.workload.groups()) {
    if (g.folded()) {
      throw po::error(fmt::format(
          "{} is folded (group '{}' spans {} GPUs with {} ranks{}){}; export the step without "
          "--fold",
          in.source, g.name, g.cluster_gpus().size(), g.ranks.size(),
          g.mirrors.empty() ? "" : fmt::format(", {} more instances", g.mirrors.size()), why));
    }
  }
}

}  // namespace

void refuse_fold_on_oversubscribed_fabric(const topologies::ClusterSpec& spec,
                                          const ModelOptions& mo) {
  if (const std::string tier = topologies::oversubscribed_tier(spec); mo.fold && !tier.empty()) {
    throw po::error(fmt::format(
        "--fold simulates one data-parallel replica, but the fabric is oversubscribed ({}): the "
        "other replicas' traffic through it would be missing; leave out --fold",
        tier));
  }
}

std::string fold_inexact(const topologies::Cluster& cluster, const traces::Workload& w) {
  // Mirrors stand in exactly where each runs as the instance simulated: on alike GPUs, in the
  // same place of everything else that runs (docs/models.md §8, Folding). Three layouts break
  // it: a mirror on a node whose GPUs differ from the instance's; instances that share a node,
  // whose places in the trees that span them (a chain's head, middle, tail) then differ; and a
  // mirror whose neighbours are joined by other links (a replica across two leaf groups).
  const int per_node = cluster.gpus_per_node();
  bool near = false;
  std::string shared;  // the first communicator sharing a node with its instances
  std::string routed;  // the first whose mirror's neighbours are joined by other links
  // The links between neighbours of a communicator, as the fabric sees them (class, bandwidth,
  // latency, share of each hop): a replica straddling two leaf groups crosses the spine where
  // replica 0 does not.
  const auto route = [&](std::uint32_t a, std::uint32_t b) {
    std::vector<std::tuple<int, double, double, double>> hops;
    for (const topologies::Hop& h : cluster.path(static_cast<int>(a), static_cast<int>(b)).hops) {
      hops.emplace_back(static_cast<int>(h.link_class), h.bandwidth_GBps, h.latency_us, h.share);
    }
    return hops;
  };
  // A GPU beyond the cluster is an error the models report, naming the group (ModelCost).
  const auto outside = [&](std::span<const std::uint32_t> gpus) {
    return std::any_of(gpus.begin(), gpus.end(), [&](std::uint32_t gpu) {
      return gpu >= static_cast<std::uint32_t>(cluster.gpu_count());
    });
  };
  for (const traces::Group& g : w.groups()) {
    if (g.mirrors.empty() || outside(g.cluster_gpus()) ||
        std::any_of(g.mirrors.begin(), g.mirrors.end(),
                    [&](const std::vector<std::uint32_t>& m) { return outside(m); })) {
      continue;
    }
    const std::span<const std::uint32_t> own = g.cluster_gpus();
    for (std::size_t i = 0; i + 1 < own.size() && routed.empty(); ++i) {
      const auto hops = route(own[i], own[i + 1]);
      for (const std::vector<std::uint32_t>& m : g.mirrors) {
        if (route(m[i], m[i + 1]) != hops) {
          routed = fmt::format(
              "communicator '{}' stands for an instance whose GPUs {} and {} are joined by other "
              "links than its own GPUs {} and {}",
              g.name, m[i], m[i + 1], own[i], own[i + 1]);
          break;
        }
      }
    }
    std::vector<int> nodes;
    for (std::uint32_t gpu : own) {
      nodes.push_back(static_cast<int>(gpu) / per_node);
    }
    std::sort(nodes.begin(), nodes.end());
    const bool several = std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end();
    for (const std::vector<std::uint32_t>& m : g.mirrors) {
      if (topologies::share_a_node(cluster, own, m)) {
        near = true;
        if (several && shared.empty()) {
          shared = g.name;
        }
      }
    }
  }
  std::vector<std::string> why;
  if (const std::string differ = near ? topologies::gpus_differ(cluster) : ""; !differ.empty()) {
    why.push_back(differ);
  }
  if (!shared.empty()) {
    why.push_back(fmt::format(
        "communicator '{}' shares nodes with the instances it stands for, where they can hold "
        "different places in the rings and trees that span them",
        shared));
  }
  if (!routed.empty()) {
    why.push_back(routed);
  }
  return fmt::format("{}", fmt::join(why, "; "));
}

void warn_if_fold_inexact(const topologies::Cluster& cluster, const std::string& why) {
  // Once per cluster and process (lagom reproduce sets up dozens of steps).
  static std::mutex once_mutex;
  static std::set<std::string> warned;
  const std::lock_guard<std::mutex> lock(once_mutex);
  if (!why.empty() && warned.insert(cluster.name()).second) {
    warn(fmt::format(
        "folding on '{}', where {}: the instances the folded step stands for would not all run "
        "as the one simulated, so it is close but not exact (0.002% for phi-2 tp=2 pp=2 dp=4 on "
        "a40-pcie x2, 0.14% for a search's plan of tree all-reduces for phi-2 tp=2 dp=8 on "
        "dgx-a100 x2); run unfolded (--no-fold for a search) for the exact step",
        cluster.name(), why));
  }
}

bool replicas_may_differ(const HardwareOptions& hw, const ModelOptions& mo) {
  return hw.degraded() || !mo.placement.empty();
}

void refuse_fold_if_replicas_differ(const HardwareOptions& hw, const ModelOptions& mo,
                                    std::string_view instead) {
  if (!mo.fold || !replicas_may_differ(hw, mo)) {
    return;
  }
  std::vector<std::string> why;
  if (!hw.slow_gpu.empty()) {
    why.emplace_back("--slow-gpu");
  }
  if (!hw.slow_link.empty()) {
    why.emplace_back("--slow-link");
  }
  if (!mo.placement.empty()) {
    why.emplace_back("--placement");
  }
  throw po::error(fmt::format(
      "{} can make data-parallel replicas differ, which --fold assumes they do not: leave out "
      "--fold ({})",
      fmt::join(why, " and "), instead));
}

StepInput load_step_input(const WorkloadInput& input, const HardwareOptions& hw, ModelOptions mo,
                          const po::variables_map& vm, bool need_cluster) {
  const bool from_model = model_requested(mo, vm);
  if (from_model && (!vm["workload"].defaulted() || vm.count("chakra"))) {
    throw po::error("--workload, --chakra and --model are alternatives; give one");
  }
  if (need_cluster && hw.cluster.empty()) {
    throw po::error("--cluster is required (the collectives are timed on its GPUs)");
  }
  if (from_model && hw.cluster.empty()) {
    throw po::error("--model needs --cluster (the generated step is sized to its GPUs)");
  }
  if (hw.cluster.empty() && (hw.nodes.given() || !hw.profile.empty())) {
    throw po::error("--nodes and --profile need --cluster");
  }
  if (hw.cluster.empty() && (hw.degraded() || !hw.down_node.empty())) {
    throw po::error("--slow-gpu, --slow-link and --down-node need --cluster");
  }
  if (!hw.down_node.empty() && !from_model) {
    throw po::error(
        "--down-node drops the data-parallel replicas that use the node: it needs a generated "
        "step (--model); a workload file's ranks are fixed");
  }
  refuse_fold_if_replicas_differ(hw, mo,
                                 "--down-node keeps the remaining replicas alike and folds");
  StepInput s;
  if (!hw.cluster.empty()) {
    s.hardware = load_hardware(hw);
  }
  if (from_model) {
    mo.down_nodes = down_nodes(hw, s.hardware->cluster.nodes());
    const int per_node = s.hardware->cluster.gpus_per_node();
    for (const topologies::SlowGpu& g : s.hardware->cluster.spec().slow_gpus) {
      if (std::binary_search(mo.down_nodes.begin(), mo.down_nodes.end(), g.gpu / per_node)) {
        throw po::error(
            fmt::format("--slow-gpu {}: GPU {} is on node {}, which --down-node takes "
                        "out",
                        g.gpu, g.gpu, g.gpu / per_node));
      }
    }
    // Folding simulates one replica: the others' traffic through an oversubscribed tier would
    // be missing, and the tier would look idle.
    if (mo.fold && !topologies::oversubscribed_tier(s.hardware->cluster.spec()).empty()) {
      if (!mo.fold_by_default) {
        refuse_fold_on_oversubscribed_fabric(s.hardware->cluster.spec(), mo);
      }
      mo.fold = false;  // a search's own choice: run it unfolded
    }
    mo.gpu_memory_bytes = s.hardware->profile.gpu.memory_GB.value * 1e9;
    mo.gpus_alike = topologies::gpus_differ(s.hardware->cluster).empty();
    models::GeneratedStep step = generate_from_options(mo, s.hardware->cluster.gpu_count(),
                                                       s.hardware->cluster.gpus_per_node());
    // A search folds only where that is exact; --fold is the user's choice, with a warning.
    if (const std::string why = fold_inexact(s.hardware->cluster, step.workload); !why.empty()) {
      if (mo.fold_by_default) {
        mo.fold = false;
        step = generate_from_options(mo, s.hardware->cluster.gpu_count(),
                                     s.hardware->cluster.gpus_per_node());
      } else {
        warn_if_fold_inexact(s.hardware->cluster, why);
      }
    }
    s.memory = step.memory;
    s.generated = step.description;
    s.folded = step.folded_replicas;
    s.model_flops = step.figures.flops;
    s.tokens_per_step = step.figures.tokens;
    s.in = LoadedWorkload{std::move(step.workload), "model:" + mo.model,
                          "fnv1a64:" + hex64(fnv1a64(s.generated))};
  } else {
    s.in = load_workload_input(input, vm);
    if (s.in.workload.op_count() == 0) {
      warn(fmt::format("{} has no ops: its step time is 0", s.in.source));
    }
  }
  if (s.hardware && !from_model) {
    // A folded workload file (its groups' mirrors): exact only where the mirrors run alike.
    warn_if_fold_inexact(s.hardware->cluster, fold_inexact(s.hardware->cluster, s.in.workload));
    // A folded workload file on an oversubscribed fabric: the replicas it stands for would share
    // the tier, and their traffic is not in it.
    if (const std::string tier = topologies::oversubscribed_tier(s.hardware->cluster.spec());
        !tier.empty()) {
      refuse_folded_workload(s.in, fmt::format(", but the fabric is oversubscribed ({}): the "
                                               "replicas it stands for would share it",
                                               tier));
    }
  }
  if (hw.degraded()) {
    // A folded workload: its ranks stand for every replica, which a slow part makes differ.
    refuse_folded_workload(s.in, ": --slow-gpu and --slow-link make replicas differ");
    warn_measured_ops(s.in.workload, hw);
    // A slow GPU that runs no rank changes nothing (a workload on fewer GPUs than the cluster,
    // or an idle GPU of a replica a down node dropped): say so rather than ignore it.
    std::vector<char> used(static_cast<std::size_t>(s.hardware->cluster.gpu_count()), 0);
    for (traces::Rank r = 0; r < s.in.workload.rank_count(); ++r) {
      const std::uint32_t gpu = s.in.workload.gpu_of(r);
      if (gpu < used.size()) {
        used[gpu] = 1;
      }
    }
    for (const topologies::SlowGpu& g : s.hardware->cluster.spec().slow_gpus) {
      if (!used[static_cast<std::size_t>(g.gpu)]) {
        warn(
            fmt::format("--slow-gpu {}={}: GPU {} runs no rank of this step, so it changes "
                        "nothing",
                        g.gpu, g.factor, g.gpu));
      }
    }
  }
  return s;
}

}  // namespace lagom::cli
