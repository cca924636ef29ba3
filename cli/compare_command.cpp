// `lagom compare`: every search method on one step, side by side, each with its speedup over
// NCCL's own choice (docs/search.md; docs/RESULTS.md is made of these).
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
  const std::vector<search::Method> ms = methods_of(methods);
  SearchSetup s = setup_search(input, hw, mo, t, vm);
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
    header += fmt::format("  {:<36}", fmt::format("{} {} x{}", nccl::to_string(c.coll),
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
