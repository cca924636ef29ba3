// `lagom compare`: every search method on one step, side by side, each with its speedup over
// NCCL's own choice (docs/search.md; docs/RESULTS.md is made of these).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
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
#include "lagom/common/text.hpp"
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

constexpr std::string_view kKnownMethods =
    "nccl, autoccl, lagom, exhaustive, random, lagom-roundrobin, fixed-nc:K, nccl-max-ctas:K";

// A row of `lagom compare`: a search method, or an ablation built from one (docs/search.md §7):
//  * lagom-roundrobin: Lagom with Algorithm 1's priority H replaced by a fixed order;
//  * fixed-nc:K: NCCL's own choice with every collective on K channels (NCCL_MIN_CTAS =
//    NCCL_MAX_CTAS = K: NCCL still picks the algorithm, protocol, threads and chunk for them);
//  * nccl-max-ctas:K: NCCL's own choice under NCCL_MAX_CTAS=K alone.
// The two NCCL ablations are what an operator can do with environment variables and no search;
// they run on their own copy of the step whose NCCL sees the extra variables.
struct CompareMethod {
  std::string label;
  search::Method method = search::Method::kNccl;
  search::LagomOrder order = search::LagomOrder::kPriority;
  std::vector<std::string> nccl_env;  // added to --nccl-env
  int k = 0;                          // fixed-nc and nccl-max-ctas: channels
  bool fixed_channels = false;        // fixed-nc: every collective on exactly k CTAs
};

// "fixed-nc:8" -> 8; po::error unless K is a whole number in [1, 64] (NCCL's MAXCHANNELS).
int channels_of(const std::string& spec, std::string_view value) {
  int k = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), k);
  if (ec != std::errc() || end != value.data() + value.size() || k < 1 || k > 64) {
    throw po::error(fmt::format(
        "method '{}': K must be a whole number of channels from 1 to 64 (NCCL's MAXCHANNELS)",
        spec));
  }
  return k;
}

CompareMethod compare_method_of(const std::string& spec) {
  const std::string s = ascii_lower(spec);
  CompareMethod m;
  m.label = s;
  if (s == "lagom-roundrobin") {
    m.method = search::Method::kLagom;
    m.order = search::LagomOrder::kRoundRobin;
    return m;
  }
  const std::size_t colon = s.find(':');
  const std::string name = s.substr(0, colon);
  if ((name == "fixed-nc" || name == "nccl-max-ctas") && colon != std::string::npos) {
    m.k = channels_of(spec, std::string_view(s).substr(colon + 1));
    m.label = fmt::format("{}:{}", name, m.k);
    m.fixed_channels = name == "fixed-nc";
    if (m.fixed_channels) {
      m.nccl_env.push_back(fmt::format("NCCL_MIN_CTAS={}", m.k));
    }
    m.nccl_env.push_back(fmt::format("NCCL_MAX_CTAS={}", m.k));
    return m;
  }
  if (name == "fixed-nc" || name == "nccl-max-ctas") {
    throw po::error(
        fmt::format("method '{}' needs a channel count: {}:K, e.g. {}:4", spec, name, name));
  }
  const std::optional<search::Method> known = search::parse_method(s);
  if (!known) {
    throw po::error(fmt::format("unknown method '{}' (known: {})", spec, kKnownMethods));
  }
  m.method = *known;
  return m;
}

std::vector<CompareMethod> compare_methods_of(const std::string& list) {
  std::vector<CompareMethod> ms;
  for (const std::string& name : method_names(list)) {
    ms.push_back(compare_method_of(name));
  }
  return ms;
}

// The same step as `base` under NCCL with `m`'s extra environment; its classes must be base's
// (the environment changes NCCL's choices, not the step).
SearchSetup ablation_setup(const CompareMethod& m, const SearchSetup& base,
                           const WorkloadInput& input, HardwareOptions hw, const ModelOptions& mo,
                           const TuneOptions& t, const po::variables_map& vm) {
  const int sms = static_cast<int>(base.step->hardware->profile.gpu.sms.value);
  if (m.fixed_channels && m.k > sms) {  // a cap (nccl-max-ctas) may exceed the SMs
    throw Error(fmt::format("method '{}': {} channels is more than the {} SMs of a {} GPU", m.label,
                            m.k, sms, base.step->hardware->profile.name));
  }
  hw.nccl_env.insert(hw.nccl_env.end(), m.nccl_env.begin(), m.nccl_env.end());
  SearchSetup s = setup_search(input, hw, mo, t, vm);
  const auto& a = base.eval->classes();
  const auto& b = s.eval->classes();
  bool same = a.size() == b.size();
  for (std::size_t j = 0; same && j < a.size(); ++j) {
    same = a[j].coll == b[j].coll && a[j].bytes == b[j].bytes && a[j].nranks == b[j].nranks &&
           a[j].calls == b[j].calls;
  }
  if (!same) {
    throw Error(fmt::format("method '{}': the step's collectives differ under {}", m.label,
                            fmt::join(m.nccl_env, " ")));
  }
  return s;
}

}  // namespace

int run_compare(const std::vector<std::string>& args, std::ostream& json_out) {
  WorkloadInput input;
  HardwareOptions hw;
  ModelOptions mo;
  TuneOptions t;
  std::string methods = "nccl,autoccl,lagom";
  std::string rows_csv;
  po::options_description desc(
      "Usage: lagom compare --model NAME --parallel P --cluster PRESET [--nodes N] [...model "
      "options]\n"
      "                     [--methods nccl,autoccl,lagom] [--json]\n\n"
      "Runs several search methods on the same step and prints one row per method: step time,\n"
      "speedup over NCCL's own choice, evaluations, search wall time, and the configuration\n"
      "each chose for the collectives that dominate the step.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "methods", po::value(&methods)->default_value("nccl,autoccl,lagom"),
      "comma-separated: nccl, autoccl, lagom, exhaustive, random; ablations lagom-roundrobin "
      "(Lagom with a fixed order instead of the priority H), fixed-nc:K (NCCL's choice on K "
      "channels) and nccl-max-ctas:K (NCCL under NCCL_MAX_CTAS=K)")(
      "json", "print a JSON report on stdout")(
      "csv", po::value(&rows_csv),
      "write one CSV row per method and collective class to FILE (configuration, time, NCCL's)");
  po::variables_map vm;
  if (!parse_step_options(args, desc, t, input, hw, mo, vm)) {
    return kExitOk;  // --help
  }
  const std::vector<CompareMethod> ms = compare_methods_of(methods);
  SearchSetup s = setup_search(input, hw, mo, t, vm);
  // NCCL's own choice on the step as given: what every row's speedup is over.
  const search::SearchResult nccl =
      search::run_search(*s.eval, search_options(t, search::Method::kNccl));
  std::vector<search::SearchResult> results;  // by method; every plan is over s's classes
  for (const CompareMethod& m : ms) {
    if (!m.nccl_env.empty()) {
      const SearchSetup ablation = ablation_setup(m, s, input, hw, mo, t, vm);
      search::SearchResult r =
          search::run_search(*ablation.eval, search_options(t, search::Method::kNccl));
      // Speedups and per-class NCCL times are over NCCL on the step as given.
      r.nccl_step_time = nccl.nccl_step_time;
      for (std::size_t j = 0; j < r.choices.size(); ++j) {
        r.choices[j].nccl_time_us = nccl.choices[j].nccl_time_us;
      }
      results.push_back(std::move(r));
      continue;
    }
    // Each method gets a fresh evaluator count; the step and its classes are shared.
    search::SearchOptions o = search_options(t, m.method);
    o.lagom_order = m.order;
    results.push_back(search::run_search(*s.eval, o));
  }
  if (!rows_csv.empty()) {
    std::vector<std::string> labels;
    for (const CompareMethod& m : ms) {
      labels.push_back(m.label);
    }
    write_classes_csv(rows_csv, *s.eval, labels, results);
  }
  const std::vector<std::size_t> top = dominant(*s.eval, nccl);
  const std::size_t shown = std::min<std::size_t>(3, top.size());
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["context"] = context_json(s, "compare");
    auto& rows = j["rows"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < results.size(); ++i) {
      const search::SearchResult& r = results[i];
      nlohmann::ordered_json row;
      row["method"] = ms[i].label;
      row["step_time_us"] = r.step_time.us();
      row["speedup_vs_nccl"] = r.nccl_step_time.us() / r.step_time.us();
      row["evaluations"] = r.evaluations;
      if (r.method == search::Method::kExhaustive) {
        row["ruled_out"] = r.bounded;
      }
      row["search_ms"] = r.search_ms;
      row["plan"] = classes_json(*s.eval, r);
      rows.push_back(std::move(row));
    }
    json_out << j.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("lagom {} ({}) compare\n", version(), git_sha());
  fmt::print("workload     {}\n", what_of(s));
  fmt::print("cluster      {}, profile {}; {} collective classes ({} grid, {} space)\n\n",
             s.cluster, s.profile, s.eval->classes().size(), to_string(s.eval->space().grid),
             to_string(s.eval->space().resources));
  fmt::print("{}", what_if_line(s));
  std::size_t width = 11;
  for (const CompareMethod& m : ms) {
    width = std::max(width, m.label.size());
  }
  std::string header = fmt::format("{:<{}} {:>16} {:>8} {:>6} {:>10}", "method", width, "step (us)",
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
  for (std::size_t m = 0; m < results.size(); ++m) {
    const search::SearchResult& r = results[m];
    std::string row =
        fmt::format("{:<{}} {:>16} {:>7.3f}x {:>6} {:>10.0f}", ms[m].label, width,
                    format_us(r.step_time.count_ns()), r.nccl_step_time.us() / r.step_time.us(),
                    r.evaluations, r.search_ms);
    for (std::size_t i = 0; i < shown; ++i) {
      row += fmt::format("  {:<36}", short_config(r.choices[top[i]].config));
    }
    print_row(row);
  }
  return kExitOk;
}

int compare_command(const std::vector<std::string>& args) {
  return run_compare(args, std::cout);
}

}  // namespace lagom::cli
