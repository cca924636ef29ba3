// `lagom calibrate`: fit a hardware profile's collective parameters to nccl-tests logs, or check
// a profile against them (the tables in docs/VALIDATION.md come from `check --markdown`).
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/calibrate/bundle.hpp"
#include "lagom/calibrate/fit.hpp"
#include "lagom/calibrate/gpu_fit.hpp"
#include "lagom/calibrate/nccl_tests_log.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/embedded.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/numbers.hpp"
#include "lagom/common/units.hpp"
#include "report.hpp"
#include "warnings.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

constexpr std::int64_t kMiB = 1 << 20;
constexpr std::int64_t kNoMax = std::numeric_limits<std::int64_t>::max();
// A fit whose median residual is above this is more likely a wrong cluster than a noisy log.
constexpr double kSuspectResidual = 0.25;

// What a log says about where it ran, against what the user says: legal, but a fit or a check
// across them compares different machines.
void warn_about_log(const calibrate::FitInput& in, NodeCount declared) {
  const calibrate::NcclTestsLog& log = in.log;
  const std::string log_gpu = calibrate::gpu_model_token(log.gpu);
  const std::string cluster_gpu = calibrate::gpu_model_token(in.cluster.spec().gpu_type);
  if (!log_gpu.empty() && !cluster_gpu.empty() && log_gpu != cluster_gpu) {
    warn(fmt::format("{}: the log ran on {} GPUs ({}), and cluster {} has {}", in.name, log_gpu,
                     log.gpu, in.cluster.name(), in.cluster.spec().gpu_type));
  }
  // NCCL's own choices in the log are 2.18's when it ran 2.18: say so when the emulation differs
  // (other releases have no emulation of their own; 2.28's is the closest).
  const nccl::Version emulated = in.cluster.spec().nccl_version;
  const bool log_218 = log.nccl_version.starts_with("2.18");
  if (!log.nccl_version.empty() && log_218 != (emulated == nccl::Version::k2_18)) {
    warn(fmt::format("{}: the log ran NCCL {}, and the emulation follows NCCL {}{}", in.name,
                     log.nccl_version, nccl::to_string(emulated),
                     log_218 ? " (add --nccl-version 2.18)" : " (drop --nccl-version 2.18)"));
  }
  if (declared.given() && log.nodes > 0 && log.nodes != declared.value) {
    warn(fmt::format("{}: the log ran on {} node{} ({} ranks), and {} were declared", in.name,
                     log.nodes, log.nodes == 1 ? "" : "s", log.nranks, declared.value));
  }
  std::vector<int> untimed;
  for (const calibrate::NcclTestsRow& row : log.rows) {
    const auto& t = row.out_of_place ? row.out_of_place : row.in_place;
    if (t && !(t->time_us > 0)) {
      untimed.push_back(row.line);
    }
  }
  if (!untimed.empty()) {
    warn(fmt::format("{}: {} row{} with a zero or negative time left out (line{} {})", in.name,
                     untimed.size(), untimed.size() == 1 ? "" : "s", untimed.size() == 1 ? "" : "s",
                     fmt::join(untimed, ", ")));
  }
  // Rows whose results nccl-tests found wrong (#wrong >= 1; older versions print a max error
  // there, below 1 for a correct run), and the same size, type, operation and root timed twice:
  // the fit takes them as they are.
  // And a printed algbw that is not size / time (nccl-tests prints both from one measurement,
  // to two decimals): an edited or damaged row.
  std::vector<int> wrong;
  std::vector<int> inconsistent;
  std::map<std::tuple<std::int64_t, std::string, std::string, int>, int> first_line;
  std::vector<std::string> repeated;
  for (const calibrate::NcclTestsRow& row : log.rows) {
    for (const auto& t : {row.out_of_place, row.in_place}) {
      if (t && t->wrong && *t->wrong >= 1) {
        wrong.push_back(row.line);
        break;
      }
    }
    for (const auto& t : {row.out_of_place, row.in_place}) {
      if (t && t->time_us > 0) {
        const double algbw = calibrate::algbw_GBps(row.size_bytes, t->time_us);
        if (std::abs(t->algbw_GBps - algbw) > std::max(0.02, 0.05 * algbw)) {
          inconsistent.push_back(row.line);
          break;
        }
      }
    }
    const auto [it, fresh] =
        first_line.emplace(std::tuple{row.size_bytes, row.type, row.redop, row.root}, row.line);
    if (!fresh) {
      repeated.push_back(
          fmt::format("{} B on lines {} and {}", row.size_bytes, it->second, row.line));
    }
  }
  if (!wrong.empty()) {
    warn(
        fmt::format("{}: {} row{} failed nccl-tests' own check (#wrong >= 1; line{} {}): the "
                    "times of a run with wrong results are fitted as they are",
                    in.name, wrong.size(), wrong.size() == 1 ? "" : "s",
                    wrong.size() == 1 ? "" : "s", fmt::join(wrong, ", ")));
  }
  if (!inconsistent.empty()) {
    const bool one = inconsistent.size() == 1;
    warn(
        fmt::format("{}: {} row{} print{} an algbw that is not size / time (line{} {}): the fit "
                    "uses the time",
                    in.name, inconsistent.size(), one ? "" : "s", one ? "s" : "", one ? "" : "s",
                    fmt::join(inconsistent, ", ")));
  }
  if (!repeated.empty()) {
    warn(
        fmt::format("{}: the same size, type and operation is timed more than once ({}): every "
                    "row is fitted, so two runs are mixed",
                    in.name, fmt::join(repeated, "; ")));
  }
}

// "LOG" or "LOG@CLUSTER" or "LOG@CLUSTER:NODES"; LOG is a path or builtin:NAME.
calibrate::FitInput load_input(const std::string& spec, const HardwareOptions& hw) {
  std::string log_part = spec;
  HardwareOptions where = hw;
  if (auto at = spec.rfind('@'); at != std::string::npos) {
    log_part = spec.substr(0, at);
    std::string c = spec.substr(at + 1);
    where.nodes = NodeCount{};
    if (auto colon = c.rfind(':'); colon != std::string::npos) {
      where.nodes.value = static_cast<int>(parse_integer(c.substr(colon + 1),
                                                         fmt::format("'{}': the node count", spec),
                                                         1, topologies::kMaxNodes, "nodes"));
      c = c.substr(0, colon);
    }
    where.cluster = c;
  }
  if (where.cluster.empty()) {
    throw Error(
        fmt::format("'{}': say where the log ran, with --cluster or LOG@CLUSTER[:NODES]", spec));
  }
  calibrate::NcclTestsLog log;
  std::string name;
  if (log_part.starts_with("builtin:")) {
    name = log_part.substr(8);
    log = calibrate::embedded_nccl_tests_log(name);
  } else {
    log = calibrate::read_nccl_tests_log(log_part);
    name = log_part.substr(log_part.find_last_of('/') + 1);
  }
  std::optional<int> nodes;
  if (where.nodes.given()) {
    nodes = where.nodes.value;
  } else if (log.nodes > 0) {
    nodes = log.nodes;
  }
  // The cluster as every modelling command builds it: with --nccl-env, --nccl-version, --set and
  // --scale applied (they change NCCL's own choices and the links the log is checked against).
  where.nodes = NodeCount{};
  if (nodes) {
    where.nodes.value = *nodes;
  }
  calibrate::FitInput in{name, std::move(log), load_cluster_with_what_ifs(where)};
  warn_about_log(in, where.nodes);
  return in;
}

void print_rows(const std::vector<calibrate::FitRow>& rows, bool fitted, bool markdown) {
  std::string current;
  auto summary = [&](const std::string& log) {
    std::vector<calibrate::FitRow> mine;
    for (const auto& r : rows) {
      if (r.log == log) {
        mine.push_back(r);
      }
    }
    const auto big = calibrate::summarize_errors(mine, kMiB, kNoMax);
    std::vector<calibrate::FitRow> nccl = mine;  // NCCL's own model, for comparison
    for (auto& r : nccl) {
      r.predicted_us = r.nccl_model_us;
    }
    const auto nccl_big = calibrate::summarize_errors(nccl, kMiB, kNoMax);
    const auto small = calibrate::summarize_errors(mine, 0, kMiB);
    fmt::print("{}sizes >= 1 MiB: {} rows, median |error| {:.1f}%, max {:.1f}%",
               markdown ? "\n" : "# ", big.rows, 100 * big.median, 100 * big.max);
    if (small.rows > 0) {
      fmt::print("; sizes < 1 MiB: {} rows, median {:.1f}%, max {:.1f}%", small.rows,
                 100 * small.median, 100 * small.max);
    }
    fmt::print("{}NCCL's own model, sizes >= 1 MiB: median |error| {:.1f}%, max {:.1f}%\n\n",
               markdown ? "\n\n" : "\n# ", 100 * nccl_big.median, 100 * nccl_big.max);
  };
  for (const calibrate::FitRow& r : rows) {
    if (r.log != current) {
      if (!current.empty()) {
        summary(current);
      }
      current = r.log;
      if (markdown) {
        fmt::print(
            "### {}\n\n| size | NCCL's config | measured us | predicted us | error | "
            "measured busbw GB/s | predicted busbw GB/s | NCCL's model us | NCCL's model error "
            "|\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
            r.log);
      } else {
        fmt::print("# {}\n# {:>12} {:<44} {:>10} {:>10} {:>10} {:>7} {:>8} {:>8}\n", r.log, "size",
                   "NCCL's config", "measured", fitted ? "prior" : "", "predicted", "error",
                   "busbw", "pred bw");
      }
    }
    if (markdown) {
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {:.1f} | {:.1f} | {:.1f} | {:+.1f}% |\n",
                 format_bytes(r.size_bytes), nccl::to_string(r.config), r.measured_us,
                 r.predicted_us, 100 * r.rel_error(), r.measured_busbw_GBps(),
                 r.predicted_busbw_GBps(), r.nccl_model_us,
                 100 * (r.nccl_model_us - r.measured_us) / r.measured_us);
    } else {
      fmt::print("  {:>12} {:<44} {:>10.1f} {:>10} {:>10.1f} {:>+6.1f}% {:>8.2f} {:>8.2f}\n",
                 r.size_bytes, nccl::to_string(r.config), r.measured_us,
                 fitted ? fmt::format("{:.1f}", r.prior_us) : "", r.predicted_us,
                 100 * r.rel_error(), r.measured_busbw_GBps(), r.predicted_busbw_GBps());
    }
  }
  if (!current.empty()) {
    summary(current);
  }
}

nlohmann::ordered_json rows_json(const std::vector<calibrate::FitRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    out.push_back({{"log", r.log},
                   {"size_bytes", r.size_bytes},
                   {"config", nccl::to_string(r.config)},
                   {"measured_us", r.measured_us},
                   {"prior_us", r.prior_us},
                   {"predicted_us", r.predicted_us},
                   {"rel_error", r.rel_error()}});
  }
  return out;
}

// The built-in profile of the GPU a bundle was measured on.
hardware::HardwareProfile profile_for_bundle(const calibrate::Bundle& b) {
  const std::string token = calibrate::gpu_model_token(b.context.gpu.name);
  for (const std::string& name : hardware::builtin_profiles()) {
    hardware::HardwareProfile p = hardware::load_profile(name);
    if (!token.empty() && calibrate::gpu_model_token(p.gpu_type) == token) {
      return p;
    }
  }
  throw Error(
      fmt::format("no built-in profile for the bundle's GPU '{}' (built in: {}); give "
                  "--profile FILE as the prior",
                  b.context.gpu.name, fmt::join(hardware::builtin_profiles(), ", ")));
}

// Writes a fitted profile after reading it back: the reader's ranges are the contract, and a
// profile that simulate would refuse is an error here, not later.
void write_profile(const hardware::HardwareProfile& p, const std::string& path) {
  const std::string text = hardware::profile_to_json(p);
  try {
    hardware::parse_profile_json(text, path);
  } catch (const Error& e) {
    throw Error(fmt::format("the fitted profile was not written: {}", e.what()));
  }
  write_file(path, text, "profile");
}

std::string bundle_note(const calibrate::GpuFitResult& gpu, const calibrate::Bundle& b) {
  int fitted = 0;
  for (const auto& c : gpu.coefficients) {
    fitted += c.fitted ? 1 : 0;
  }
  return fmt::format(
      "lagom {} calibrate fit --measurements {}{} ({}, {}): {} of {} coefficients "
      "from the bundle, the rest priors",
      version(), b.path, b.context.synthetic ? " (SYNTHETIC)" : "", b.context.gpu.name,
      b.context.date, fitted, gpu.coefficients.size());
}

nlohmann::ordered_json coefficients_json(const calibrate::GpuFitResult& gpu) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& c : gpu.coefficients) {
    out.push_back({{"path", c.path},
                   {"before", c.before},
                   {"after", c.after},
                   {"fitted", c.fitted},
                   {"samples", c.samples},
                   {"error_before", c.error_before},
                   {"error_after", c.error_after},
                   {"how", c.how}});
  }
  return out;
}

void print_coefficients(const calibrate::GpuFitResult& gpu, const calibrate::Bundle& b) {
  fmt::print("# measurements {} ({}, {}{})\n", b.path, b.context.gpu.name, b.context.date,
             b.context.synthetic ? ", SYNTHETIC" : "");
  fmt::print("# {:<46} {:>10} {:>10} {:>8} {:>17}  {}\n", "coefficient", "before", "after",
             "samples", "model error", "from");
  for (const auto& c : gpu.coefficients) {
    const std::string error =
        c.fitted && (c.error_before > 0 || c.error_after > 0)
            ? fmt::format("{:.1f}% -> {:.1f}%", 100 * c.error_before, 100 * c.error_after)
            : std::string("-");
    fmt::print("# {:<46} {:>10.4g} {:>10.4g} {:>8} {:>17}  {}{}\n", c.path, c.before, c.after,
               c.fitted ? std::to_string(c.samples) : std::string("-"), error,
               c.fitted ? "" : "prior kept: ", c.how);
  }
  fmt::print("#\n");
}

int write_gpu_fit(calibrate::GpuFitResult& gpu, const hardware::HardwareProfile& prior,
                  const calibrate::Bundle& b, const std::string& out_path, bool json) {
  std::erase_if(gpu.profile.calibration,
                [](const std::string& line) { return line.starts_with("not calibrated"); });
  gpu.profile.calibration.push_back(bundle_note(gpu, b));
  write_profile(gpu.profile, out_path);
  if (json) {
    nlohmann::ordered_json j;
    j["context"] = context_block("calibrate fit", {{"prior", prior.origin},
                                                   {"measurements", b.path},
                                                   {"synthetic", b.context.synthetic},
                                                   {"output", out_path}});
    j["coefficients"] = coefficients_json(gpu);
    j["warnings"] = gpu.warnings;
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("# lagom calibrate fit: prior {}\n", prior.origin);
  print_coefficients(gpu, b);
  fmt::print("# wrote {}\n", out_path);
  return kExitOk;
}

}  // namespace

int calibrate_command(const std::vector<std::string>& args) {
  const std::string usage =
      "Usage: lagom calibrate fit   [--measurements BUNDLE] [--nccl-tests "
      "LOG[@CLUSTER[:NODES]]...]\n"
      "                             [--cluster PRESET] [--nodes N] [--profile PRIOR] [--force]\n"
      "                             -o PROFILE.json [--json]\n"
      "       lagom calibrate check --nccl-tests LOG[@CLUSTER[:NODES]]... [--cluster PRESET]\n"
      "                             [--nodes N] [--profile P] [--json | --markdown]\n"
      "       lagom calibrate logs\n\n"
      "fit: with --measurements, the GPU's attributes and its compute and contention\n"
      "coefficients from a lagom-calibrate bundle (docs/calibration.md), each printed with its\n"
      "value before and after, its samples and the model's error; with nccl-tests logs (the\n"
      "bundle's own NCCL sweeps included), the least-squares fit of the collective parameters\n"
      "(launch, per-channel, hop latencies, chunk-step overheads, link efficiencies, channel\n"
      "bandwidths), every row's residual printed. Starts from PRIOR (default: the built-in\n"
      "profile of the cluster's or the bundle's GPU type) and writes the fitted profile. A bundle\n"
      "from another GPU than the profile's is an error unless --force.\n"
      "check: the same table for a profile as it is, without fitting.\n"
      "LOG is a file or builtin:NAME (`lagom calibrate logs`); @CLUSTER[:NODES] says where that\n"
      "log ran when it differs from --cluster (the node count defaults to the log's).\n\nOptions";
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << usage << "\n";
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string action = args[0];
  if (action == "logs") {
    for (const EmbeddedFile& f : calibrate::embedded_nccl_tests_logs()) {
      const calibrate::NcclTestsLog log = calibrate::embedded_nccl_tests_log(f.name);
      fmt::print("builtin:{}  ({} ranks, {} node(s), {}, {} rows)\n", f.name, log.nranks, log.nodes,
                 log.gpu, log.rows.size());
    }
    return kExitOk;
  }
  if (action != "fit" && action != "check") {
    throw po::error(fmt::format("unknown action '{}' (fit, check, logs)", action));
  }
  HardwareOptions hw;
  std::vector<std::string> logs;
  std::string out_path;
  std::string bundle_path;
  std::string coll;
  po::options_description desc(usage);
  desc.add_options()("help,h", "show this help")("nccl-tests", po::value(&logs)->multitoken(),
                                                 "nccl-tests logs")(
      "measurements", po::value(&bundle_path),
      "fit: a measurement bundle written by lagom-calibrate")(
      "force", "fit: accept a bundle measured on another GPU than the profile's")(
      "output,o", po::value(&out_path), "fit: write the fitted profile here")(
      "coll", po::value(&coll),
      "the collective of logs that do not say (older nccl-tests print no '# Collective test "
      "starting:' line): all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, "
      "sendrecv")("json", "print the rows as JSON")(
      "markdown", "check: print Markdown tables (docs/VALIDATION.md)");
  add_hardware_options(desc, hw);
  po::variables_map vm;
  if (!parse_command_line(std::vector<std::string>(args.begin() + 1, args.end()), desc, vm)) {
    return kExitOk;  // --help
  }
  refuse_unsupported_what_ifs(hw, {},
                              "calibrate fits and checks the cluster as measured; a what-if has "
                              "nothing measured to fit or check");
  if (!bundle_path.empty() && action != "fit") {
    throw po::error("--measurements is for fit");
  }
  std::optional<calibrate::Bundle> bundle;
  if (!bundle_path.empty()) {
    bundle = calibrate::read_bundle(bundle_path);
    // The bundle's NCCL sweeps are nccl-tests logs like any other (they need --cluster).
    for (const std::string& log : bundle->nccl_logs) {
      logs.push_back(log);
    }
  }
  if (logs.empty() && !bundle) {
    throw po::error("give --measurements BUNDLE or --nccl-tests LOG (at least one)");
  }
  if (action == "fit" && out_path.empty()) {
    throw po::error("fit needs -o PROFILE.json");
  }
  std::optional<calibrate::NcclTestsCollective> coll_given;
  if (vm.count("coll")) {
    coll_given = calibrate::parse_nccl_tests_collective(coll);
    if (!coll_given) {
      throw po::error(fmt::format(
          "--coll '{}': expected all_reduce, all_gather, reduce_scatter, alltoall, broadcast, "
          "reduce or sendrecv",
          coll));
    }
  }
  std::vector<calibrate::FitInput> inputs;
  for (const std::string& spec : logs) {
    inputs.push_back(load_input(spec, hw));
    calibrate::NcclTestsLog& log = inputs.back().log;
    if (coll_given && log.collective && *log.collective != *coll_given) {
      throw Error(fmt::format("{}: --coll {} but the log says it measured {}", inputs.back().name,
                              coll, calibrate::to_string(*log.collective)));
    }
    if (coll_given) {
      log.collective = coll_given;
    }
  }
  // The prior: --profile, else the built-in profile of the first log's GPU type, else of the
  // bundle's GPU.
  const hardware::HardwareProfile prior =
      !hw.profile.empty() ? hardware::load_profile(hw.profile)
      : !inputs.empty() ? hardware::default_profile_for_gpu(inputs.front().cluster.spec().gpu_type)
                        : profile_for_bundle(*bundle);
  if (bundle) {
    if (const std::string why = calibrate::gpu_mismatch(*bundle, prior); !why.empty()) {
      if (!vm.count("force")) {
        throw Error(why + " (--force fits it anyway)");
      }
      fmt::print(stderr, "lagom calibrate: warning: {} (fitting anyway: --force)\n", why);
    }
    if (bundle->context.synthetic) {
      fmt::print(stderr,
                 "lagom calibrate: warning: {} is a SYNTHETIC bundle (a test made it from a "
                 "model); its numbers are not measurements\n",
                 bundle->path);
    }
  }
  for (const calibrate::FitInput& in : inputs) {
    if (in.cluster.spec().gpu_type != prior.gpu_type) {
      throw Error(fmt::format("{} ran on {} GPUs but the profile '{}' describes {}", in.name,
                              in.cluster.spec().gpu_type, prior.origin, prior.gpu_type));
    }
  }
  if (action == "check") {
    const auto rows = calibrate::evaluate_profile(prior, inputs);
    if (vm.count("json")) {
      nlohmann::ordered_json out;
      out["context"] = context_block("calibrate check", {{"profile", prior.origin}});
      out["rows"] = rows_json(rows);
      std::cout << out.dump(1) << "\n";
    } else {
      if (!vm.count("markdown")) {
        fmt::print("# profile {}\n", prior.origin);
      }
      print_rows(rows, false, vm.count("markdown") > 0);
    }
    return kExitOk;
  }
  calibrate::GpuFitResult gpu;
  if (bundle) {
    gpu = calibrate::fit_gpu_profile(prior, *bundle);
    for (const std::string& w : gpu.warnings) {
      warn(w);
    }
    if (const std::string why = calibrate::gpu_mismatch(*bundle, prior); !why.empty()) {
      gpu.profile.calibration.push_back("fitted with --force although " + why);
    }
  } else {
    gpu.profile = prior;
  }
  if (inputs.empty()) {
    return write_gpu_fit(gpu, prior, *bundle, out_path, vm.count("json") > 0);
  }
  std::string note;
  for (const auto& in : inputs) {
    note += fmt::format("{}{} on {} x{}", note.empty() ? "" : ", ", in.name, in.cluster.name(),
                        in.cluster.nodes());
  }
  calibrate::FitOptions opt;
  opt.source_note = "fit to nccl-tests " + note;
  calibrate::FitResult fit = calibrate::fit_profile(gpu.profile, inputs, opt);
  // The prior's "not calibrated" note no longer holds.
  std::erase_if(fit.profile.calibration,
                [](const std::string& line) { return line.starts_with("not calibrated"); });
  if (bundle) {
    fit.profile.calibration.push_back(bundle_note(gpu, *bundle));
  }
  fit.profile.calibration.push_back(fmt::format(
      "lagom {} calibrate fit ({} iterations) to nccl-tests {}", version(), fit.iterations, note));
  {
    const auto big = calibrate::summarize_errors(fit.rows, kMiB, kNoMax);
    fit.profile.calibration.push_back(
        fmt::format("residuals over {} rows >= 1 MiB: median {:.1f}%, max {:.1f}%", big.rows,
                    100 * big.median, 100 * big.max));
    if (big.rows > 0 && big.median > kSuspectResidual) {
      warn(
          fmt::format("the fit's median residual over rows >= 1 MiB is {:.0f}% (over {:.0f}%): "
                      "the logs and the cluster they were fitted on probably differ (GPU, node "
                      "count, transport)",
                      100 * big.median, 100 * kSuspectResidual));
    }
  }
  write_profile(fit.profile, out_path);
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["context"] = context_block("calibrate fit", {{"prior", prior.origin}, {"output", out_path}});
    if (bundle) {
      j["coefficients"] = coefficients_json(gpu);
      j["warnings"] = gpu.warnings;
    }
    j["iterations"] = fit.iterations;
    j["changed"] = fit.changed;
    j["rows"] = rows_json(fit.rows);
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  if (bundle) {
    print_coefficients(gpu, *bundle);
  }
  fmt::print("# lagom calibrate fit: prior {}, {} rows, {} iterations\n# parameters moved:\n",
             prior.origin, fit.rows.size(), fit.iterations);
  for (const std::string& c : fit.changed) {
    fmt::print("#   {}\n", c);
  }
  fmt::print("#\n");
  print_rows(fit.rows, true, false);
  fmt::print("# wrote {}\n", out_path);
  return kExitOk;
}

}  // namespace lagom::cli
