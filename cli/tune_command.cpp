// `lagom tune` and `lagom compare`: search NCCL configurations for a step with the simulator as
// the oracle (docs/search.md), write the plan and its NCCL exports, compare methods.
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/units.hpp"
#include "lagom/search/plan.hpp"
#include "lagom/search/search.hpp"
#include "model_input.hpp"
#include "step_input.hpp"
#include "workload_input.hpp"

namespace lagom::cli {
namespace {

namespace po = boost::program_options;

struct TuneOptions {
  std::string grid = "fine";
  std::string space = "nccl";
  std::string lagom_subspace = "nccl";
  std::string lagom_step = "points";
  double lagom_lr_scale = 1.0;
  double lagom_min_gain = 0.01;
  bool lagom_no_step_guard = false;
  long budget = 0;
  std::uint64_t seed = 1;
  bool no_fold = false;
};

void add_tune_options(po::options_description& desc, TuneOptions& t) {
  desc.add_options()("budget", po::value(&t.budget),
                     "evaluations (simulations) at most; default per method: autoccl 2000, "
                     "lagom 1000, random 200, exhaustive 100000")(
      "seed", po::value(&t.seed)->default_value(1), "random: the seed")(
      "grid", po::value(&t.grid)->default_value("fine"),
      "fine (channels 1..64, every thread count, 32 chunk sizes) or coarse (channels powers of "
      "2, NCCL's threads, 4 chunk sizes)")(
      "space", po::value(&t.space)->default_value("nccl"),
      "nccl (algorithm, protocol and channels per collective: what stock NCCL applies per call "
      "through the tuner plugin, so the plan is applied exactly) or full (also threads and chunk "
      "per collective, as AutoCCL and the Lagom paper tune them on a patched NCCL)")(
      "lagom-subspace", po::value(&t.lagom_subspace)->default_value("nccl"),
      "lagom: grow resources in NCCL's own algorithm/protocol (nccl) or in the fastest one at "
      "NCCL's resources (best)")("no-contention",
                                 "overlapping ops run as if alone (the searches then see no "
                                 "interference)")(
      "lagom-step", po::value(&t.lagom_step)->default_value("points"),
      "lagom: after a relative gain g, grow each resource by g grid points (points, at least "
      "one) or by g times the points on its axis (axis, AutoCCL's reading)")(
      "lagom-lr-scale", po::value(&t.lagom_lr_scale)->default_value(1.0),
      "lagom: multiplies the growth step")(
      "lagom-min-gain", po::value(&t.lagom_min_gain)->default_value(0.01),
      "lagom: a step must shorten the collective by more than this fraction to continue")(
      "lagom-no-step-guard", po::bool_switch(&t.lagom_no_step_guard),
      "lagom: keep growing a collective while it gets faster even when the step gets longer")(
      "no-fold", po::bool_switch(&t.no_fold),
      "with --model: simulate every data-parallel replica (by default one stands for all, "
      "which gives the same step time)");
}

search::SpaceOptions space_options(const TuneOptions& t) {
  search::SpaceOptions s;
  if (t.grid == "fine") {
    s.grid = search::Grid::kFine;
  } else if (t.grid == "coarse") {
    s.grid = search::Grid::kCoarse;
  } else {
    throw po::error(fmt::format("--grid must be fine or coarse, got '{}'", t.grid));
  }
  if (t.space == "full") {
    s.resources = search::Resources::kFull;
  } else if (t.space == "nccl") {
    s.resources = search::Resources::kNccl;
  } else {
    throw po::error(fmt::format("--space must be full or nccl, got '{}'", t.space));
  }
  return s;
}

search::SearchOptions search_options(const TuneOptions& t, search::Method m) {
  search::SearchOptions o;
  o.method = m;
  o.budget = t.budget;
  o.seed = t.seed;
  if (t.budget < 0) {
    throw po::error(
        fmt::format("--budget must be at least 1 (0: the method's default), got {}", t.budget));
  }
  if (t.lagom_subspace == "nccl") {
    o.lagom_subspace = search::LagomSubspace::kNccl;
  } else if (t.lagom_subspace == "best") {
    o.lagom_subspace = search::LagomSubspace::kBest;
  } else {
    throw po::error(
        fmt::format("--lagom-subspace must be nccl or best, got '{}'", t.lagom_subspace));
  }
  if (t.lagom_step == "points") {
    o.lagom_step = search::LagomStep::kPoints;
  } else if (t.lagom_step == "axis") {
    o.lagom_step = search::LagomStep::kAxis;
  } else {
    throw po::error(fmt::format("--lagom-step must be points or axis, got '{}'", t.lagom_step));
  }
  if (!(t.lagom_lr_scale > 0) || t.lagom_lr_scale > 1000) {
    throw po::error(fmt::format("--lagom-lr-scale must be in (0, 1000], got {}", t.lagom_lr_scale));
  }
  if (!(t.lagom_min_gain >= 0) || t.lagom_min_gain >= 1) {
    throw po::error(fmt::format("--lagom-min-gain must be in [0, 1), got {}", t.lagom_min_gain));
  }
  o.lagom_lr_scale = t.lagom_lr_scale;
  o.lagom_min_gain = t.lagom_min_gain;
  o.lagom_step_guard = !t.lagom_no_step_guard;
  return o;
}

// Adds the options tune and compare share to `desc` and parses `args`; false after printing the
// help.
bool parse_step_options(const std::vector<std::string>& args, po::options_description& desc,
                        TuneOptions& t, WorkloadInput& input, HardwareOptions& hw, ModelOptions& mo,
                        po::variables_map& vm) {
  add_tune_options(desc, t);
  add_workload_input_options(desc, input);
  add_hardware_options(desc, hw);
  add_model_options(desc, mo);
  return parse_command_line(args, desc, vm);
}

search::Method method_of(const std::string& name) {
  auto m = search::parse_method(name);
  if (!m) {
    throw po::error(
        fmt::format("unknown method '{}' (known: nccl, autoccl, lagom, exhaustive, random)", name));
  }
  return *m;
}

// What the command works on: the step, the hardware and the evaluator over them.
struct Setup {
  StepInput step;
  std::unique_ptr<search::Evaluator> eval;
  std::string cluster;  // "a40-nvlink x1"
  std::string profile;
};

Setup setup(const WorkloadInput& input, const HardwareOptions& hw, ModelOptions mo,
            const TuneOptions& t, const po::variables_map& vm) {
  mo.fold = !t.no_fold && model_requested(mo, vm);  // only a generated step folds
  Setup s;
  s.step = load_step_input(input, hw, mo, vm, /*need_cluster=*/true);
  const Hardware& h = *s.step.hardware;
  try {
    s.eval = std::make_unique<search::Evaluator>(s.step.in.workload, h.cluster, h.profile,
                                                 space_options(t), !vm.count("no-contention"));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", s.step.in.source, e.what()));
  }
  s.cluster = fmt::format("{} x{}", h.cluster.name(), h.cluster.nodes());
  if (const std::string env = topologies::describe_nccl_env(h.cluster.spec()); !env.empty()) {
    s.cluster += ", " + env;
  }
  s.profile = h.profile.origin;
  return s;
}

std::string what_of(const Setup& s) {
  return s.step.generated.empty() ? s.step.in.source : s.step.generated;
}

std::string short_config(const sim::CommConfig& c) {
  return fmt::format("{}/{} nc={} nt={} c={}", sim::to_string(c.algo), sim::to_string(c.proto),
                     c.nchannels, c.nthreads, format_bytes(c.chunk_bytes));
}

nlohmann::ordered_json config_json(const sim::CommConfig& c) {
  return {{"algo", sim::to_string(c.algo)},
          {"proto", sim::to_string(c.proto)},
          {"nchannels", c.nchannels},
          {"nthreads", c.nthreads},
          {"chunk_bytes", c.chunk_bytes}};
}

// The plan's classes, for reports: one entry per class.
nlohmann::ordered_json classes_json(const search::Evaluator& eval, const search::SearchResult& r) {
  auto arr = nlohmann::ordered_json::array();
  const auto& classes = eval.classes();
  for (std::size_t j = 0; j < classes.size(); ++j) {
    const search::CollClass& c = classes[j];
    const search::ClassChoice& ch = r.choices[j];
    nlohmann::ordered_json e;
    e["coll"] = sim::to_string(c.coll);
    e["bytes"] = c.bytes;
    e["nnodes"] = c.nnodes;
    e["nranks"] = c.nranks;
    e["calls"] = c.calls;
    e["config"] = config_json(ch.config);
    e["time_us"] = ch.time_us;
    e["nccl"] = config_json(c.nccl);
    e["nccl_time_us"] = ch.nccl_time_us;
    arr.push_back(std::move(e));
  }
  return arr;
}

// Classes by NCCL's total time in the step (calls x time), largest first.
std::vector<std::size_t> dominant(const search::Evaluator& eval, const search::SearchResult& nccl) {
  std::vector<std::size_t> order(eval.classes().size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return nccl.choices[a].nccl_time_us * eval.classes()[a].calls >
           nccl.choices[b].nccl_time_us * eval.classes()[b].calls;
  });
  return order;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    throw Error(fmt::format("cannot write '{}'", path));
  }
  out << text;
  out.close();
  if (!out) {
    throw Error(fmt::format("error while writing '{}'", path));
  }
}

nlohmann::ordered_json context_json(const Setup& s, const std::string& command) {
  nlohmann::ordered_json c;
  c["lagom_version"] = std::string(version());
  c["git_sha"] = std::string(git_sha());
  c["command"] = command;
  c["workload"] = what_of(s);
  c["input_hash"] = s.step.in.input_hash;
  c["cluster"] = s.cluster;
  c["profile"] = s.profile;
  c["grid"] = to_string(s.eval->space().grid);
  c["space"] = to_string(s.eval->space().resources);
  c["collective_classes"] = s.eval->classes().size();
  if (s.step.folded > 1) {
    c["folded_replicas"] = s.step.folded;
  }
  return c;
}

}  // namespace

int tune_command(const std::vector<std::string>& args) {
  WorkloadInput input;
  HardwareOptions hw;
  ModelOptions mo;
  TuneOptions t;
  std::string method = "lagom";
  std::string out_path, csv_path, env_path;
  po::options_description desc(
      "Usage: lagom tune --model NAME --parallel P --cluster PRESET [--nodes N] [...model "
      "options]\n"
      "                  [--method nccl|autoccl|lagom|exhaustive|random] [--budget N] [--seed S]\n"
      "                  [--json] [--out plan.json] [--export-nccl-tuner FILE] [--export-env "
      "FILE]\n"
      "       lagom tune --workload FILE|builtin:NAME | --chakra PREFIX  --cluster PRESET ...\n\n"
      "Searches NCCL parameters (algorithm, protocol and channels; with --space full also\n"
      "threads and chunk) for every collective class of the step (calls with the same\n"
      "collective, size, nodes and ranks),\n"
      "simulating the whole step for every candidate, and reports the step time against NCCL's\n"
      "own choice. The plan (docs/formats/plan.md) replays with `lagom simulate --plan` and\n"
      "applies on a real cluster through libnccl-tuner-lagom.so (docs/tuner.md). The methods\n"
      "are in docs/search.md.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "method", po::value(&method)->default_value("lagom"),
      "nccl, autoccl, lagom, exhaustive or random")("json", "print a JSON report on stdout")(
      "out,o", po::value(&out_path), "write the plan (JSON) to FILE")(
      "export-nccl-tuner", po::value(&csv_path),
      "write the plan as the CSV NCCL's example tuner plugin reads (NCCL_TUNER_CONFIG_FILE)")(
      "export-env", po::value(&env_path),
      "write the process-wide NCCL settings the plan needs as shell exports");
  po::variables_map vm;
  if (!parse_step_options(args, desc, t, input, hw, mo, vm)) {
    return kExitOk;  // --help
  }
  const search::Method m = method_of(method);
  const search::SearchOptions so = search_options(t, m);
  Setup s = setup(input, hw, mo, t, vm);
  search::SearchResult r = search::run_search(*s.eval, so);
  r.plan.context.workload = what_of(s);
  r.plan.context.cluster = s.cluster;
  r.plan.context.profile = s.profile;

  if (!out_path.empty()) {
    std::ostringstream ss;
    search::write_plan_json(r.plan, ss);
    write_file(out_path, ss.str());
  }
  if (!csv_path.empty()) {
    std::ostringstream ss;
    search::write_nccl_example_csv(r.plan, ss);
    write_file(csv_path, ss.str());
  }
  if (!env_path.empty()) {
    std::ostringstream ss;
    search::write_nccl_env(r.plan, ss);
    write_file(env_path, ss.str());
  }
  const double speedup = r.nccl_step_time.us() / r.step_time.us();
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["context"] = context_json(s, "tune");
    j["method"] = to_string(m);
    j["step_time_us"] = r.step_time.us();
    j["nccl_step_time_us"] = r.nccl_step_time.us();
    j["speedup_vs_nccl"] = speedup;
    j["evaluations"] = r.evaluations;
    j["search_ms"] = r.search_ms;
    const search::StockNcclFit fit = search::stock_nccl_fit(r.plan);
    j["stock_nccl"] = {{"exact", fit.exact()}, {"how", fit.summary()}};
    j["classes"] = classes_json(*s.eval, r);
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("lagom {} ({}) tune\n", version(), git_sha());
  fmt::print("workload     {}\n", what_of(s));
  fmt::print("cluster      {}, profile {}\n", s.cluster, s.profile);
  fmt::print(
      "search       {} over {} collective classes ({} grid, {} space): {} evaluations in "
      "{:.0f} ms\n",
      to_string(m), s.eval->classes().size(), to_string(s.eval->space().grid),
      to_string(s.eval->space().resources), r.evaluations, r.search_ms);
  fmt::print("step time    {} us (NCCL's own choice: {} us; {:.3f}x)\n",
             format_us(r.step_time.count_ns()), format_us(r.nccl_step_time.count_ns()), speedup);
  if (m != search::Method::kNccl) {
    fmt::print("stock NCCL   applies the plan {}\n", search::stock_nccl_fit(r.plan).summary());
  }
  fmt::print("\n");
  fmt::print("{:<14} {:>10} {:>5} {:>5} {:>5}  {:<36} {:>10}  {:<36} {:>10}\n", "collective",
             "bytes", "nodes", "ranks", "calls", "NCCL's choice", "time (us)", "chosen",
             "time (us)");
  for (std::size_t j : dominant(*s.eval, r)) {
    const search::CollClass& c = s.eval->classes()[j];
    const search::ClassChoice& ch = r.choices[j];
    fmt::print("{:<14} {:>10} {:>5} {:>5} {:>5}  {:<36} {:>10.1f}  {:<36} {:>10.1f}\n",
               sim::to_string(c.coll), format_bytes(c.bytes), c.nnodes, c.nranks, c.calls,
               short_config(c.nccl), ch.nccl_time_us, short_config(ch.config), ch.time_us);
  }
  for (const auto& [path, what] : {std::pair{out_path, "plan"},
                                   std::pair{csv_path,
                                             "NCCL example "
                                             "tuner CSV"},
                                   std::pair{env_path, "NCCL environment"}}) {
    if (!path.empty()) {
      fmt::print("\n{:<12} {}", what, path);
    }
  }
  if (!out_path.empty() || !csv_path.empty() || !env_path.empty()) {
    fmt::print("\n");
  }
  return kExitOk;
}

int compare_command(const std::vector<std::string>& args) {
  WorkloadInput input;
  HardwareOptions hw;
  ModelOptions mo;
  TuneOptions t;
  std::string methods = "nccl,autoccl,lagom";
  po::options_description desc(
      "Usage: lagom compare --model NAME --parallel P --cluster PRESET [--nodes N] [...model "
      "options]\n"
      "                     [--methods nccl,autoccl,lagom] [--json]\n\n"
      "Runs several search methods on the same step and prints one row per method: step time,\n"
      "speedup over NCCL's own choice, evaluations, search wall time, and the configuration\n"
      "each chose for the collectives that dominate the step.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "methods", po::value(&methods)->default_value("nccl,autoccl,lagom"),
      "comma-separated: nccl, autoccl, lagom, exhaustive, random")("json",
                                                                   "print a JSON report on stdout");
  po::variables_map vm;
  if (!parse_step_options(args, desc, t, input, hw, mo, vm)) {
    return kExitOk;  // --help
  }
  std::vector<search::Method> ms;
  std::stringstream list(methods);
  for (std::string name; std::getline(list, name, ',');) {
    ms.push_back(method_of(name));
  }
  if (ms.empty()) {
    throw po::error("--methods lists no method");
  }
  Setup s = setup(input, hw, mo, t, vm);
  std::vector<search::SearchResult> results;
  for (search::Method m : ms) {
    // Each method gets a fresh evaluator count; the step and its classes are shared.
    results.push_back(search::run_search(*s.eval, search_options(t, m)));
  }
  const std::vector<std::size_t> top = dominant(*s.eval, results.front());
  const std::size_t shown = std::min<std::size_t>(3, top.size());
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["context"] = context_json(s, "compare");
    auto& rows = j["rows"] = nlohmann::ordered_json::array();
    for (const search::SearchResult& r : results) {
      nlohmann::ordered_json row;
      row["method"] = to_string(r.method);
      row["step_time_us"] = r.step_time.us();
      row["speedup_vs_nccl"] = r.nccl_step_time.us() / r.step_time.us();
      row["evaluations"] = r.evaluations;
      row["search_ms"] = r.search_ms;
      row["plan"] = classes_json(*s.eval, r);
      rows.push_back(std::move(row));
    }
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("lagom {} ({}) compare\n", version(), git_sha());
  fmt::print("workload     {}\n", what_of(s));
  fmt::print("cluster      {}, profile {}; {} collective classes ({} grid, {} space)\n\n",
             s.cluster, s.profile, s.eval->classes().size(), to_string(s.eval->space().grid),
             to_string(s.eval->space().resources));
  std::string header = fmt::format("{:<11} {:>16} {:>8} {:>6} {:>10}", "method", "step (us)",
                                   "speedup", "evals", "search ms");
  for (std::size_t i = 0; i < shown; ++i) {
    const search::CollClass& c = s.eval->classes()[top[i]];
    header += fmt::format("  {:<36}", fmt::format("{} {} x{}", sim::to_string(c.coll),
                                                  format_bytes(c.bytes), c.calls));
  }
  auto print_row = [](std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);
    fmt::print("{}\n", line);
  };
  print_row(header);
  for (const search::SearchResult& r : results) {
    std::string row =
        fmt::format("{:<11} {:>16} {:>7.3f}x {:>6} {:>10.0f}", to_string(r.method),
                    format_us(r.step_time.count_ns()), r.nccl_step_time.us() / r.step_time.us(),
                    r.evaluations, r.search_ms);
    for (std::size_t i = 0; i < shown; ++i) {
      row += fmt::format("  {:<36}", short_config(r.choices[top[i]].config));
    }
    print_row(row);
  }
  return kExitOk;
}

}  // namespace lagom::cli
