// `lagom validate --published FILE|DIR ...`: every published training run in the files simulated
// as `lagom simulate --model ... --parallel ...` would, and its throughput error against the
// published number (calibrate/published.hpp, docs/formats/published-runs.md, docs/VALIDATION.md).
//
// Runs go to -j threads, each an independent simulation; the rows come out in file and run order
// whatever -j is, so the output's bytes depend only on the files and lagom.
#include <fmt/format.h>

#include <atomic>
#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "command_line.hpp"
#include "commands.hpp"
#include "lagom/calibrate/published.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/interrupt.hpp"
#include "lagom/common/text.hpp"
#include "report.hpp"

namespace lagom::cli {
namespace {

namespace po = boost::program_options;
using calibrate::PublishedRun;
using calibrate::PublishedSet;

struct Outcome {
  bool ok = false;
  double step_s = 0;
  double predicted = 0;
  double error = 0;
  std::string message;
};

std::vector<std::string> simulate_args(const PublishedRun& r, const std::string& profile) {
  std::vector<std::string> a = {"--model",     r.model,
                                "--parallel",  r.parallel,
                                "--cluster",   r.cluster,
                                "--nodes",     std::to_string(r.nodes),
                                "--mbs",       std::to_string(r.mbs),
                                "--gbs",       std::to_string(r.gbs),
                                "--seq",       std::to_string(r.seq),
                                "--recompute", r.recompute,
                                "--precision", r.precision,
                                "--json",      "--no-op-times"};
  if (r.fold) {
    a.push_back("--fold");
  }
  for (const std::string& s : r.set) {
    a.push_back("--set");
    a.push_back(s);
  }
  if (!profile.empty()) {
    a.push_back("--profile");
    a.push_back(profile);
  }
  return a;
}

Outcome run_one(const PublishedSet& set, const PublishedRun& r, const std::string& profile) {
  Outcome o;
  try {
    std::ostringstream out;
    run_simulate(simulate_args(r, profile), out);
    const nlohmann::json j = nlohmann::json::parse(out.str());
    o.step_s = j.at("step_time_us").get<double>() * 1e-6;
    // Tokens per GPU divide by the run's GPUs: they must be the ones simulated (a folded run
    // simulates one data-parallel replica, so only an unfolded one can be checked).
    const int ranks = j.at("workload").at("ranks").get<int>();
    if (!r.fold && ranks != r.gpus) {
      throw Error(fmt::format("the run says {} GPUs but '{}' on {} node(s) simulates {} ranks",
                              r.gpus, r.parallel, r.nodes, ranks));
    }
    if (!(o.step_s > 0)) {
      throw Error("the simulated step takes no time");
    }
    o.predicted = calibrate::predicted_value(set.metric, r, o.step_s);
    o.error = calibrate::throughput_error(set.metric, r, o.step_s);
    o.ok = true;
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    o.message = e.what();
    std::replace(o.message.begin(), o.message.end(), '\n', ' ');
  }
  return o;
}

std::string error_pct(double e) {
  return fmt::format("{:+.1f}%", 100 * e);
}

std::string summary_line(const calibrate::PublishedErrors& s) {
  if (s.runs == 0) {
    return "no run could be simulated";
  }
  return fmt::format(
      "{} runs: median |error| {:.1f}% (signed {}), worst {:.1f}%, within 5%: {}, within 15%: {}",
      s.runs, 100 * s.median_abs, error_pct(s.median_signed), 100 * s.worst_abs, s.within_5,
      s.within_15);
}

nlohmann::ordered_json summary_json(const calibrate::PublishedErrors& s) {
  return {{"runs", s.runs},
          {"median_abs_error", s.median_abs},
          {"median_error", s.median_signed},
          {"worst_abs_error", s.worst_abs},
          {"within_5pct", s.within_5},
          {"within_15pct", s.within_15}};
}

}  // namespace

int validate_published_command(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  std::string csv_path;
  std::string only;
  std::string profile;
  int jobs = 1;
  po::options_description desc(
      "Usage: lagom validate --published FILE|DIR [--published ...] [-j N] [--run TEXT]\n"
      "                      [--profile P] [--csv FILE] [--json]\n\n"
      "Simulates every published training run in the files (a folder: its *.json files;\n"
      "docs/formats/published-runs.md) as `lagom simulate` would, and prints each run's\n"
      "published and predicted number and the throughput error: predicted / published - 1 in\n"
      "tokens per second (+20% means lagom says the run was 20% faster than it was). The\n"
      "project's set is tests/data/published-runs (docs/VALIDATION.md §4).\n\nOptions");
  desc.add_options()("help,h", "show this help")("published", po::value(&paths)->multitoken(),
                                                 "a published-runs file or folder (repeatable)")(
      "jobs,j", integer_option(&jobs, "-j", 1, 1024, "threads")->default_value("1"),
      "simulate this many runs at once")("run", po::value(&only),
                                         "only the runs whose name contains this text")(
      "profile", po::value(&profile), "a hardware profile for every run (default: the cluster's)")(
      "csv", po::value(&csv_path), "also write one CSV row per run to this file")(
      "json", "print a JSON report");
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm)) {
    return kExitOk;
  }
  if (paths.empty()) {
    throw po::error("--published needs a published-runs file or folder");
  }
  std::vector<PublishedSet> sets;
  for (const std::string& p : paths) {
    for (const std::string& f : calibrate::published_run_files(p)) {
      sets.push_back(calibrate::load_published_runs(f));
    }
  }
  struct Job {
    std::size_t set = 0;
    std::size_t run = 0;
  };
  std::vector<Job> todo;
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (std::size_t r = 0; r < sets[s].runs.size(); ++r) {
      if (only.empty() || sets[s].runs[r].name.find(only) != std::string::npos) {
        todo.push_back({s, r});
      }
    }
  }
  if (todo.empty()) {
    throw Error(fmt::format("no published run's name contains '{}'", only));
  }
  std::vector<Outcome> outcomes(todo.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < todo.size() && !interrupt_requested(); i = next++) {
      outcomes[i] = run_one(sets[todo[i].set], sets[todo[i].set].runs[todo[i].run], profile);
    }
  };
  std::vector<std::thread> pool;
  const std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(jobs), todo.size());
  for (std::size_t t = 1; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  worker();
  for (std::thread& t : pool) {
    t.join();
  }
  if (interrupt_requested()) {
    throw Interrupted();
  }

  std::vector<double> all_errors;
  std::vector<std::vector<double>> set_errors(sets.size());
  int failed = 0;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    if (outcomes[i].ok) {
      all_errors.push_back(outcomes[i].error);
      set_errors[todo[i].set].push_back(outcomes[i].error);
    } else {
      ++failed;
    }
  }
  const calibrate::PublishedErrors total = calibrate::summarize_errors(all_errors);

  if (!csv_path.empty()) {
    write_file_with(
        csv_path,
        [&](std::ostream& out) {
          out << "file,run,metric,published,predicted,error,step_time_s,status,message\n";
          for (std::size_t i = 0; i < todo.size(); ++i) {
            const PublishedSet& s = sets[todo[i].set];
            const PublishedRun& r = s.runs[todo[i].run];
            const Outcome& o = outcomes[i];
            out << fmt::format("{},{},{},{},{},{},{},{},{}\n", csv_quote(s.name), csv_quote(r.name),
                               calibrate::to_string(s.metric), r.published,
                               o.ok ? fmt::format("{:.6g}", o.predicted) : "",
                               o.ok ? fmt::format("{:.6f}", o.error) : "",
                               o.ok ? fmt::format("{:.6f}", o.step_s) : "", o.ok ? "ok" : "error",
                               csv_quote(o.message));
          }
        },
        "published-runs CSV");
  }
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["context"] = context_block("validate", {{"published", paths}});
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (std::size_t s = 0; s < sets.size(); ++s) {
      nlohmann::ordered_json runs = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < todo.size(); ++i) {
        if (todo[i].set != s) {
          continue;
        }
        const PublishedRun& r = sets[s].runs[todo[i].run];
        const Outcome& o = outcomes[i];
        nlohmann::ordered_json row = {{"run", r.name}, {"published", r.published}};
        if (o.ok) {
          row["predicted"] = o.predicted;
          row["error"] = o.error;
          row["step_time_s"] = o.step_s;
        } else {
          row["failed"] = o.message;
        }
        runs.push_back(std::move(row));
      }
      files.push_back({{"name", sets[s].name},
                       {"origin", sets[s].origin},
                       {"metric", calibrate::to_string(sets[s].metric)},
                       {"source", sets[s].source},
                       {"summary", summary_json(calibrate::summarize_errors(set_errors[s]))},
                       {"runs", std::move(runs)}});
    }
    j["files"] = std::move(files);
    j["summary"] = summary_json(total);
    j["failed"] = failed;
    std::cout << j.dump(1) << "\n";
  } else {
    fmt::print("lagom validate --published: {} runs from {} file(s)\n", todo.size(), sets.size());
    for (std::size_t s = 0; s < sets.size(); ++s) {
      fmt::print("\n{} ({}): {}\n  source: {}\n", sets[s].name,
                 calibrate::to_string(sets[s].metric), sets[s].description, sets[s].source);
      fmt::print("  {:<44} {:>12} {:>12} {:>8}\n", "run", "published", "predicted", "error");
      for (std::size_t i = 0; i < todo.size(); ++i) {
        if (todo[i].set != s) {
          continue;
        }
        const PublishedRun& r = sets[s].runs[todo[i].run];
        const Outcome& o = outcomes[i];
        if (o.ok) {
          fmt::print("  {:<44} {:>12.4g} {:>12.4g} {:>8}\n", r.name, r.published, o.predicted,
                     error_pct(o.error));
        } else {
          fmt::print("  {:<44} {:>12.4g} {:>12} failed: {}\n", r.name, r.published, "-", o.message);
        }
      }
      if (!set_errors[s].empty()) {
        fmt::print("  {}\n", summary_line(calibrate::summarize_errors(set_errors[s])));
      }
    }
    fmt::print("\nall          {}\n", summary_line(total));
    if (failed > 0) {
      fmt::print("failed       {} run(s) could not be simulated (see above)\n", failed);
    }
  }
  return failed > 0 ? kExitError : kExitOk;
}

}  // namespace lagom::cli
