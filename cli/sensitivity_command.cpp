// `lagom sensitivity`: reruns a comparison with every unmeasured number of the hardware profile
// scaled (0.5x and 1.5x by default) and shows how the step and each method's speedup move, so a
// reader can see which conclusions rest on a guess.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command_line.hpp"
#include "commands.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/numbers.hpp"
#include "lagom/common/units.hpp"
#include "step_search.hpp"

namespace lagom::cli {
namespace {

namespace po = boost::program_options;

struct Outcome {
  bool ok = false;
  std::string why;  // when not ok: why the scaled profile was refused
  double nccl_step_us = 0;
  std::vector<double> speedup;  // per method, over NCCL's choice under the same profile
};

struct Row {
  std::string field;
  double value = 0;
  std::string source;
  std::vector<Outcome> scaled;  // per factor
  double swing = 0;             // largest |speedup - baseline| over methods and factors
  double step_swing = 0;        // largest |NCCL step / baseline - 1|
};

Outcome run(const SearchSetup& s, const hardware::HardwareProfile& profile, const TuneOptions& t,
            const std::vector<search::Method>& methods, bool contention) {
  Outcome o;
  const Hardware& h = *s.step->hardware;
  search::Evaluator eval(s.step->in.workload, h.cluster, profile, space_options(t), contention);
  double nccl = 0;
  for (search::Method m : methods) {
    const search::SearchResult r = search::run_search(eval, search_options(t, m));
    nccl = r.nccl_step_time.us();
    o.speedup.push_back(nccl / r.step_time.us());
  }
  o.nccl_step_us = nccl;
  o.ok = true;
  return o;
}

std::vector<double> parse_factors(const std::string& list) {
  std::vector<double> out;
  std::stringstream in(list);
  for (std::string f; std::getline(in, f, ',');) {
    try {
      const double v = parse_real(f, "--factors", 1e-6, 1e6, "a factor other than 1");
      if (v == 1.0) {
        throw Error(fmt::format("--factors: 1 is the baseline itself, got '{}'", f));
      }
      out.push_back(v);
    } catch (const Error& e) {
      throw po::error(e.what());
    }
  }
  if (out.empty()) {
    throw po::error("--factors lists no factor");
  }
  return out;
}

}  // namespace

int sensitivity_command(const std::vector<std::string>& args) {
  WorkloadInput input;
  HardwareOptions hw;
  ModelOptions mo;
  TuneOptions t;
  std::string methods = "lagom,autoccl";
  std::string factors = "0.5,1.5";
  std::string only;
  double threshold = 0.001;
  po::options_description desc(
      "Usage: lagom sensitivity --model NAME --parallel P --cluster PRESET [...model options]\n"
      "                         [--methods lagom,autoccl] [--factors 0.5,1.5] [--only TEXT]\n"
      "                         [--threshold 0.001] [--json]\n\n"
      "Reruns `lagom compare` with every unmeasured number of the hardware profile (a prior, a\n"
      "reader default or one of NCCL's model constants; fitted numbers and hardware facts are\n"
      "left alone) scaled by each factor, and prints how NCCL's step time and each method's\n"
      "speedup over NCCL move, largest swing first. Numbers that move nothing by more than\n"
      "--threshold are summarised at the end. docs/RESULTS.md has the table for the paper's\n"
      "workloads.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "methods", po::value(&methods)->default_value("lagom,autoccl"),
      "comma-separated methods to compare with NCCL's choice (nccl is always the baseline)")(
      "factors", po::value(&factors)->default_value("0.5,1.5"),
      "comma-separated scale factors for each prior")(
      "only", po::value(&only), "only priors whose path contains TEXT (e.g. contention.)")(
      "threshold",
      real_option(&threshold, "--threshold", 0, 1000, "fraction")->default_value("0.001"),
      "a prior whose swings in speedup and step stay below this is summarised, not listed")(
      "json", "print a JSON report on stdout");
  po::variables_map vm;
  if (!parse_step_options(args, desc, t, input, hw, mo, vm)) {
    return kExitOk;  // --help
  }
  std::vector<search::Method> ms = methods_of(methods);
  ms.erase(std::remove(ms.begin(), ms.end(), search::Method::kNccl), ms.end());
  if (ms.empty()) {
    throw po::error("--methods must name a method other than nccl");
  }
  const std::vector<double> fs = parse_factors(factors);
  const bool contention = !vm.count("no-contention");
  SearchSetup s = setup_search(input, hw, mo, t, vm);
  const hardware::HardwareProfile base = s.step->hardware->profile;
  if (!only.empty()) {
    // An --only that matches no prior would print an empty table as if nothing mattered.
    hardware::HardwareProfile copy = base;
    std::vector<std::string> priors;
    bool any = false;
    for (const hardware::ProfileField& f : hardware::profile_fields(copy)) {
      if (hardware::is_prior(*f.number)) {
        any = any || f.path.find(only) != std::string::npos;
        priors.push_back(f.path);
      }
    }
    if (!any) {
      throw Error(fmt::format("--only '{}' matches no prior of profile '{}' (its priors: {})", only,
                              base.name, fmt::join(priors, ", ")));
    }
  }
  const Outcome baseline = run(s, base, t, ms, contention);

  std::vector<Row> rows;
  hardware::HardwareProfile probe = base;
  for (const hardware::ProfileField& f : hardware::profile_fields(probe)) {
    if (!hardware::is_prior(*f.number) ||
        (!only.empty() && f.path.find(only) == std::string::npos)) {
      continue;
    }
    Row row{f.path, f.number->value, f.number->source, {}, 0, 0};
    for (double factor : fs) {
      hardware::HardwareProfile scaled = base;
      for (const hardware::ProfileField& g : hardware::profile_fields(scaled)) {
        if (g.path == f.path) {
          g.number->value *= factor;
        }
      }
      Outcome o;
      try {
        // Through the reader, so that a scaled value outside what a profile may hold is refused
        // with the reader's reason rather than simulated.
        scaled = hardware::parse_profile_json(hardware::profile_to_json(scaled), base.origin);
        o = run(s, scaled, t, ms, contention);
      } catch (const Error& e) {
        o.ok = false;
        o.why = e.what();
      }
      if (o.ok) {
        row.step_swing =
            std::max(row.step_swing, std::abs(o.nccl_step_us / baseline.nccl_step_us - 1));
        for (std::size_t k = 0; k < ms.size(); ++k) {
          row.swing = std::max(row.swing, std::abs(o.speedup[k] - baseline.speedup[k]));
        }
      }
      row.scaled.push_back(std::move(o));
    }
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.swing > b.swing; });

  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["context"] = context_json(s, "sensitivity");
    j["factors"] = fs;
    auto& mj = j["methods"] = nlohmann::ordered_json::array();
    for (search::Method m : ms) {
      mj.push_back(to_string(m));
    }
    j["baseline"] = {{"nccl_step_time_us", baseline.nccl_step_us},
                     {"speedup_vs_nccl", baseline.speedup}};
    auto& rj = j["priors"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      nlohmann::ordered_json e;
      e["field"] = r.field;
      e["value"] = r.value;
      e["source"] = r.source;
      e["speedup_swing"] = r.swing;
      e["step_swing"] = r.step_swing;
      auto& sj = e["scaled"] = nlohmann::ordered_json::array();
      for (std::size_t k = 0; k < fs.size(); ++k) {
        const Outcome& o = r.scaled[k];
        nlohmann::ordered_json oj;
        oj["factor"] = fs[k];
        if (o.ok) {
          oj["nccl_step_time_us"] = o.nccl_step_us;
          oj["speedup_vs_nccl"] = o.speedup;
        } else {
          oj["refused"] = o.why;
        }
        sj.push_back(std::move(oj));
      }
      rj.push_back(std::move(e));
    }
    std::cout << j.dump(1) << "\n";
    return kExitOk;
  }
  fmt::print("lagom {} ({}) sensitivity\n", version(), git_sha());
  fmt::print("workload     {}\n", what_of(s));
  fmt::print("cluster      {}, profile {}\n{}", s.cluster, s.profile, what_if_line(s));
  std::string base_line =
      fmt::format("baseline     NCCL step {} us",
                  format_us(static_cast<std::int64_t>(std::llround(baseline.nccl_step_us * 1e3))));
  for (std::size_t k = 0; k < ms.size(); ++k) {
    base_line += fmt::format(", {} {:.3f}x", to_string(ms[k]), baseline.speedup[k]);
  }
  fmt::print("{}\n\n", base_line);
  std::string header = fmt::format("{:<52} {:>10}", "prior (scaled by each factor)", "value");
  for (double f : fs) {
    header += fmt::format("  {:>8}", fmt::format("x{:g} step", f));
    for (search::Method m : ms) {
      header += fmt::format(" {:>9}", fmt::format("{}", to_string(m)));
    }
  }
  fmt::print("{}\n", header);
  int quiet = 0;
  for (const Row& r : rows) {
    if (r.swing < threshold && r.step_swing < threshold) {
      ++quiet;
      continue;
    }
    std::string line = fmt::format("{:<52} {:>10.4g}", r.field, r.value);
    for (const Outcome& o : r.scaled) {
      if (!o.ok) {
        line += fmt::format("  {:>8}", "refused");
        for (std::size_t k = 0; k < ms.size(); ++k) {
          line += fmt::format(" {:>9}", "-");
        }
        continue;
      }
      line += fmt::format("  {:>+7.1f}%", 100 * (o.nccl_step_us / baseline.nccl_step_us - 1));
      for (double sp : o.speedup) {
        line += fmt::format(" {:>8.3f}x", sp);
      }
    }
    fmt::print("{}\n", line);
  }
  fmt::print("\n{} of {} priors move neither NCCL's step nor any speedup by {:g} or more", quiet,
             rows.size(), threshold);
  int refused = 0;
  for (const Row& r : rows) {
    for (const Outcome& o : r.scaled) {
      refused += o.ok ? 0 : 1;
    }
  }
  if (refused > 0) {
    fmt::print(
        "; {} scaled values were refused by the profile reader (outside its range or its "
        "rules; --json gives the reasons)",
        refused);
  }
  fmt::print("\n");
  return kExitOk;
}

}  // namespace lagom::cli
