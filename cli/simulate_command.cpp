// `lagom simulate`: replay a workload and report the step.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/resource_contention.hpp"
#include "lagom/sim/stats.hpp"
#include "lagom/traces/chrome_trace.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "report.hpp"
#include "workload_input.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

int simulate_command(const std::vector<std::string>& args) {
  WorkloadInput input;
  std::string trace_path;
  HardwareOptions hw;
  po::options_description desc(
      "Usage: lagom simulate [--workload FILE|builtin:NAME | --chakra PREFIX [--comm-groups F]]\n"
      "                      [--cluster PRESET [--nodes N]\n"
      "                      [--profile FILE]] [--json] [--trace FILE]\n\n"
      "Replays one training step of a workload on the discrete-event engine and reports the step\n"
      "time, per-rank and per-stream busy/idle time and a fingerprint of the event stream.\n"
      "Ops take their duration_us; with --cluster, communication ops without one are timed by\n"
      "Lagom's collective model (their pinned 'config' or NCCL's own choice).\n"
      "Without --workload or --chakra it runs the built-in example " +
      std::string(kDefaultWorkload) + ".\n\nOptions");
  desc.add_options()("help,h", "show this help")("list-workloads",
                                                 "list the built-in workloads and exit")(
      "json", "print a JSON report on stdout instead of the summary")(
      "no-op-times", "with --json: leave out the per-op \"ops\" array")(
      "no-contention",
      "with --cluster: overlapping ops run as if alone (no SM, HBM or link sharing)")(
      "trace", po::value(&trace_path),
      "write a Chrome/Perfetto trace (JSON) to FILE; open it in ui.perfetto.dev");
  add_workload_input_options(desc, input);
  add_hardware_options(desc, hw);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return kExitOk;
  }
  if (vm.count("list-workloads")) {
    for (const std::string& name : builtin_workloads()) {
      fmt::print("builtin:{}\n", name);
    }
    return kExitOk;
  }
  if (vm.count("no-op-times") && !vm.count("json")) {
    throw po::error("--no-op-times only applies with --json");
  }

  LoadedWorkload in = load_workload_input(input, vm);
  const traces::Workload& w = in.workload;
  const traces::ExecutionGraph graph = traces::analyze(w, in.source);
  if (hw.cluster.empty() && (hw.nodes != 0 || !hw.profile.empty())) {
    throw po::error("--nodes and --profile need --cluster");
  }
  std::optional<Hardware> hardware;
  std::unique_ptr<sim::ModelCost> cost;
  std::unique_ptr<sim::ResourceContention> contention;
  if (!hw.cluster.empty()) {
    hardware = load_hardware(hw);
    try {
      cost = std::make_unique<sim::ModelCost>(hardware->cluster, hardware->profile, w);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", in.source, e.what()));
    }
    if (!vm.count("no-contention")) {
      contention = std::make_unique<sim::ResourceContention>(*cost);
    }
  } else if (vm.count("no-contention")) {
    throw po::error("--no-contention needs --cluster");
  }
  sim::Engine engine(w, graph, sim::SimOptions{cost.get(), contention.get()});
  sim::SimResult result;
  try {
    result = engine.run();
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", in.source, e.what()));
  }
  const sim::StepStats stats = sim::summarize(w, result);
  const RunContext ctx{"simulate", in.source, in.input_hash,
                       cost ? std::string(cost->name()) : std::string("fixed (duration_us)"),
                       contention ? std::string(contention->name()) : std::string("none")};

  if (!trace_path.empty()) {
    std::ofstream out(trace_path, std::ios::binary);
    if (!out) {
      throw Error(fmt::format("cannot write trace file '{}'", trace_path));
    }
    traces::ChromeTraceOptions trace_options;
    trace_options.extra_args = [&result](traces::OpId op) {
      const traces::OpTimes& t = result.ops[op];
      return fmt::format(R"("alone_us": {}, "slowdown": {})", format_us(t.alone.count_ns()),
                         sim::slowdown(t));
    };
    traces::write_chrome_trace(w, result.ops, out, trace_options);
    out.close();
    if (!out) {
      throw Error(fmt::format("error while writing trace file '{}'", trace_path));
    }
  }
  if (vm.count("json")) {
    std::cout << json_report(w, graph, result, stats, ctx, !vm.count("no-op-times")).dump(1)
              << "\n";
  } else {
    print_summary(std::cout, w, graph, result, stats, ctx);
    if (!trace_path.empty()) {
      fmt::print("\ntrace        {} (open in https://ui.perfetto.dev)\n", trace_path);
    }
  }
  return kExitOk;
}

}  // namespace lagom::cli
