// Tuning a whole training step with the simulator as the oracle (issue: search): Llama 3 8B
// FSDP on 16 A40s (2 a40-nvlink nodes), the paper's Table 2 setup, with every method. The
// issue's target is Lagom under 2 s for the whole step. Counters: evaluations (simulations),
// the step under the plan and NCCL's, and ms per evaluation.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
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

void tune_step(benchmark::State& state, search::Method method, bool fold,
               search::Resources resources) {
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
    const search::SearchResult r = search::run_search(eval, o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    state.counters["evaluations"] = static_cast<double>(r.evaluations);
    state.counters["classes"] = static_cast<double>(eval.classes().size());
    state.counters["ms_per_eval"] = r.search_ms / static_cast<double>(r.evaluations);
    state.counters["total_ms"] = ms;
    state.counters["step_ms"] = r.step_time.us() / 1e3;
    state.counters["nccl_step_ms"] = r.nccl_step_time.us() / 1e3;
  }
}

}  // namespace

void register_search_benchmarks() {
  for (const auto& [space, resources] :
       {std::pair{"nccl", search::Resources::kNccl}, std::pair{"full", search::Resources::kFull}}) {
    for (const auto& [name, m] :
         {std::pair{"nccl", search::Method::kNccl}, std::pair{"autoccl", search::Method::kAutoCcl},
          std::pair{"lagom", search::Method::kLagom},
          std::pair{"random", search::Method::kRandom}}) {
      benchmark::RegisterBenchmark(
          fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/{}", space, name).c_str(),
          tune_step, m, true, resources)
          ->Unit(benchmark::kMillisecond);
    }
    // Without folding: all 16 ranks simulated (what tuning costs on a step that cannot fold).
    benchmark::RegisterBenchmark(
        fmt::format("BM_Tune/llama3-8b/fsdp16/a40-nvlink-x2/{}/lagom/unfolded", space).c_str(),
        tune_step, search::Method::kLagom, false, resources)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace lagom::bench
