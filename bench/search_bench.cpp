// Tuning a whole training step with the simulator as the oracle (issue: search): Llama 3 8B
// FSDP on 16 A40s (2 a40-nvlink nodes), the paper's Table 2 setup, with every method. The
// issue's target is Lagom under 2 s for the whole step. Counters: evaluations, simulations (a
// repeat is looked up; -j adds look-ahead ones), the step under the plan and NCCL's, and ms per
// evaluation. The scale issue's case: `lagom tune` of the folded GPT-3 175B step on 128 H100s,
// on 1 and 2 threads (-j), target under 3 s on 2 cores.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include "engine_bench.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/models/generator.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/search/evaluator.hpp"
#include "lagom/search/search.hpp"
#include "lagom/topologies/cluster.hpp"

namespace lagom::bench {
namespace {

using Tweak = void (*)(search::SearchOptions&);
void defaults(search::SearchOptions&) {}

// A step to tune: generated from a model on a cluster preset, with the profile the preset's GPU
// takes.
struct TuneCase {
  const char* cluster = "a40-nvlink";
  int nodes = 1;
  const char* profile = "a40";
  const char* model = "llama3-8b";
  const char* parallel = "fsdp=16";
  int mbs = 1;
  int gbs = 32;
  int seq = 0;  // the model's
  models::Overlap overlap = models::Overlap::kNone;
  bool fold = true;
};

// Generates the case's step, then searches it with `method` in `resources` on `jobs` threads;
// counters: evaluations, simulations, the search's and the whole run's time, the steps.
void tune(benchmark::State& state, TuneCase c, search::Method method, search::Resources resources,
          int jobs, Tweak tweak) {
  const topologies::Cluster cluster = topologies::load_cluster(c.cluster, c.nodes);
  const hardware::HardwareProfile profile = hardware::load_profile(c.profile);
  const models::ModelSpec model = models::load_model(c.model);
  models::TrainingConfig cfg;
  cfg.mbs = c.mbs;
  cfg.gbs = c.gbs;
  cfg.seq = c.seq;
  cfg.overlap = c.overlap;
  cfg.fold_dp = c.fold;
  cfg.fold_tp = c.fold;  // as the searches do: only where exact (models::tp_folds_exactly)
  cfg.gpus_alike = topologies::gpus_differ(cluster).empty();
  cfg.gpus_per_node = cluster.gpus_per_node();
  const models::Parallelism par = models::parse_parallelism(c.parallel);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const models::GeneratedStep step =
        models::generate_step(model, par, cfg, profile.gpu.memory_GB.value * 1e9);
    search::Evaluator eval(step.workload, cluster, profile,
                           search::SpaceOptions{search::Grid::kFine, resources});
    search::SearchOptions o;
    o.method = method;
    o.jobs = jobs;
    tweak(o);
    const search::SearchResult r = search::run_search(eval, o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    state.counters["evaluations"] = static_cast<double>(r.evaluations);
    state.counters["simulations"] = static_cast<double>(r.simulations);
    if (method == search::Method::kExhaustive) {
      state.counters["ruled_out"] = static_cast<double>(r.bounded);
    }
    state.counters["classes"] = static_cast<double>(eval.classes().size());
    state.counters["ms_per_eval"] = r.search_ms / static_cast<double>(r.evaluations);
    state.counters["search_ms"] = r.search_ms;
    state.counters["total_ms"] = ms;
    state.counters["step_ms"] = r.step_time.us() / 1e3;
    state.counters["nccl_step_ms"] = r.nccl_step_time.us() / 1e3;
  }
}

// Llama 3 8B FSDP on 16 A40s (2 a40-nvlink nodes), Table 2's FSDP setup.
TuneCase fsdp_case(bool fold) {
  TuneCase c;
  c.nodes = 2;
  c.seq = 4096;
  c.fold = fold;
  return c;
}

// Phi-2 with tp=8 and Domino overlap on one a40-nvlink node (Table 2's TP row, mbs 8, gbs 512):
// the largest Table 2 step per evaluation (its 64 micro-batches of TP all-reduces). Folded (as
// `lagom tune` runs it) one rank stands for the 8; unfolded all 8 are simulated.
TuneCase tp_case(bool fold) {
  TuneCase c;
  c.fold = fold;
  c.model = "phi-2";
  c.parallel = "tp=8";
  c.mbs = 8;
  c.gbs = 512;
  c.overlap = models::Overlap::kDomino;
  return c;
}

// MPT-7B with tp=8, dp=2 and Domino overlap on two a40-nvlink nodes (Table 2's two-node TP row,
// mbs 2, gbs 256): folded, one rank stands for the 16 (the 8 data-parallel all-reduces ride as
// mirrors of rank 0's, splitting each socket's NIC as unfolded).
TuneCase tp_two_node_case() {
  TuneCase c = tp_case(true);
  c.nodes = 2;
  c.model = "mpt-7b";
  c.parallel = "tp=8,dp=2";
  c.mbs = 2;
  c.gbs = 256;
  return c;
}

// `lagom tune --model gpt3-175b --parallel tp=8,pp=8,dp=2 --cluster dgx-h100 --nodes 16 --mbs 1
// --gbs 64 --seq 2048 -j N`: the step folded to one data-parallel replica (64 ranks, 0.65 M ops),
// Lagom in NCCL's space; the whole command's work (generation, evaluator, search).
TuneCase gpt3_case() {
  TuneCase c;
  c.cluster = "dgx-h100";
  c.nodes = 16;
  c.profile = "h100-sxm";
  c.model = "gpt3-175b";
  c.parallel = "tp=8,pp=8,dp=2";
  c.gbs = 64;
  c.seq = 2048;
  return c;
}

}  // namespace

void register_search_benchmarks() {
  for (bool fold : {true, false}) {
    for (int jobs : {1, 2}) {
      benchmark::RegisterBenchmark(
          fmt::format("BM_Tune/phi-2/tp8-domino/a40-nvlink/full/lagom{}/j{}",
                      fold ? "" : "/unfolded", jobs)
              .c_str(),
          tune, tp_case(fold), search::Method::kLagom, search::Resources::kFull, jobs, defaults)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
    }
  }
  // The full-space optimum of the same step (one class of 155,648 grid points), proven by
  // simulating only what the exhaustive search's bounds leave (docs/search.md §4).
  for (int jobs : {1, 2}) {
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/phi-2/tp8-domino/a40-nvlink/full/exhaustive/j{}", jobs).c_str(), tune,
        tp_case(true), search::Method::kExhaustive, search::Resources::kFull, jobs, defaults)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  for (int jobs : {1, 2}) {
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/mpt-7b/tp8dp2-domino/a40-nvlink-x2/full/lagom/j{}", jobs).c_str(),
        tune, tp_two_node_case(), search::Method::kLagom, search::Resources::kFull, jobs, defaults)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  if (const char* env = std::getenv("LAGOM_BENCH_SCALE"); env != nullptr && env[0] == '1') {
    for (int jobs : {1, 2}) {
      benchmark::RegisterBenchmark(
          fmt::format("BM_Tune/gpt3-175b/128gpu/folded/lagom/j{}", jobs).c_str(), tune, gpt3_case(),
          search::Method::kLagom, search::Resources::kNccl, jobs, defaults)
          ->Unit(benchmark::kSecond)
          ->Iterations(1);
    }
  }
  for (const auto& [space, resources] :
       {std::pair{"nccl", search::Resources::kNccl}, std::pair{"full", search::Resources::kFull}}) {
    for (const auto& [name, m] :
         {std::pair{"nccl", search::Method::kNccl}, std::pair{"autoccl", search::Method::kAutoCcl},
          std::pair{"lagom", search::Method::kLagom},
          std::pair{"random", search::Method::kRandom}}) {
      benchmark::RegisterBenchmark(
          fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/{}", space, name).c_str(), tune,
          fsdp_case(true), m, resources, 1, defaults)
          ->Unit(benchmark::kMillisecond);
    }
    // The ablations of Lagom's walk (docs/search.md §7).
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/lagom-lockstep", space).c_str(),
        tune, fsdp_case(true), search::Method::kLagom, resources, 1,
        [](search::SearchOptions& o) { o.lagom_walk = search::LagomWalk::kLockstep; })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/lagom-roundrobin", space).c_str(),
        tune, fsdp_case(true), search::Method::kLagom, resources, 1,
        [](search::SearchOptions& o) { o.lagom_order = search::LagomOrder::kRoundRobin; })
        ->Unit(benchmark::kMillisecond);
    // Without folding: all 16 ranks simulated (what tuning costs on a step that cannot fold).
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/lagom/unfolded", space).c_str(),
        tune, fsdp_case(false), search::Method::kLagom, resources, 1, defaults)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace lagom::bench
