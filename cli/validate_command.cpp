// `lagom validate`: a step measured on GPUs by lagom-validate against its simulation, per op, per
// overlap group and per step, with both timelines in one Perfetto trace (docs/calibration.md).
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/calibrate/measured.hpp"
#include "lagom/calibrate/validate.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/sim/simulation.hpp"
#include "lagom/traces/chrome_trace.hpp"
#include "report.hpp"
#include "workload_input.hpp"

namespace lagom::cli {
namespace {

namespace po = boost::program_options;

nlohmann::ordered_json stats_json(const calibrate::ErrorStats& s, const traces::Workload& w) {
  return {{"ops", s.ops},
          {"median_abs_error", s.median},
          {"worst_abs_error", s.worst},
          {"worst_op", s.ops > 0 ? w.describe(s.worst_op) : std::string()}};
}

nlohmann::ordered_json xyz_json(const calibrate::XyzTotals& t) {
  return {{"groups", t.groups},
          {"comm_us", t.comm_us},
          {"compute_us", t.compute_us},
          {"span_us", t.span_us}};
}

std::string pct(double e) {
  return fmt::format("{:.1f}%", 100 * e);
}

}  // namespace

int validate_command(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--published" || a.starts_with("--published=")) {
      return validate_published_command(args);
    }
  }
  std::vector<std::string> measured_paths;
  WorkloadInput input;
  HardwareOptions hw;
  std::string trace_path;
  double min_us = 1.0;
  int worst = 10;
  po::options_description desc(
      "Usage: lagom validate --measured M.json [--measured ...] --workload W.json\n"
      "                      --cluster PRESET [--nodes N] [--profile P] [--trace T.json]\n"
      "                      [--min-us 1] [--worst 10] [--json]\n\n"
      "Compares what lagom-validate measured on GPUs (one file, or one per rank) with the\n"
      "simulation of the same workload: each op's duration (median and worst |error|, compute\n"
      "and communication apart, ops under --min-us left out), the overlap groups' X, Y and Z,\n"
      "and the step; --trace writes both timelines into one Perfetto trace.\n\n"
      "lagom validate --published FILE|DIR: published training runs against their\n"
      "simulation instead (lagom validate --published --help).\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "measured", po::value(&measured_paths)->multitoken(), "lagom-validate's output (repeatable)")(
      "trace", po::value(&trace_path), "write measured and simulated timelines to this file")(
      "min-us", real_option(&min_us, "--min-us", 1e-6, 1e12, "us")->default_value("1"),
      "ops measured shorter than this are not compared")(
      "worst", integer_option(&worst, "--worst", 0, 1000000, "ops")->default_value("10"),
      "how many of the worst ops to list")("json", "print a JSON report");
  add_workload_input_options(desc, input);
  add_hardware_options(desc, hw);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm)) {
    return kExitOk;
  }
  if (measured_paths.empty()) {
    throw po::error("--measured M.json is required (lagom-validate writes it)");
  }
  if (hw.cluster.empty()) {
    throw po::error("--cluster is required: the simulation runs on the cluster the step ran on");
  }
  std::vector<calibrate::MeasuredStep> measured;
  for (const std::string& p : measured_paths) {
    measured.push_back(calibrate::read_measured(p));
  }
  const LoadedWorkload in = load_workload_input(input, vm);
  const traces::Workload& w = in.workload;
  refuse_unsupported_what_ifs(hw, {},
                              "validate compares a measurement with the cluster as it is; a "
                              "what-if has nothing measured to compare with");
  const Hardware h = load_hardware(hw);
  sim::Simulation simulation(w, h.cluster, h.profile, sim::SimulationOptions{true, in.source});
  const sim::SimResult simulated = simulation.run();
  const calibrate::ValidationReport rep =
      calibrate::compare(w, simulation.graph(), simulated, measured, min_us);

  std::vector<const calibrate::OpComparison*> by_error;
  for (const auto& c : rep.ops) {
    if (c.measured_us >= min_us) {
      by_error.push_back(&c);
    }
  }
  std::sort(by_error.begin(), by_error.end(), [](const auto* a, const auto* b) {
    return std::abs(a->rel_error()) != std::abs(b->rel_error())
               ? std::abs(a->rel_error()) > std::abs(b->rel_error())
               : a->op < b->op;
  });
  if (!trace_path.empty()) {
    std::vector<bool> present(w.op_count(), false);
    for (const auto& c : rep.ops) {
      present[c.op] = true;
    }
    const traces::LabelledTimeline timelines[] = {{"measured", rep.measured, present},
                                                  {"simulated", simulated.ops, {}}};
    write_file_with(
        trace_path, [&](std::ostream& out) { traces::write_chrome_trace(w, timelines, out); },
        "trace file");
  }
  const double step_error =
      rep.measured_step_us > 0
          ? (rep.simulated_step_us - rep.measured_step_us) / rep.measured_step_us
          : 0;
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["context"] =
        context_block("validate", {{"workload", in.source},
                                   {"input_hash", in.input_hash},
                                   {"measured", measured_paths},
                                   {"gpu", measured.front().gpu},
                                   {"standins", rep.standins},
                                   {"cost_model", simulation.cost_model_name()},
                                   {"contention_model", simulation.contention_model_name()}});
    j["step"] = {{"measured_us", rep.measured_step_us},
                 {"simulated_us", rep.simulated_step_us},
                 {"error", step_error}};
    j["ops"] = {{"all", stats_json(rep.all, w)},
                {"compute", stats_json(rep.compute, w)},
                {"comm", stats_json(rep.comm, w)}};
    j["overlap"] = {{"measured", xyz_json(rep.measured_xyz)},
                    {"simulated", xyz_json(rep.simulated_xyz)}};
    nlohmann::ordered_json worst_ops = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < by_error.size() && static_cast<int>(i) < worst; ++i) {
      worst_ops.push_back({{"op", w.describe(by_error[i]->op)},
                           {"measured_us", by_error[i]->measured_us},
                           {"simulated_us", by_error[i]->simulated_us},
                           {"error", by_error[i]->rel_error()}});
    }
    j["worst"] = std::move(worst_ops);
    j["missing"] = rep.missing;
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("lagom validate: {} measured on {} ({} file(s)){}\n", in.source, measured.front().gpu,
             measured.size(),
             rep.standins ? "; communication stood in for by the occupier (one GPU)" : "");
  fmt::print("step         measured {:.1f} us, simulated {:.1f} us, error {:+.1f}%\n",
             rep.measured_step_us, rep.simulated_step_us, 100 * step_error);
  const auto line = [&](const char* what, const calibrate::ErrorStats& s) {
    if (s.ops == 0) {
      fmt::print("{:<12} no ops of at least {} us\n", what, min_us);
      return;
    }
    fmt::print("{:<12} {} ops, median |error| {}, worst {} ({})\n", what, s.ops, pct(s.median),
               pct(s.worst), w.describe(s.worst_op));
  };
  line("ops", rep.all);
  line("compute", rep.compute);
  line("comm", rep.comm);
  if (rep.missing.empty()) {
    fmt::print(
        "overlap      X (comm) {:.1f} / {:.1f} us, Y (compute) {:.1f} / {:.1f} us, Z (span) "
        "{:.1f} / {:.1f} us (measured / simulated)\n",
        rep.measured_xyz.comm_us, rep.simulated_xyz.comm_us, rep.measured_xyz.compute_us,
        rep.simulated_xyz.compute_us, rep.measured_xyz.span_us, rep.simulated_xyz.span_us);
  } else {
    fmt::print("missing      {} op(s) not measured (first: {}); overlap groups not compared\n",
               rep.missing.size(), rep.missing.front());
  }
  if (!by_error.empty()) {
    fmt::print("\n{:<48} {:>12} {:>12} {:>8}\n", "worst ops", "measured us", "simulated us",
               "error");
    for (std::size_t i = 0; i < by_error.size() && static_cast<int>(i) < worst; ++i) {
      fmt::print("{:<48} {:>12.1f} {:>12.1f} {:>+7.1f}%\n", w.describe(by_error[i]->op),
                 by_error[i]->measured_us, by_error[i]->simulated_us,
                 100 * by_error[i]->rel_error());
    }
  }
  if (!trace_path.empty()) {
    fmt::print("\ntrace        {} (measured and simulated; open in https://ui.perfetto.dev)\n",
               trace_path);
  }
  return kExitOk;
}

}  // namespace lagom::cli
