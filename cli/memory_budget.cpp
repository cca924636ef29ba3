// Memory estimates of what commands build, checked before building it.
#include "memory_budget.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "lagom/common/error.hpp"
#include "lagom/common/memory.hpp"

namespace lagom::cli {

namespace {

// The largest op count a Workload holds (traces/workload.cpp: 32-bit op ids, two reserved).
constexpr double kMaxWorkloadOps = 4294967293.0;

double file_bytes(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(n);
}

}  // namespace

void check_generated_step(const models::StepSize& size, std::string_view what) {
  const std::string remedy =
      "use fewer micro-batches (--gbs), --fold to simulate one data-parallel replica for all, "
      "or fewer GPUs";
  if (size.ops > kMaxWorkloadOps) {
    throw Error(
        fmt::format("{}: the step would hold {:.3g} ops, more than a workload can "
                    "(4,294,967,293); {}",
                    what, size.ops, remedy));
  }
  const double ranks = static_cast<double>(size.ranks);
  check_memory(size.ops * kSimulationBytesPerOp + ranks * kSimulationBytesPerRank,
               fmt::format("{} ({:.3g} ops on {} rank{})", what, size.ops, size.ranks,
                           size.ranks == 1 ? "" : "s"),
               fmt::format("{:.0f} B per op and {:.0f} B per rank to generate and simulate",
                           kSimulationBytesPerOp, kSimulationBytesPerRank),
               remedy);
}

void check_search_threads(double ops, int jobs, std::string_view what) {
  if (jobs <= 1) {
    return;
  }
  check_memory(ops * (kSimulationBytesPerOp + (jobs - 1) * kSearchThreadBytesPerOp),
               fmt::format("{} on {} threads ({:.3g} ops)", what, jobs, ops),
               fmt::format("{:.0f} B per op, and {:.0f} B per op for each thread beyond the first",
                           kSimulationBytesPerOp, kSearchThreadBytesPerOp),
               "use fewer threads (-j)");
}

void check_cluster(std::string_view name, const topologies::ClusterSpec& spec) {
  const double gpus = static_cast<double>(spec.gpus_per_node) * spec.nodes;
  // One graph vertex per NIC entry (an entry of `count` NICs is one bundle).
  const double nics = static_cast<double>(spec.network.nics.size()) * spec.nodes;
  double switches = 0;
  double links = 0;
  if (spec.network.fabric.kind == topologies::FabricKind::kFatTree && !spec.network.nics.empty()) {
    const topologies::FatTreeLayout l = topologies::fat_tree_layout(spec);
    switches = static_cast<double>(l.leaves) + l.spines() + l.cores();
    links = static_cast<double>(l.leaves) * l.spines_per_pod +
            static_cast<double>(l.spines()) * l.cores_per_plane;
  }
  const double bytes = gpus * kClusterBytesPerGpu + nics * kClusterBytesPerNic +
                       switches * kClusterBytesPerSwitch + links * kClusterBytesPerSwitchLink;
  // Under 1 MiB (clusters of a few hundred GPUs) there is nothing to refuse: the process itself
  // holds more, and a tight --max-memory meant for the step would blame the cluster.
  if (bytes < 1024.0 * 1024.0) {
    return;
  }
  check_memory(bytes,
               fmt::format("cluster '{}' ({:.0f} GPUs, {:.0f} NICs{})", name, gpus, nics,
                           switches > 0 ? fmt::format(", {:.0f} network switches, {:.0f} links "
                                                      "between them",
                                                      switches, links)
                                        : std::string()),
               switches > 0 ? fmt::format("{:.0f} B per GPU, {:.0f} B per NIC, {:.0f} B per "
                                          "switch and {:.0f} B per switch link to model",
                                          kClusterBytesPerGpu, kClusterBytesPerNic,
                                          kClusterBytesPerSwitch, kClusterBytesPerSwitchLink)
                            : fmt::format("{:.0f} B per GPU and {:.0f} B per NIC to model",
                                          kClusterBytesPerGpu, kClusterBytesPerNic),
               "use fewer nodes (--nodes)");
}

void check_workload_file(const std::string& path) {
  const double bytes = file_bytes(path);
  check_memory(bytes * kWorkloadJsonBytesPerByte,
               fmt::format("reading workload file '{}' ({:.3g} bytes)", path, bytes),
               fmt::format("{:.0f} bytes of memory per byte of JSON", kWorkloadJsonBytesPerByte),
               "export it as Chakra ET (lagom export --format chakra), which reads in less");
}

void check_chakra_files(const std::vector<std::string>& paths) {
  double bytes = 0;
  for (const std::string& p : paths) {
    bytes += file_bytes(p);
  }
  check_memory(bytes * kChakraBytesPerByte,
               fmt::format("reading {} Chakra ET files ({:.3g} bytes)", paths.size(), bytes),
               fmt::format("{:.0f} bytes of memory per byte of trace", kChakraBytesPerByte),
               "simulate fewer ranks");
}

}  // namespace lagom::cli
