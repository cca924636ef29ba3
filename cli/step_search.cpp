// The search setup tune, compare and sensitivity share (see step_search.hpp).
#include "step_search.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include "command_line.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/units.hpp"
#include "memory_budget.hpp"
#include "report.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

namespace {

void add_tune_options(po::options_description& desc, TuneOptions& t) {
  desc.add_options()("budget", integer_option(&t.budget, "--budget", 1, 1000000000, "evaluations"),
                     "evaluations (simulations) at most; default per method: autoccl 2000, "
                     "lagom 1000, random 200, exhaustive 100000")(
      "seed",
      integer_option(&t.seed, "--seed", 0, std::numeric_limits<std::int64_t>::max(), {})
          ->default_value("1"),
      "random: the seed")(
      "grid", po::value(&t.grid)->default_value("fine"),
      "fine (channels 1..64, every thread count, 32 chunk sizes) or coarse (channels powers of "
      "2, NCCL's threads, 4 chunk sizes)")(
      "space", po::value(&t.space)->default_value("nccl"),
      "nccl (algorithm, protocol and channels per collective: what stock NCCL applies per call "
      "through the tuner plugin, so the plan is applied exactly) or full (also threads and chunk "
      "per collective, as AutoCCL and the Lagom paper tune them on a patched NCCL)")(
      "lagom-subspace", po::value(&t.lagom_subspace)->default_value("best"),
      "lagom: grow resources in NCCL's own algorithm/protocol (nccl), in the fastest one at "
      "NCCL's resources (best), or walk every one and keep the best (all: one walk per "
      "subspace)")("no-contention",
                   "overlapping ops run as if alone (the searches then see no "
                   "interference)")(
      "lagom-step", po::value(&t.lagom_step)->default_value("points"),
      "lagom: after a relative gain g, grow each resource by g grid points (points, at least "
      "one) or by g times the points on its axis (axis, AutoCCL's reading)")(
      "lagom-walk", po::value(&t.lagom_walk)->default_value("axis"),
      "lagom: grow every resource at once (lockstep, the paper's pseudocode) or try each "
      "resource's step alone and keep the best (axis)")(
      "lagom-lr-scale",
      real_option(&t.lagom_lr_scale, "--lagom-lr-scale", 1e-9, 1000, {})->default_value("1"),
      "lagom: multiplies the growth step")(
      "lagom-min-gain",
      real_option(&t.lagom_min_gain, "--lagom-min-gain", 0, 0.999999, "fraction")
          ->default_value("0.002"),
      "lagom: a step must shorten the collective by more than this fraction to continue")(
      "lagom-no-step-guard", po::bool_switch(&t.lagom_no_step_guard),
      "lagom: keep growing a collective while it gets faster even when the step gets longer")(
      "lagom-no-hidden-stop", po::bool_switch(&t.lagom_no_hidden_stop),
      "lagom: keep growing a collective whose overlap groups' communication is already hidden "
      "(the paper's condition 1 ends it there)")(
      "autoccl-pretrain",
      integer_option(&t.autoccl_pretrain, "--autoccl-pretrain", 0, 100000, "samples")
          ->default_value("20"),
      "autoccl: pretrain samples per collective, shared by its subspaces (AutoCCL's "
      "TUNER_PRETRAIN_STEPS)")(
      "autoccl-min-gain",
      real_option(&t.autoccl_min_gain, "--autoccl-min-gain", 0, 0.999999, "fraction")
          ->default_value("0"),
      "autoccl: a candidate must be faster than the best so far by more than this fraction "
      "(measurement noise on GPUs)")(
      "autoccl-train",
      integer_option(&t.autoccl_train, "--autoccl-train", 1, 100000, "steps")->default_value("50"),
      "autoccl: coordinate-descent steps per collective, shared by its subspaces "
      "(TUNER_TRAIN_STEPS)")(
      "lagom-switch", po::value(&t.lagom_switch)->default_value("on"),
      "lagom: on or off: whether a collective whose walk ends tries the other (algorithm, "
      "protocol) pairs once, at its channels, and walks on in one that gains")(
      "exhaustive-bound", po::value(&t.exhaustive_bound)->default_value("on"),
      "exhaustive: on (combinations that a lower bound on the step rules out are not simulated; "
      "the same plan, docs/search.md §4) or off (every combination simulated)")(
      "lagom-no-park", po::bool_switch(&t.lagom_no_park),
      "lagom: a collective whose every step the step guard refused ends there (by default it "
      "waits for another collective to move and tries again)")(
      "jobs,j", integer_option(&t.jobs, "-j", 1, 1024, "threads")->default_value("1"),
      "simulate a round's independent candidates on N threads (Lagom's per-resource tries, the "
      "random and exhaustive draws; AutoCCL's rounds each depend on the last); the results are "
      "the same for every N")(
      "no-fold", po::bool_switch(&t.no_fold),
      "with --model: simulate every data-parallel replica and tensor-parallel rank (by default "
      "one replica stands for all where replicas do not share nodes, and one tensor-parallel "
      "rank for all where tensor parallelism is the only parallelism or fills whole nodes of "
      "alike GPUs: the same step time; docs/models.md §8)");
}

}  // namespace

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
  o.jobs = t.jobs;
  if (t.lagom_subspace == "nccl") {
    o.lagom_subspace = search::LagomSubspace::kNccl;
  } else if (t.lagom_subspace == "best") {
    o.lagom_subspace = search::LagomSubspace::kBest;
  } else if (t.lagom_subspace == "all") {
    o.lagom_subspace = search::LagomSubspace::kAll;
  } else {
    throw po::error(
        fmt::format("--lagom-subspace must be nccl, best or all, got '{}'", t.lagom_subspace));
  }
  if (t.lagom_walk == "lockstep") {
    o.lagom_walk = search::LagomWalk::kLockstep;
  } else if (t.lagom_walk == "axis") {
    o.lagom_walk = search::LagomWalk::kPerAxis;
  } else {
    throw po::error(fmt::format("--lagom-walk must be lockstep or axis, got '{}'", t.lagom_walk));
  }
  if (t.lagom_step == "points") {
    o.lagom_step = search::LagomStep::kPoints;
  } else if (t.lagom_step == "axis") {
    o.lagom_step = search::LagomStep::kAxis;
  } else {
    throw po::error(fmt::format("--lagom-step must be points or axis, got '{}'", t.lagom_step));
  }
  o.lagom_lr_scale = t.lagom_lr_scale;
  o.lagom_min_gain = t.lagom_min_gain;
  o.lagom_step_guard = !t.lagom_no_step_guard;
  o.lagom_park = !t.lagom_no_park;
  o.lagom_hidden_stop = !t.lagom_no_hidden_stop;
  if (t.lagom_switch != "on" && t.lagom_switch != "off") {
    throw po::error(fmt::format("--lagom-switch must be on or off, got '{}'", t.lagom_switch));
  }
  o.lagom_switch = t.lagom_switch == "on";
  if (t.exhaustive_bound != "on" && t.exhaustive_bound != "off") {
    throw po::error(
        fmt::format("--exhaustive-bound must be on or off, got '{}'", t.exhaustive_bound));
  }
  o.exhaustive_bound = t.exhaustive_bound == "on";
  o.autoccl_min_gain = t.autoccl_min_gain;
  // Long searches (random and exhaustive on TP steps take minutes) say how far they are.
  o.progress = [m, budget = t.budget](std::int64_t done, double seconds) {
    fmt::print(stderr, "lagom: {}: {} evaluations{} in {:.0f} s\n", search::to_string(m), done,
               budget > 0 ? fmt::format(" of at most {}", budget) : "", seconds);
  };
  o.autoccl_pretrain = t.autoccl_pretrain;
  o.autoccl_train = t.autoccl_train;
  return o;
}

bool parse_step_options(const std::vector<std::string>& args, po::options_description& desc,
                        TuneOptions& t, WorkloadInput& input, HardwareOptions& hw, ModelOptions& mo,
                        po::variables_map& vm) {
  add_tune_options(desc, t);
  add_workload_input_options(desc, input);
  add_hardware_options(desc, hw);
  add_model_options(desc, mo);
  return parse_command_line(args, desc, vm);
}

std::vector<std::string> method_names(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    names.push_back(name);
  }
  if (names.empty()) {
    throw po::error("--methods lists no method");
  }
  return names;
}

std::vector<search::Method> methods_of(const std::string& list) {
  std::vector<search::Method> ms;
  for (const std::string& name : method_names(list)) {
    ms.push_back(method_of(name));
  }
  return ms;
}

search::Method method_of(const std::string& name) {
  auto m = search::parse_method(name);
  if (!m) {
    throw po::error(
        fmt::format("unknown method '{}' (known: nccl, autoccl, lagom, exhaustive, random)", name));
  }
  return *m;
}

SearchSetup setup_search(const WorkloadInput& input, const HardwareOptions& hw, ModelOptions mo,
                         const TuneOptions& t, const po::variables_map& vm) {
  // Only a generated step folds, and not one whose replicas may differ.
  refuse_fold_if_replicas_differ(hw, mo, "searches then run unfolded");
  const bool asked = mo.fold;
  mo.fold = !t.no_fold && model_requested(mo, vm) && !replicas_may_differ(hw, mo);
  mo.fold_by_default = mo.fold && !asked;
  // Tensor-parallel ranks fold where that is exact (models::tp_folds_exactly).
  mo.fold_tp = mo.fold;
  SearchSetup s;
  s.step = std::make_unique<StepInput>(load_step_input(input, hw, mo, vm, /*need_cluster=*/true));
  const Hardware& h = *s.step->hardware;
  check_search_threads(static_cast<double>(s.step->in.workload.op_count()), t.jobs,
                       s.step->in.source);
  try {
    s.eval = std::make_unique<search::Evaluator>(s.step->in.workload, h.cluster, h.profile,
                                                 space_options(t), !vm.count("no-contention"));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", s.step->in.source, e.what()));
  }
  s.cluster = fmt::format("{} x{}", h.cluster.name(), h.cluster.nodes());
  if (const std::string env = topologies::describe_nccl_env(h.cluster.spec()); !env.empty()) {
    s.cluster += ", " + env;
  }
  s.profile = h.profile.origin;
  return s;
}

std::string what_if_line(const SearchSetup& s) {
  const std::vector<std::string>& o = s.step->hardware->overrides;
  return o.empty() ? "" : fmt::format("what-if      {}\n", fmt::join(o, ", "));
}

std::string what_of(const SearchSetup& s) {
  return s.step->generated.empty() ? s.step->in.source : s.step->generated;
}

std::string short_config(const nccl::CommConfig& c) {
  return fmt::format("{}/{} nc={} nt={} c={}", nccl::to_string(c.algo), nccl::to_string(c.proto),
                     c.nchannels, c.nthreads, format_bytes(c.chunk_bytes));
}

nlohmann::ordered_json config_json(const nccl::CommConfig& c) {
  return {{"algo", nccl::to_string(c.algo)},
          {"proto", nccl::to_string(c.proto)},
          {"nchannels", c.nchannels},
          {"nthreads", c.nthreads},
          {"chunk_bytes", c.chunk_bytes}};
}

nlohmann::ordered_json classes_json(const search::Evaluator& eval, const search::SearchResult& r) {
  auto arr = nlohmann::ordered_json::array();
  const auto& classes = eval.classes();
  for (std::size_t j = 0; j < classes.size(); ++j) {
    const search::CollClass& c = classes[j];
    const search::ClassChoice& ch = r.choices[j];
    nlohmann::ordered_json e;
    e["coll"] = nccl::to_string(c.coll);
    e["bytes"] = c.bytes;
    e["nnodes"] = c.nnodes;
    e["nranks"] = c.nranks;
    e["calls"] = c.step_calls;
    e["config"] = config_json(ch.config);
    e["time_us"] = ch.time_us;
    e["nccl"] = config_json(c.nccl);
    e["nccl_time_us"] = ch.nccl_time_us;
    arr.push_back(std::move(e));
  }
  return arr;
}

std::vector<std::size_t> dominant(const search::Evaluator& eval, const search::SearchResult& nccl) {
  std::vector<std::size_t> order(eval.classes().size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return nccl.choices[a].nccl_time_us * static_cast<double>(eval.classes()[a].step_calls) >
           nccl.choices[b].nccl_time_us * static_cast<double>(eval.classes()[b].step_calls);
  });
  return order;
}

void write_classes_csv(const std::string& path, const search::Evaluator& eval,
                       const std::vector<std::string>& methods,
                       const std::vector<search::SearchResult>& results) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::size_t m = 0; m < results.size(); ++m) {
    const search::SearchResult& r = results[m];
    for (auto& c : classes_json(eval, r)) {
      nlohmann::ordered_json row;
      row["method"] = methods[m];
      row["step_time_us"] = r.step_time.us();
      row["speedup_vs_nccl"] = r.nccl_step_time.us() / r.step_time.us();
      row["evaluations"] = r.evaluations;
      for (auto& [key, value] : c.items()) {
        row[key] = value;
      }
      rows.push_back(std::move(row));
    }
  }
  write_rows_csv(path, rows);
}

nlohmann::ordered_json context_json(const SearchSetup& s, const std::string& command) {
  nlohmann::ordered_json c = context_block(command);
  c["workload"] = what_of(s);
  c["input_hash"] = s.step->in.input_hash;
  c["cluster"] = s.cluster;
  c["profile"] = s.profile;
  if (!s.step->hardware->overrides.empty()) {
    c["overrides"] = s.step->hardware->overrides;
  }
  c["grid"] = to_string(s.eval->space().grid);
  c["space"] = to_string(s.eval->space().resources);
  c["collective_classes"] = s.eval->classes().size();
  if (s.step->folded > 1) {
    c["folded_replicas"] = s.step->folded;
  }
  return c;
}

}  // namespace lagom::cli
