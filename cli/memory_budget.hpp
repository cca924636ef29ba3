// What the big things a command builds cost in host memory, so that an absurd request is refused
// before the allocation (lagom::check_memory, common/memory.hpp) instead of exhausting the
// machine. The figures are peaks measured on the build machine with /usr/bin/time (RSS over ops
// or over input bytes; docs/RELIABILITY.md, "Absurd sizes"), rounded up: an estimate errs on the
// side of refusing a little early, and --max-memory moves the limit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/models/generator.hpp"
#include "lagom/topologies/cluster_spec.hpp"

namespace lagom::cli {

// A simulation: the workload, its analysis and the engine's state, per op (measured 118-140 B).
inline constexpr double kSimulationBytesPerOp = 160;
// A search's extra thread (-j): one more simulation's per-run state (events, flows, per-op
// times) over the shared workload and analysis, per op (measured about 45 B).
inline constexpr double kSearchThreadBytesPerOp = 64;
// Per rank: streams, communicators, the cluster's view of its GPU (measured about 1 KiB).
inline constexpr double kSimulationBytesPerRank = 2048;
// Reading a workload JSON file: its text and its parsed document, per byte of file (measured 9.6).
inline constexpr double kWorkloadJsonBytesPerByte = 11;
// Reading a Chakra ET set: the decoded nodes and the workload, per byte of the files (measured
// 1.2; one file is decoded at a time).
inline constexpr double kChakraBytesPerByte = 2;

// A cluster's model: links, routes and NCCL's view, per GPU and per NIC (measured 1.0-1.35 KiB
// per GPU on 65,536-GPU presets, NICs included).
inline constexpr double kClusterBytesPerGpu = 2048;
inline constexpr double kClusterBytesPerNic = 1024;
// A network switch and a switch-to-switch link (vertex or edge of the graph, the switch table's
// entry): measured 180-260 B per item on fat-trees of 0.5-4 million spines (273 MB for 1.6 M
// switches and links; 2.1 GB for 12.6 M).
inline constexpr double kClusterBytesPerSwitch = 256;
inline constexpr double kClusterBytesPerSwitchLink = 256;

// A generated step of `size` (models::count_step_ops): refused when it holds more ops than a
// workload can (2^32 - 3) or would not fit in memory.
void check_generated_step(const models::StepSize& size, std::string_view what);

// A search on `jobs` threads over a workload of `ops` ops: the threads beyond the first, on top
// of the simulation already built.
void check_search_threads(double ops, int jobs, std::string_view what);

// Building the graph of `spec` (GPUs, NICs, network switches and the links between them;
// `name`: its preset or file).
void check_cluster(std::string_view name, const topologies::ClusterSpec& spec);

// Reading these files, before reading them (sizes from the file system; missing files are left
// to the reader's own error).
void check_workload_file(const std::string& path);
void check_chakra_files(const std::vector<std::string>& paths);

}  // namespace lagom::cli
