// `lagom simulate`: replay a workload and report the step.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/common/units.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/search/plan.hpp"
#include "lagom/search/plan_source.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/sim/stats.hpp"
#include "lagom/traces/chrome_trace.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "model_input.hpp"
#include "report.hpp"
#include "step_input.hpp"
#include "workload_input.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

int run_simulate(const std::vector<std::string>& args, std::ostream& json_out) {
  WorkloadInput input;
  std::string trace_path;
  std::string plan_path;
  HardwareOptions hw;
  ModelOptions mo;
  po::options_description desc(
      "Usage: lagom simulate [--workload FILE|builtin:NAME | --chakra PREFIX [--comm-groups F]]\n"
      "                      [--cluster PRESET [--nodes N]\n"
      "                      [--profile FILE]] [--json] [--trace FILE]\n"
      "       lagom simulate --model NAME|FILE --parallel P --cluster PRESET [--nodes N]\n"
      "                      [--mbs M] [--gbs G] [--seq S] [--precision bf16] [--overlap O]\n\n"
      "Replays one training step of a workload on the discrete-event engine and reports the step\n"
      "time, per-rank and per-stream busy/idle time and a fingerprint of the event stream.\n"
      "Ops take their duration_us; with --cluster, communication ops without one are timed by\n"
      "Lagom's collective model (their pinned 'config' or NCCL's own choice) and compute ops by\n"
      "the compute model, and overlapping ops slow each other (SMs, HBM, links).\n"
      "With --model the step is generated from a model and a parallelism (docs/models.md §8).\n"
      "Without --workload or --chakra it runs the built-in example " +
      std::string(kDefaultWorkload) + ".\n\nOptions");
  desc.add_options()("help,h", "show this help")("list-workloads",
                                                 "list the built-in workloads and exit")(
      "json", "print a JSON report on stdout instead of the summary")(
      "no-op-times", "with --json: leave out the per-op \"ops\" array")(
      "no-contention",
      "with --cluster: overlapping ops run as if alone (no SM, HBM or link sharing)")(
      "plan", po::value(&plan_path),
      "with --cluster: run the collectives with a config plan (docs/formats/plan.md), as "
      "`lagom tune --out` writes it")(
      "trace", po::value(&trace_path),
      "write a Chrome/Perfetto trace (JSON) to FILE; open it in ui.perfetto.dev");
  add_workload_input_options(desc, input);
  add_hardware_options(desc, hw);
  add_model_options(desc, mo);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm)) {
    return kExitOk;  // --help
  }
  if (vm.count("list-workloads")) {
    for (const std::string& name : builtin_workloads()) {
      fmt::print("builtin:{}\n", name);
    }
    return kExitOk;
  }
  if (vm.count("list-models")) {
    for (const std::string& name : models::list_models()) {
      fmt::print("{}\n", name);
    }
    return kExitOk;
  }
  if (vm.count("no-op-times") && !vm.count("json")) {
    throw po::error("--no-op-times only applies with --json");
  }
  StepInput step = load_step_input(input, hw, mo, vm, /*need_cluster=*/false);
  const std::optional<Hardware>& hardware = step.hardware;
  const LoadedWorkload& in = step.in;
  const traces::Workload& w = in.workload;
  if (!hardware && vm.count("no-contention")) {
    throw po::error("--no-contention needs --cluster");
  }
  if (!hardware && !plan_path.empty()) {
    throw po::error("--plan needs --cluster (plans set NCCL parameters the models time)");
  }
  const sim::SimulationOptions options{!vm.count("no-contention"), in.source};
  std::unique_ptr<sim::Simulation> simulation =
      hardware ? std::make_unique<sim::Simulation>(w, hardware->cluster, hardware->profile, options)
               : std::make_unique<sim::Simulation>(w, options);
  const traces::ExecutionGraph& graph = simulation->graph();
  search::ConfigPlan plan;
  std::unique_ptr<search::PlanOverrides> overrides;
  if (!plan_path.empty()) {
    plan = search::load_plan_file(plan_path);
    overrides = std::make_unique<search::PlanOverrides>(plan, w, *simulation->cost(), plan_path);
    simulation->set_config_source(overrides.get());
  }
  const sim::SimResult result = simulation->run();
  for (const std::string& warning : simulation->warnings()) {
    fmt::print(stderr, "lagom simulate: warning: {}\n", warning);
  }
  if (simulation->warning_count() > simulation->warnings().size()) {
    fmt::print(stderr, "lagom simulate: warning: ... and {} more like these\n",
               simulation->warning_count() - simulation->warnings().size());
  }
  const sim::StepStats stats = sim::summarize(w, result);
  RunContext ctx;
  ctx.command = "simulate";
  ctx.workload_source = in.source;
  ctx.input_hash = in.input_hash;
  ctx.cost_model = simulation->cost_model_name();
  ctx.contention_model = simulation->contention_model_name();
  if (hardware) {
    ctx.peak_flops_per_gpu = hardware->profile.gpu.bf16_TFLOPS.value * 1e12;
    ctx.overrides = hardware->overrides;
  }
  ctx.memory = step.memory;
  ctx.generated = step.generated;
  ctx.folded_replicas = step.folded;
  ctx.model_flops = step.model_flops;
  if (overrides) {
    ctx.plan = fmt::format("{}: {} rules, {} communication ops matched", plan_path,
                           plan.rules.size(), overrides->matched_ops());
  }

  if (!trace_path.empty()) {
    traces::ChromeTraceOptions trace_options;
    trace_options.extra_args = [&result](traces::OpId op) {
      const traces::OpTimes& t = result.ops[op];
      return fmt::format(R"("alone_us": {}, "slowdown": {})", format_us(t.alone.count_ns()),
                         sim::slowdown(t));
    };
    write_file_with(
        trace_path,
        [&](std::ostream& out) { traces::write_chrome_trace(w, result.ops, out, trace_options); },
        "trace file");
  }
  if (vm.count("json")) {
    json_out << json_report(w, graph, result, stats, ctx, !vm.count("no-op-times")).dump(1) << "\n";
  } else {
    print_summary(std::cout, w, graph, result, stats, ctx);
    if (!trace_path.empty()) {
      fmt::print("\ntrace        {} (open in https://ui.perfetto.dev)\n", trace_path);
    }
  }
  return kExitOk;
}

int simulate_command(const std::vector<std::string>& args) {
  return run_simulate(args, std::cout);
}

}  // namespace lagom::cli
