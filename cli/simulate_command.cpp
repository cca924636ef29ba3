// `lagom simulate`: replay a workload and report the step.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <charconv>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/common/numbers.hpp"
#include "lagom/common/text.hpp"
#include "lagom/common/units.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/search/plan.hpp"
#include "lagom/search/plan_source.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/sim/stats.hpp"
#include "lagom/traces/chrome_trace.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "memory_budget.hpp"
#include "model_input.hpp"
#include "report.hpp"
#include "step_input.hpp"
#include "warnings.hpp"
#include "workload_input.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

// "0-7,64" -> a mark per rank; lagom::Error naming a malformed item or a rank past the last.
std::vector<bool> rank_set(const std::string& spec, std::uint32_t ranks) {
  std::vector<bool> marks(ranks, false);
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    const auto dash = item.find('-');
    auto number = [&](std::string_view text) {
      std::uint32_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        throw Error(
            fmt::format("--trace-ranks '{}': '{}' is not a rank or a range A-B", spec, item));
      }
      if (v >= ranks) {
        throw Error(fmt::format("--trace-ranks '{}': rank {} is past the step's last rank {}", spec,
                                v, ranks - 1));
      }
      return v;
    };
    const std::string_view view(item);
    const std::uint32_t a = number(view.substr(0, dash));
    const std::uint32_t b = dash == std::string::npos ? a : number(view.substr(dash + 1));
    if (b < a) {
      throw Error(fmt::format("--trace-ranks '{}': the range {} runs backwards", spec, item));
    }
    for (std::uint32_t r = a; r <= b; ++r) {
      marks[r] = true;
    }
  }
  return marks;
}

// "START_US:END_US" -> nanoseconds; lagom::Error unless 0 <= start < end.
std::pair<std::int64_t, std::int64_t> time_window(const std::string& spec) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos) {
    throw Error(fmt::format(
        "--trace-window '{}': expected START_US:END_US with 0 <= START < END, e.g. 0:50000", spec));
  }
  const std::string what = fmt::format("--trace-window '{}'", spec);
  const double begin_us = parse_real(spec.substr(0, colon), what, 0, 1e15, "us");
  const double end_us = parse_real(spec.substr(colon + 1), what, 0, 1e15, "us");
  if (!(end_us > begin_us)) {
    throw Error(fmt::format("{}: the end ({} us) must come after the start ({} us)", what, end_us,
                            begin_us));
  }
  return {static_cast<std::int64_t>(begin_us * 1e3), static_cast<std::int64_t>(end_us * 1e3)};
}

// One row per op, written as it goes.
void write_ops_csv(const traces::Workload& w, const sim::SimResult& r, std::ostream& out) {
  out << "op,rank,stream,name,kind,bytes,group,launch_us,start_us,end_us,duration_us,alone_us,"
         "slowdown\n";
  fmt::memory_buffer buf;
  for (traces::OpId op = 0; op < w.op_count(); ++op) {
    const traces::OpTimes& t = r.ops[op];
    const traces::Rank rank = w.rank_of(op);
    fmt::format_to(std::back_inserter(buf), "{},{},{},{},{},{},{},{},{},{},{},{},{}\n", op, rank,
                   csv_quote(w.stream(w.stream_of(op)).name), csv_quote(w.name(op)),
                   traces::to_string(w.kind(op)), w.bytes(op),
                   w.group(op) == traces::kNoGroup ? "" : csv_quote(w.group_info(w.group(op)).name),
                   format_us(t.launch.count_ns()), format_us(t.start.count_ns()),
                   format_us(t.end.count_ns()), format_us(t.end.count_ns() - t.start.count_ns()),
                   format_us(t.alone.count_ns()), sim::slowdown(t));
    if (buf.size() > (1 << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

// One row per rank and stream.
void write_ranks_csv(const traces::Workload& w, const sim::StepStats& s, std::ostream& out) {
  out << "rank,stream,stream_busy_us,stream_idle_us,stream_comm_wait_us,rank_busy_us,"
         "rank_idle_us\n";
  for (traces::Rank r = 0; r < w.rank_count(); ++r) {
    for (traces::StreamId st = w.first_stream(r); st < w.last_stream(r); ++st) {
      const sim::StreamStats& ss = s.streams[st];
      out << fmt::format("{},{},{},{},{},{},{}\n", r, csv_quote(w.stream(st).name),
                         format_us(ss.busy.count_ns()), format_us(ss.idle.count_ns()),
                         format_us(ss.comm_wait.count_ns()), format_us(s.ranks[r].busy.count_ns()),
                         format_us(s.ranks[r].idle.count_ns()));
    }
  }
}

// A plan that steers nothing here, or was made on another cluster, is legal but almost
// certainly not what the user meant.
void warn_about_plan(const search::ConfigPlan& plan, const std::string& path,
                     const search::PlanOverrides& overrides, const Hardware* hardware) {
  const search::PlanContext& made = plan.context;
  if (hardware != nullptr && !made.cluster.empty()) {
    const std::string here =
        fmt::format("{} x{}", hardware->cluster.name(), hardware->cluster.nodes());
    // tune writes "name xN" and, when the job sets NCCL variables, ", NCCL_X=..." after it.
    const std::string made_on = made.cluster.substr(0, made.cluster.find(','));
    if (made_on != here) {
      warn(fmt::format("the plan '{}' was made for cluster {}, and this run is on {}", path,
                       made_on, here));
    }
  }
  if (overrides.matched_ops() == 0 && !plan.rules.empty()) {
    warn(fmt::format(
        "the plan '{}' matched no communication op of this workload: its {} rules change "
        "nothing{}",
        path, plan.rules.size(),
        made.workload.empty() ? "" : fmt::format(" (it was made for {})", made.workload)));
  }
}

}  // namespace

int run_simulate(const std::vector<std::string>& args, std::ostream& json_out) {
  WorkloadInput input;
  std::string trace_path;
  std::string trace_ranks;
  std::string trace_window;
  std::string csv_path;
  double train_tokens = 0;
  std::string csv_ranks_path;
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
      "write a Chrome/Perfetto trace (JSON) to FILE; open it in ui.perfetto.dev")(
      "trace-ranks", po::value(&trace_ranks),
      "with --trace: only these ranks, e.g. 0-7,64 (a 10,000-GPU step's trace stays small)")(
      "trace-window", po::value(&trace_window),
      "with --trace: only ops that run between START_US:END_US of the step")(
      "csv", po::value(&csv_path),
      "write one CSV row per op to FILE (times in us; docs/formats/workload.md, Reports)")(
      "csv-ranks", po::value(&csv_ranks_path),
      "write one CSV row per rank and stream to FILE (busy, idle and waiting time in us)")(
      "tokens", real_option(&train_tokens, "--tokens", 1, 1e18, "tokens"),
      "with --model: the tokens of a training run (e.g. 15e12); reports its time and GPU-hours "
      "at this step's throughput");
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
  // The trace's filters are checked before anything is loaded or simulated.
  if (trace_path.empty() && (!trace_ranks.empty() || !trace_window.empty())) {
    throw po::error("--trace-ranks and --trace-window filter --trace: give --trace FILE too");
  }
  std::optional<std::pair<std::int64_t, std::int64_t>> window;
  if (!trace_window.empty()) {
    window = time_window(trace_window);
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
    if (hardware) {
      const std::string_view here = nccl::to_string(hardware->cluster.spec().nccl_version);
      if (plan.context.nccl_version != here) {
        warn(
            fmt::format("the plan '{}' was tuned for NCCL {}, and this run emulates NCCL {} "
                        "(--nccl-version)",
                        plan_path, plan.context.nccl_version, here));
      }
    }
    overrides = std::make_unique<search::PlanOverrides>(plan, w, *simulation->cost(), plan_path);
    simulation->set_config_source(overrides.get());
    warn_about_plan(plan, plan_path, *overrides, hardware ? &*hardware : nullptr);
  }
  const sim::SimResult result = simulation->run();
  for (const std::string& warning : simulation->warnings()) {
    warn(warning);
  }
  if (simulation->warning_count() > simulation->warnings().size()) {
    warn(fmt::format("... and {} more like these",
                     simulation->warning_count() - simulation->warnings().size()));
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
  ctx.tokens_per_step = step.tokens_per_step;
  if (vm.count("tokens")) {
    if (!step.tokens_per_step) {
      throw po::error("--tokens needs a generated step (--model): a workload file has no tokens");
    }
    ctx.train_tokens = train_tokens;
  }
  if (overrides) {
    ctx.plan = fmt::format("{}: {} rules, {} communication ops matched", plan_path,
                           plan.rules.size(), overrides->matched_ops());
  }

  if (!csv_path.empty()) {
    write_file_with(
        csv_path, [&](std::ostream& out) { write_ops_csv(w, result, out); }, "CSV file");
  }
  if (!csv_ranks_path.empty()) {
    write_file_with(
        csv_ranks_path, [&](std::ostream& out) { write_ranks_csv(w, stats, out); }, "CSV file");
  }
  if (!trace_path.empty()) {
    traces::ChromeTraceOptions trace_options;
    if (!trace_ranks.empty()) {
      trace_options.ranks = rank_set(trace_ranks, w.rank_count());
    }
    if (window) {
      std::tie(trace_options.window_begin_ns, trace_options.window_end_ns) = *window;
    }
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
    write_json_report(json_out, w, graph, result, stats, ctx, !vm.count("no-op-times"));
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
