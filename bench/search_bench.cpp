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

void tune_step(benchmark::State& state, search::Method method, bool fold,
               search::Resources resources, Tweak tweak) {
  const topologies::Cluster cluster = topologies::load_cluster("a40-nvlink", 2);
  const hardware::HardwareProfile profile = hardware::load_profile("a40");
  const models::ModelSpec model = models::load_model("llama3-8b");
  models::TrainingConfig cfg;
  cfg.mbs = 1;
  cfg.gbs = 32;
  cfg.seq = 4096;
  cfg.fold_dp = fold;
  const models::Parallelism par = models::parse_parallelism("fsdp=16");
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const models::GeneratedStep step =
        models::generate_step(model, par, cfg, profile.gpu.memory_GB.value * 1e9);
    search::Evaluator eval(step.workload, cluster, profile,
                           search::SpaceOptions{search::Grid::kFine, resources});
    search::SearchOptions o;
    o.method = method;
    tweak(o);
    const search::SearchResult r = search::run_search(eval, o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    state.counters["evaluations"] = static_cast<double>(r.evaluations);
    state.counters["simulations"] = static_cast<double>(r.simulations);
    state.counters["classes"] = static_cast<double>(eval.classes().size());
    state.counters["ms_per_eval"] = r.search_ms / static_cast<double>(r.evaluations);
    state.counters["total_ms"] = ms;
    state.counters["step_ms"] = r.step_time.us() / 1e3;
    state.counters["nccl_step_ms"] = r.nccl_step_time.us() / 1e3;
  }
}

// Phi-2 with tp=8 and Domino overlap on one a40-nvlink node (Table 2's TP row, mbs 8, gbs 512):
// the largest Table 2 step per evaluation (its 64 micro-batches of TP all-reduces).
void tune_tp_step(benchmark::State& state, int jobs) {
  const topologies::Cluster cluster = topologies::load_cluster("a40-nvlink", 1);
  const hardware::HardwareProfile profile = hardware::load_profile("a40");
  const models::ModelSpec model = models::load_model("phi-2");
  models::TrainingConfig cfg;
  cfg.mbs = 8;
  cfg.gbs = 512;
  cfg.overlap = models::Overlap::kDomino;
  cfg.fold_dp = true;
  const models::Parallelism par = models::parse_parallelism("tp=8");
  for (auto _ : state) {
    const models::GeneratedStep step =
        models::generate_step(model, par, cfg, profile.gpu.memory_GB.value * 1e9);
    search::Evaluator eval(step.workload, cluster, profile,
                           search::SpaceOptions{search::Grid::kFine, search::Resources::kFull});
    search::SearchOptions o;
    o.jobs = jobs;
    const search::SearchResult r = search::run_search(eval, o);
    state.counters["evaluations"] = static_cast<double>(r.evaluations);
    state.counters["simulations"] = static_cast<double>(r.simulations);
    state.counters["ms_per_eval"] = r.search_ms / static_cast<double>(r.evaluations);
    state.counters["step_ms"] = r.step_time.us() / 1e3;
    state.counters["nccl_step_ms"] = r.nccl_step_time.us() / 1e3;
  }
}

// `lagom tune --model gpt3-175b --parallel tp=8,pp=8,dp=2 --cluster dgx-h100 --nodes 16 --mbs 1
// --gbs 64 --seq 2048 -j N`: the step folded to one data-parallel replica (64 ranks, 0.65 M ops),
// Lagom in NCCL's space; the whole command's work (generation, evaluator, search).
void tune_gpt3(benchmark::State& state, int jobs) {
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 16);
  const hardware::HardwareProfile profile = hardware::load_profile("h100-sxm");
  const models::ModelSpec model = models::load_model("gpt3-175b");
  models::TrainingConfig cfg;
  cfg.mbs = 1;
  cfg.gbs = 64;
  cfg.seq = 2048;
  cfg.fold_dp = true;
  const models::Parallelism par = models::parse_parallelism("tp=8,pp=8,dp=2");
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const models::GeneratedStep step =
        models::generate_step(model, par, cfg, profile.gpu.memory_GB.value * 1e9);
    search::Evaluator eval(step.workload, cluster, profile, search::SpaceOptions{});
    search::SearchOptions o;
    o.jobs = jobs;
    const search::SearchResult r = search::run_search(eval, o);
    state.counters["total_s"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.counters["search_s"] = r.search_ms / 1e3;
    state.counters["evaluations"] = static_cast<double>(r.evaluations);
    state.counters["simulations"] = static_cast<double>(r.simulations);
    state.counters["step_s"] = r.step_time.us() / 1e6;
  }
}

}  // namespace

void register_search_benchmarks() {
  for (int jobs : {1, 2}) {
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/phi-2/tp8-domino/a40-nvlink/full/lagom/j{}", jobs).c_str(),
        tune_tp_step, jobs)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  if (const char* env = std::getenv("LAGOM_BENCH_SCALE"); env != nullptr && env[0] == '1') {
    for (int jobs : {1, 2}) {
      benchmark::RegisterBenchmark(
          fmt::format("BM_Tune/gpt3-175b/128gpu/folded/lagom/j{}", jobs).c_str(), tune_gpt3, jobs)
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
          fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/{}", space, name).c_str(),
          tune_step, m, true, resources, defaults)
          ->Unit(benchmark::kMillisecond);
    }
    // The ablations of Lagom's walk (docs/search.md §7).
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/lagom-lockstep", space).c_str(),
        tune_step, search::Method::kLagom, true, resources,
        [](search::SearchOptions& o) { o.lagom_walk = search::LagomWalk::kLockstep; })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/lagom-roundrobin", space).c_str(),
        tune_step, search::Method::kLagom, true, resources,
        [](search::SearchOptions& o) { o.lagom_order = search::LagomOrder::kRoundRobin; })
        ->Unit(benchmark::kMillisecond);
    // Without folding: all 16 ranks simulated (what tuning costs on a step that cannot fold).
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/lagom/unfolded", space).c_str(),
        tune_step, search::Method::kLagom, false, resources, defaults)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace lagom::bench
