// What `lagom tune`, `lagom compare` and `lagom sensitivity` share: the search options, the
// step and hardware they work on and the evaluator over them, and their report pieces.
#pragma once

#include <boost/program_options.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hardware_options.hpp"
#include "lagom/search/search.hpp"
#include "model_input.hpp"
#include "step_input.hpp"
#include "workload_input.hpp"

namespace lagom::cli {

struct TuneOptions {
  std::string grid = "fine";
  std::string space = "nccl";
  std::string lagom_subspace = "best";
  std::string lagom_step = "points";
  std::string lagom_walk = "axis";
  std::string lagom_switch = "on";
  std::string exhaustive_bound = "on";
  double lagom_lr_scale = 1.0;
  double lagom_min_gain = 0.002;
  bool lagom_no_step_guard = false;
  bool lagom_no_park = false;
  bool lagom_no_hidden_stop = false;
  int autoccl_pretrain = 20;
  int autoccl_train = 50;
  double autoccl_min_gain = 0;
  std::int64_t budget = 0;
  std::uint64_t seed = 1;
  bool no_fold = false;
  int jobs = 1;  // -j: threads for a round's independent candidates
};

search::SpaceOptions space_options(const TuneOptions& t);
search::SearchOptions search_options(const TuneOptions& t, search::Method m);

// Adds the options tune, compare and sensitivity share to `desc` and parses `args`; false after
// printing the help.
bool parse_step_options(const std::vector<std::string>& args,
                        boost::program_options::options_description& desc, TuneOptions& t,
                        WorkloadInput& input, HardwareOptions& hw, ModelOptions& mo,
                        boost::program_options::variables_map& vm);

search::Method method_of(const std::string& name);
// "nccl,autoccl,lagom" -> the names; boost::program_options::error for an empty list.
std::vector<std::string> method_names(const std::string& list);
// "nccl,autoccl,lagom" -> methods; boost::program_options::error for an unknown or empty list.
std::vector<search::Method> methods_of(const std::string& list);

// What the command works on: the step, the hardware and the evaluator over them. The evaluator
// refers into the step, which therefore lives on the heap: a SearchSetup may be moved.
struct SearchSetup {
  std::unique_ptr<StepInput> step;
  std::unique_ptr<search::Evaluator> eval;
  std::string cluster;  // "a40-nvlink x1"
  std::string profile;
};

SearchSetup setup_search(const WorkloadInput& input, const HardwareOptions& hw, ModelOptions mo,
                         const TuneOptions& t, const boost::program_options::variables_map& vm);

std::string what_of(const SearchSetup& s);
// "what-if      --set ..., --scale ...\n" for the text reports; "" without overrides.
std::string what_if_line(const SearchSetup& s);
std::string short_config(const nccl::CommConfig& c);
nlohmann::ordered_json config_json(const nccl::CommConfig& c);
// The plan's classes, for reports: one entry per class.
nlohmann::ordered_json classes_json(const search::Evaluator& eval, const search::SearchResult& r);
// Classes by NCCL's total time in the step (calls x time), largest first.
std::vector<std::size_t> dominant(const search::Evaluator& eval, const search::SearchResult& nccl);
nlohmann::ordered_json context_json(const SearchSetup& s, const std::string& command);
// `--csv` of tune and compare: one row per method and collective class (the method's step time
// and speedup, the class, its chosen configuration and time, NCCL's configuration and time).
void write_classes_csv(const std::string& path, const search::Evaluator& eval,
                       const std::vector<std::string>& methods,
                       const std::vector<search::SearchResult>& results);

}  // namespace lagom::cli
