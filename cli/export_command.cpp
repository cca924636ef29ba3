// `lagom export`: write a workload out as Chakra execution traces or as workload JSON.
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/traces/chakra.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload_json.hpp"
#include "model_input.hpp"
#include "step_input.hpp"
#include "workload_input.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

int export_command(const std::vector<std::string>& args) {
  std::string format;
  std::string out_path;
  WorkloadInput input;
  po::options_description desc(
      "Usage: lagom export --format chakra|json --out PREFIX|FILE\n"
      "                    [--workload FILE|builtin:NAME | --chakra PREFIX [--comm-groups "
      "FILE]]\n"
      "       lagom export --format chakra|json --out PREFIX|FILE --model NAME --parallel P\n"
      "                    [--mbs M] [--gbs G] [--seq S] [--cluster PRESET [--nodes N]] ...\n\n"
      "Writes a workload out after checking it (matching, deadlocks). --format chakra writes\n"
      "one Chakra ET file per rank, PREFIX.<rank>.et, and the communicators' ranks in\n"
      "PREFIX.comm_groups.json (docs/formats/chakra.md); --format json writes one workload JSON\n"
      "file (docs/formats/workload.md; --out - for stdout). Without an input option it exports\n"
      "the built-in example " +
      std::string(kDefaultWorkload) + ".\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "format", po::value(&format), "chakra (Chakra ET protobuf) or json (Lagom workload)")(
      "out,o", po::value(&out_path),
      "chakra: the path prefix of the files; json: the file, or - for stdout");
  add_workload_input_options(desc, input);
  HardwareOptions hw;
  ModelOptions mo;
  add_hardware_options(desc, hw);
  add_model_options(desc, mo);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm)) {
    return kExitOk;  // --help
  }
  if (format.empty()) {
    throw po::error("--format is required (chakra or json)");
  }
  if (format != "chakra" && format != "json") {
    throw po::error(fmt::format("--format must be chakra or json, got '{}'", format));
  }
  if (out_path.empty()) {
    throw po::error(format == "chakra" ? "--out PREFIX is required" : "--out FILE is required");
  }
  if (format == "chakra" && out_path == "-") {
    throw po::error("--format chakra writes several files: --out takes a path prefix, not -");
  }

  refuse_unsupported_what_ifs(
      hw, {false, false, true},
      "a workload file carries ops, not the cluster's speeds: pass --slow-gpu and --slow-link to "
      "the command that simulates it");
  if (!hw.down_node.empty() && hw.cluster.empty()) {
    throw po::error("--down-node needs --cluster (the nodes are the cluster's)");
  }
  LoadedWorkload in;
  if (model_requested(mo, vm)) {
    if (!vm["workload"].defaulted() || vm.count("chakra")) {
      throw po::error("--workload, --chakra and --model are alternatives; give one");
    }
    // With a cluster the step is checked against its GPU count and memory; without, it uses as
    // many GPUs as the parallel degrees say.
    int gpus = 0;
    int per_node = 8;
    refuse_fold_if_replicas_differ(hw, mo, "export the step unfolded");
    if (!hw.cluster.empty()) {
      const Hardware h = load_hardware(hw);
      refuse_fold_on_oversubscribed_fabric(h.cluster.spec(), mo);
      gpus = h.cluster.gpu_count();
      per_node = h.cluster.gpus_per_node();
      mo.gpu_memory_bytes = h.profile.gpu.memory_GB.value * 1e9;
      mo.down_nodes = down_nodes(hw, h.cluster.nodes());
    }
    models::GeneratedStep step = generate_from_options(mo, gpus, per_node);
    in = LoadedWorkload{std::move(step.workload), "model:" + mo.model,
                        "fnv1a64:" + hex64(fnv1a64(step.description))};
  } else {
    if (!hw.cluster.empty() || hw.nodes.given() || !hw.profile.empty() || !hw.down_node.empty()) {
      throw po::error("--cluster, --nodes, --profile and --down-node apply to --model");
    }
    in = load_workload_input(input, vm);
  }
  const traces::Workload& w = in.workload;
  traces::analyze(w, in.source);

  if (format == "json") {
    if (out_path == "-") {
      traces::write_workload_json(w, std::cout);
      return kExitOk;
    }
    write_file_with(out_path, [&](std::ostream& out) { traces::write_workload_json(w, out); });
    fmt::print("exported {} ({} ranks, {} ops) as workload JSON to {}\n", in.source, w.rank_count(),
               w.op_count(), out_path);
    return kExitOk;
  }
  std::vector<std::string> written;
  try {
    written = traces::write_chakra(w, out_path);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", in.source, e.what()));
  }
  fmt::print("exported {} ({} ranks, {} ops) as Chakra ET {}: {}{}, {}\n", in.source,
             w.rank_count(), w.op_count(), traces::kChakraWriteVersion, written.front(),
             w.rank_count() > 1 ? fmt::format(" .. {}", written[written.size() - 2]) : "",
             written.back());
  return kExitOk;
}

}  // namespace lagom::cli
