// `lagom tune`: search NCCL configurations for a step with the simulator as the oracle
// (docs/search.md), and write the plan and its NCCL exports.
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
#include "lagom/common/files.hpp"
#include "lagom/common/units.hpp"
#include "lagom/search/plan.hpp"
#include "lagom/search/search.hpp"
#include "model_input.hpp"
#include "step_input.hpp"
#include "step_search.hpp"
#include "workload_input.hpp"

namespace lagom::cli {
namespace {

namespace po = boost::program_options;

}  // namespace

int run_tune(const std::vector<std::string>& args, std::ostream& json_out) {
  WorkloadInput input;
  HardwareOptions hw;
  ModelOptions mo;
  TuneOptions t;
  std::string method = "lagom";
  std::string out_path, csv_path, env_path, rows_csv;
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
      "csv", po::value(&rows_csv),
      "write one CSV row per collective class to FILE (its configuration and time, NCCL's)")(
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
  search::SearchOptions so = search_options(t, m);
  so.keep_on_interrupt = true;  // an interrupted tune writes the best plan so far
  SearchSetup s = setup_search(input, hw, mo, t, vm);
  search::SearchResult r = search::run_search(*s.eval, so);
  r.plan.context.workload = what_of(s);
  r.plan.context.cluster = s.cluster;
  r.plan.context.profile = s.profile;
  r.plan.context.nccl_version =
      std::string(nccl::to_string(s.step->hardware->cluster.spec().nccl_version));

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
  if (!rows_csv.empty()) {
    write_classes_csv(rows_csv, *s.eval, {std::string(to_string(m))}, {r});
  }
  if (r.interrupted) {
    fmt::print(stderr,
               "lagom tune: interrupted after {} evaluations; the best plan so far (step {} us, "
               "NCCL's own choice {} us) {}\n",
               r.evaluations, format_us(r.step_time.count_ns()),
               format_us(r.nccl_step_time.count_ns()),
               out_path.empty() ? "is not written as a plan (no --out)" : "written to " + out_path);
    return kExitInterrupted;
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
    if (m == search::Method::kExhaustive) {
      j["ruled_out"] = r.bounded;
    }
    j["search_ms"] = r.search_ms;
    const search::StockNcclFit fit = search::stock_nccl_fit(r.plan);
    j["stock_nccl"] = {{"exact", fit.exact()}, {"how", fit.summary()}};
    j["classes"] = classes_json(*s.eval, r);
    json_out << j.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("lagom {} ({}) tune\n", version(), git_sha());
  fmt::print("workload     {}\n", what_of(s));
  fmt::print("cluster      {}, profile {}\n{}", s.cluster, s.profile, what_if_line(s));
  const std::string ruled_out =
      r.bounded > 0 ? fmt::format(" ({} more combinations ruled out by a lower bound)", r.bounded)
                    : "";
  fmt::print(
      "search       {} over {} collective classes ({} grid, {} space): {} evaluations{} in "
      "{:.0f} ms\n",
      to_string(m), s.eval->classes().size(), to_string(s.eval->space().grid),
      to_string(s.eval->space().resources), r.evaluations, ruled_out, r.search_ms);
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
               nccl::to_string(c.coll), format_bytes(c.bytes), c.nnodes, c.nranks, c.step_calls,
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

int tune_command(const std::vector<std::string>& args) {
  return run_tune(args, std::cout);
}

}  // namespace lagom::cli
